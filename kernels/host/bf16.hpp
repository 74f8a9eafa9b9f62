// bf16 on the host: conversions with round-to-nearest-even, as the GPU's __float2bfloat16 does, so
// CPU references see the same rounding as the kernels they check.
#pragma once

#include <cstdint>
#include <cstring>

namespace commbound::kernels {

using bf16_bits = std::uint16_t;

inline bf16_bits to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return static_cast<bf16_bits>((u >> 16) | 0x40);  // NaN
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16_bits>((u + rounding) >> 16);
}

inline float from_bf16(bf16_bits b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace commbound::kernels
