// Degraded windows against phases and times worked by hand.
#include "sim/train/degraded_windows.hpp"

#include "core/units.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace commbound::sim {
namespace {

DegradedPart part(double from_hour, double hours) {
  DegradedPart p;
  p.speed_fraction = 0.5;
  p.from_hour = from_hour;
  p.hours = hours;
  return p;
}

// Part 0 slow from hour 10 for 24 h, part 1 from hour 20 to the end, part 2 always: phases
// [0, 10) {2}, [10, 20) {0, 2}, [20, 34) {0, 1, 2}, [34, end) {1, 2}.
TEST(DegradedPhases, FollowTheWindowsEdges) {
  const std::vector<DegradedPhase> phases = degraded_phases({part(10, 24), part(20, 0), part(0, 0)});
  ASSERT_EQ(phases.size(), 4u);
  const std::vector<double> from_h = {0, 10, 20, 34};
  const std::vector<std::vector<std::size_t>> parts = {{2}, {0, 2}, {0, 1, 2}, {1, 2}};
  for (std::size_t k = 0; k < phases.size(); ++k) {
    EXPECT_EQ(phases[k].from_s, from_h[k] * kSecondsPerHour) << k;
    EXPECT_EQ(phases[k].parts, parts[k]) << k;
  }
}

// No part: one phase from 0, nothing slow. Part 1's window starts where part 0's ends: [0, 5)
// nothing, [5, 10) {0}, [10, 20) {1}, [20, end) nothing.
TEST(DegradedPhases, NoPartsAndWindowsEndToEnd) {
  const std::vector<DegradedPhase> none = degraded_phases({});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].from_s, 0);
  EXPECT_TRUE(none[0].parts.empty());
  const std::vector<DegradedPhase> phases = degraded_phases({part(5, 5), part(10, 10)});
  ASSERT_EQ(phases.size(), 4u);
  EXPECT_TRUE(phases[0].parts.empty());
  EXPECT_EQ(phases[1].parts, std::vector<std::size_t>{0});
  EXPECT_EQ(phases[2].parts, std::vector<std::size_t>{1});
  EXPECT_TRUE(phases[3].parts.empty());
  EXPECT_EQ(phases[3].from_s, 20 * kSecondsPerHour);
}

// 1 s iterations at 600 W, 2 s at 700 W from t = 100 s to 300 s, then 1 s again. 250 iterations:
// 100 in [0, 100), 100 in [100, 300), 50 more: ideal 350 s; energy per GPU 100 x 600 + 200 x 700
// + 50 x 600 = 230,000 J, a mean of 657.142857 W. 150 iterations end inside the window: 100 +
// 50 x 2 = 200 s. 50 end before it: 50 s at 600 W. Mean iterations: 350 / 250 = 1.4 s, and 1 s.
TEST(PhasedRun, EachPhaseTrainsAtItsOwnPace) {
  const std::vector<PhasePace> phases = {{0, 1, 600}, {100, 2, 700}, {300, 1, 600}};
  const PhasedRun whole = phased_run(phases, 250);
  EXPECT_DOUBLE_EQ(whole.ideal_s, 350);
  EXPECT_DOUBLE_EQ(whole.mean_power_w_per_gpu, 230000.0 / 350);
  EXPECT_DOUBLE_EQ(whole.mean_iteration_s, 350.0 / 250);
  EXPECT_DOUBLE_EQ(phased_run(phases, 150).ideal_s, 200);
  const PhasedRun before = phased_run(phases, 50);
  EXPECT_DOUBLE_EQ(before.ideal_s, 50);
  EXPECT_DOUBLE_EQ(before.mean_power_w_per_gpu, 600);
  EXPECT_EQ(before.mean_iteration_s, 1);  // its first phase's own, exactly
}

}  // namespace
}  // namespace commbound::sim
