// The failure model against its classic limits and against its own Monte Carlo: Young's interval
// where the checkpoint is short against the time between failures, Daly's closer still, the
// closed form inside the Monte Carlo's standard error, and the Llama 3 census's rates by hand.
#include "sim/scenario/train_plan.hpp"
#include "sim/train/failure_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace commbound::sim {
namespace {

// The interval that minimises the expected wall time per second of work, by golden-section
// search over [lo, hi] (the function is unimodal there): found numerically, not from a formula.
double argmin_interval_s(const FailureProcess& p, double lo, double hi) {
  const double work_s = 1e12;  // many segments: the per-segment cost dominates, the remainder vanishes
  auto cost = [&](double tau) { return expected_wall_s(p, std::floor(work_s / tau) * tau, tau) / (std::floor(work_s / tau) * tau); };
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi;
  for (int i = 0; i < 200; ++i) {
    const double c = b - g * (b - a), d = a + g * (b - a);
    if (cost(c) < cost(d)) {
      b = d;
    } else {
      a = c;
    }
  }
  return (a + b) / 2;
}

// delta / M = 1e-4 (a 1 s checkpoint, failures every 10,000 s): Young's sqrt(2 delta M) = 141.4 s is
// the optimum to first order in delta / M; Daly's adds the next orders and lands closer.
TEST(FailureModel, YoungAndDalyGiveTheOptimumWhereCheckpointsAreShort) {
  const FailureProcess p{.mtbf_s = 1e4, .checkpoint_s = 1, .restart_s = 0};
  EXPECT_NEAR(young_interval_s(p), std::sqrt(2.0 * 1 * 1e4), 1e-9);
  const double best_s = argmin_interval_s(p, 1, 5000);
  EXPECT_NEAR(young_interval_s(p) / best_s, 1, 0.01);
  EXPECT_LT(std::abs(daly_interval_s(p) - best_s), std::abs(young_interval_s(p) - best_s));
  EXPECT_NEAR(daly_interval_s(p) / best_s, 1, 0.002);
}

// With no failures a run is its work plus one checkpoint per interval (the last, shorter, too):
// 10 h of work every 1 h with a 60 s checkpoint is 10 h + 10 minutes.
TEST(FailureModel, WithoutFailuresARunIsItsWorkAndItsCheckpoints) {
  const FailureProcess p{.mtbf_s = std::numeric_limits<double>::infinity(), .checkpoint_s = 60, .restart_s = 600};
  EXPECT_DOUBLE_EQ(expected_wall_s(p, 36000, 3600), 36000 + 10 * 60);
  EXPECT_DOUBLE_EQ(expected_wall_s(p, 37800, 3600), 37800 + 11 * 60);
  const MonteCarlo mc = simulate_run(p, 36000, 3600, 10, 1);
  EXPECT_DOUBLE_EQ(mc.mean_wall_s, 36000 + 10 * 60);
  EXPECT_EQ(mc.mean_failures, 0);
}

// The closed form is the expectation of the process the Monte Carlo draws: it lies within a few
// of its standard errors, at short and long checkpoints, restarts that fail too, and a remainder.
TEST(FailureModel, TheMonteCarloAgreesWithTheClosedForm) {
  struct Case {
    FailureProcess p;
    double work_s, interval_s;
  };
  const Case cases[] = {
      {{.mtbf_s = 3 * 3600.0, .checkpoint_s = 60, .restart_s = 600}, 30 * 86400.0, 1800},
      {{.mtbf_s = 1000, .checkpoint_s = 20, .restart_s = 300}, 1e5, 250},  // restarts fail often
      {{.mtbf_s = 500, .checkpoint_s = 100, .restart_s = 50}, 12345, 700},  // segments longer than M
  };
  for (const Case& c : cases) {
    const double closed_s = expected_wall_s(c.p, c.work_s, c.interval_s);
    const MonteCarlo mc = simulate_run(c.p, c.work_s, c.interval_s, 4000, 7);
    std::printf("M %.0f s, delta %.0f s, R %.0f s: closed form %.1f s, Monte Carlo %.1f +- %.1f s\n", c.p.mtbf_s,
                c.p.checkpoint_s, c.p.restart_s, closed_s, mc.mean_wall_s, mc.standard_error_s);
    EXPECT_GT(mc.standard_error_s, 0);
    EXPECT_NEAR(mc.mean_wall_s, closed_s, 4 * mc.standard_error_s);
    EXPECT_GT(closed_s, c.work_s);
  }
}

// The Llama 3 run's census: 466 interruptions in 54 x 24 = 1296 hours on 16,384 GPUs in 2,048
// nodes; the default rates put them back: 1296 / 466 = 2.781 hours between failures.
TEST(FailureModel, DefaultRatesGiveBackTheLlama3Census) {
  const double per_hour = 16384 * kLlama3GpuFailuresPerGpuHour + 2048 * kLlama3NodeFailuresPerNodeHour;
  EXPECT_NEAR(1 / per_hour, 1296.0 / 466, 1e-9);
  EXPECT_NEAR(16384 * kLlama3GpuFailuresPerGpuHour * 1296, 148 + 72 + 19 + 17, 1e-9);
}

}  // namespace
}  // namespace commbound::sim
