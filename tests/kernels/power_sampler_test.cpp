// summarize() on hand-worked sample sets: the power and clock statistics of the [power] table.
#include "kernels/host/power_sampler.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace commbound::kernels {
namespace {

struct SummaryCase {
  const char* name;
  std::vector<PowerSample> samples;
  PowerSummary want;
};

// Three samples 100, 200, 300 W at 1000, 1500, 2000 MHz: mean 200 W and 1500 MHz, range 100..300 W.
// A lone sample is its own mean, min and max; an empty run is all zeros.
const std::vector<SummaryCase>& summary_cases() {
  static const std::vector<SummaryCase> cases = {
      {"three", {{0.00, 100, 1000}, {0.02, 200, 1500}, {0.04, 300, 2000}}, {3, 200, 100, 300, 1500}},
      {"unordered", {{0.00, 300, 1980}, {0.02, 90, 1020}, {0.04, 150, 1500}, {0.06, 60, 1500}}, {4, 150, 60, 300, 1500}},
      {"single", {{0.50, 70.5, 345}}, {1, 70.5, 70.5, 70.5, 345}},
      {"empty", {}, {0, 0, 0, 0, 0}},
  };
  return cases;
}

TEST(PowerSummary, MeanMinMaxOfHandWorkedSamples) {
  for (const SummaryCase& c : summary_cases()) {
    SCOPED_TRACE(c.name);
    const PowerSummary got = summarize(c.samples);
    EXPECT_EQ(got.samples, c.want.samples);
    EXPECT_DOUBLE_EQ(got.mean_power_w, c.want.mean_power_w);
    EXPECT_DOUBLE_EQ(got.min_power_w, c.want.min_power_w);
    EXPECT_DOUBLE_EQ(got.max_power_w, c.want.max_power_w);
    EXPECT_DOUBLE_EQ(got.mean_sm_clock_mhz, c.want.mean_sm_clock_mhz);
  }
}

}  // namespace
}  // namespace commbound::kernels
