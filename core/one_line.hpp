// one_line: an Error kept to one line. Messages quote what the user wrote (a TOML string, a
// trace's kernel name, a line of a log), and that text may hold a newline or a terminal escape; a
// reader's public functions pass their errors through here, so that every error is the one line
// its contract says (expected.hpp), whatever the file held.
#pragma once

#include "core/expected.hpp"

#include <string>
#include <utility>

namespace commbound {

// Whether `c` is a control character (below 0x20, or DEL): what one_line escapes, and what a text
// may not hold where it is written into another program's input (a gnuplot script, a job script).
inline bool is_control_character(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// Whether `text` holds a control character.
inline bool has_control_character(const std::string& text) {
  for (const char c : text) {
    if (is_control_character(c)) return true;
  }
  return false;
}

// `error` with the control characters of its message escaped as C does: a newline becomes the two
// characters \n, a carriage return \r, a tab \t, ESC \x1b (any other as \xNN).
inline Error one_line(Error error) {
  std::string out;
  for (const char c : error.message) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (is_control_character(c)) {
      static constexpr char kDigits[] = "0123456789abcdef";
      out += std::string("\\x") + kDigits[u >> 4] + kDigits[u & 0xf];
    } else {
      out += c;
    }
  }
  error.message = std::move(out);
  return error;
}

}  // namespace commbound
