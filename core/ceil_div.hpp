// Integer division rounded up: how many pieces of size b cover a (tiles over a matrix, leaves over
// a fabric's endpoints). One definition for every room.
#pragma once

#include <concepts>
#include <type_traits>

namespace commbound {

// ceil(a / b) for a >= 0 and b > 0, in the operands' common integer type.
template <std::integral A, std::integral B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
  return (static_cast<std::common_type_t<A, B>>(a) + b - 1) / b;
}

}  // namespace commbound
