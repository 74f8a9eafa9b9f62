// parse_number<T>: the whole of a text read as a number, or an error value saying why not.
// std::stoi / stol / stod throw on text that is not a number (an exception main() does not
// expect), quietly stop at the first character they cannot read ("8abc" reads as 8) and call a
// number too large for the type the same "out_of_range" whatever it was. Every number commbound
// reads from a log, a table or a flag goes through here instead: std::from_chars, no locale, no
// exception, and the reason phrased for the user.
#pragma once

#include "core/expected.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace commbound {

// The whole of `text` as a T: an integer type (decimal digits, '-' in front for a signed type) or
// double (decimal or scientific notation, finite). No leading spaces, '+' or trailing characters.
// The error's message follows "key = value: ": "not an integer", "not a number", or "out of range
// (from MIN to MAX)" for an integer the type cannot hold, "out of range of a double" for a number
// beyond about 1.8e308 in magnitude.
template <class T>
Expected<T> parse_number(std::string_view text) {
  static_assert(std::is_integral_v<T> || std::is_same_v<T, double>, "parse_number reads integers and doubles");
  T value{};
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if constexpr (std::is_integral_v<T>) {
    if (ec == std::errc::result_out_of_range && stop == end) {
      return Error{"out of range (from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
                   std::to_string(std::numeric_limits<T>::max()) + ")"};
    }
    if (ec != std::errc() || stop != end || text.empty()) return Error{"not an integer"};
  } else {
    if (ec == std::errc::result_out_of_range && stop == end) return Error{"out of range of a double"};
    if (ec != std::errc() || stop != end || text.empty() || !std::isfinite(value)) return Error{"not a number"};
  }
  return value;
}

}  // namespace commbound
