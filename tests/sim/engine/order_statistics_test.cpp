// The wait for the slowest rank: the order statistic against closed forms and against a Monte
// Carlo over every rank (the oracle for the representative-rank engine), 8 to 4096 ranks.
#include "sim/engine/order_statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace commbound::sim {
namespace {

// Closed forms: E[max of 2] = 1/sqrt(pi), E[max of 3] = 3/(2 sqrt(pi)); one rank waits for nobody.
TEST(OrderStatistics, ExpectedMaximumMatchesItsClosedForms) {
  const double pi = std::acos(-1.0);
  EXPECT_EQ(expected_max_standard_normal(1), 0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1 / std::sqrt(pi), 1e-9);
  EXPECT_NEAR(expected_max_standard_normal(3), 3 / (2 * std::sqrt(pi)), 1e-9);
  // Harter (1961), Expected values of normal order statistics, Biometrika 48: n = 10, 100.
  EXPECT_NEAR(expected_max_standard_normal(10), 1.53875, 1e-5);
  EXPECT_NEAR(expected_max_standard_normal(100), 2.50759, 1e-5);
}

// The wait scales with the members' combined deviation: sqrt(sum sigma_i^2) = 5 us for 3 and 4 us.
TEST(OrderStatistics, WaitIsTheCombinedDeviationTimesTheOrderStatistic) {
  EXPECT_NEAR(expected_wait_s({3e-6, 4e-6}, 64), 5e-6 * expected_max_standard_normal(64), 1e-15);
  EXPECT_EQ(expected_wait_s({3e-6, 4e-6}, 1), 0);
}

// The oracle: sample every rank's every op deviation (seeded, so the test is deterministic) and
// take the mean of the latest rank; the order statistic must agree within 2%. Trials are chosen so
// that the Monte Carlo's own standard error stays below 0.5% (the latest of n has a standard
// deviation of at most 0.6 of the combined deviation, the mean at least 1.4 of it from n = 8 on).
class OrderStatisticOracle : public ::testing::TestWithParam<int> {};

TEST_P(OrderStatisticOracle, EqualsMonteCarloOverEveryRank) {
  const int ranks = GetParam();
  // A backward layer's ops as the H100 table prices them, with their p10..p90 spreads: seconds.
  const std::vector<double> sigmas_s = {2.1e-6, 0.4e-6, 5.3e-6, 1.2e-6, 3.3e-6, 0.8e-6, 2.6e-6, 0.2e-6};
  const int trials = std::max(256, (1 << 22) / (ranks * static_cast<int>(sigmas_s.size())));
  const double order_statistic = expected_wait_s(sigmas_s, ranks);
  const double sampled = monte_carlo_wait_s(sigmas_s, ranks, trials, 20261123);
  std::printf("%d ranks: order statistic %.4f us, Monte Carlo %.4f us (%d trials)\n", ranks, order_statistic * 1e6,
              sampled * 1e6, trials);
  EXPECT_NEAR(order_statistic, sampled, 0.02 * sampled);
}

INSTANTIATE_TEST_SUITE_P(Ranks, OrderStatisticOracle, ::testing::Values(8, 16, 64, 256, 1024, 4096));

}  // namespace
}  // namespace commbound::sim
