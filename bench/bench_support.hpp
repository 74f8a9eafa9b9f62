// Helpers the GPU benchmarks share: errors are printed where a benchmark meets them, and a
// benchmark line is the median of kernels/device/timing.hpp's default runs (3 warm-ups, 20 timed).
#pragma once

#include "kernels/device/timing.hpp"
#include "core/expected.hpp"

#include <cstdio>
#include <functional>
#include <initializer_list>

namespace commbound::bench {

// True when every status is Ok; otherwise prints the first error.
inline bool all_ok(std::initializer_list<Status> statuses) {
  for (const Status& s : statuses) {
    if (!s) {
      std::printf("%s\n", s.error().message.c_str());
      return false;
    }
  }
  return true;
}

// Median milliseconds of `launch` (on the default stream), or a negative value (error printed).
inline double median_millis(const std::function<Status()>& launch) {
  auto t = kernels::time_kernel([&](int) { return launch(); }, kernels::TimingOptions{});
  if (!t) {
    std::printf("%s\n", t.error().message.c_str());
    return -1;
  }
  return t->p50_ms;
}

}  // namespace commbound::bench
