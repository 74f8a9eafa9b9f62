// in_child: runs a computation in a forked child process and returns its result (over the project's
// one run_in_child). SimGrid allows one engine (so one Platform) per process: a test that compares
// two platforms runs each in a child.
#pragma once

#include "core/child_process.hpp"
#include "core/number_text.hpp"

#include <cstdio>
#include <functional>
#include <string>

namespace commbound::testing {

// `f()` evaluated in a child process; -1 when the child failed to report (or reported no finite number).
inline double in_child(const std::function<double()>& f) {
  const auto text = run_in_child([&]() -> Expected<std::string> {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", f());  // round-trips a double exactly
    return std::string(buf);
  });
  if (!text) return -1;
  const auto value = parse_number<double>(*text);
  return value ? *value : -1;
}

}  // namespace commbound::testing
