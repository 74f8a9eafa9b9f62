// splitmix64: SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014; the constants of its reference code), a well-mixed 64-bit value of a
// 64-bit input. Where a draw must depend on its inputs alone (an ECMP hash, a seeded layer's
// routing, a node's rate), not on the order things were drawn in.
#pragma once

#include <cstdint>

namespace commbound {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace commbound
