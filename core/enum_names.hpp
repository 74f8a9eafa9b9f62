// parse_named: the enumerator whose name (its to_string, found by argument-dependent lookup) is
// the given text: the one loop behind every parse_* of an enum that names its values. Host-only,
// C++17 (kernels/ includes the headers that use it).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace commbound {

// The value of `values` named `name`; nullopt for any other text.
template <class E>
std::optional<E> parse_named(std::string_view name, std::initializer_list<E> values) {
  for (E e : values) {
    if (name == to_string(e)) return e;
  }
  return std::nullopt;
}

// The same, ignoring ASCII case (command-line spellings: "ll128", "RING"), over any range of values.
template <class Values>
auto parse_named_any_case(std::string_view name, const Values& values) -> std::optional<std::decay_t<decltype(*std::begin(values))>> {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (auto e : values) {
    const std::string_view n = to_string(e);
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [&](char a, char b) {
          return lower(a) == lower(b);
        })) {
      return e;
    }
  }
  return std::nullopt;
}
template <class E>
std::optional<E> parse_named_any_case(std::string_view name, std::initializer_list<E> values) {
  return parse_named_any_case<std::initializer_list<E>>(name, values);
}

}  // namespace commbound
