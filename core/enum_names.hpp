// parse_named: the enumerator whose name (its to_string, found by argument-dependent lookup) is
// the given text: the one loop behind every parse_* of an enum that names its values. Host-only,
// C++17 (kernels/ includes the headers that use it).
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>

namespace commbound {

// The value of `values` named `name`; nullopt for any other text.
template <class E>
std::optional<E> parse_named(std::string_view name, std::initializer_list<E> values) {
  for (E e : values) {
    if (name == to_string(e)) return e;
  }
  return std::nullopt;
}

}  // namespace commbound
