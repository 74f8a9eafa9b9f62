// LinkSpread: node rates drawn from a pairwise sweep, and the expected slowest of M nodes.
#include "network/link_spread.hpp"
#include "tests/network/test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

namespace commbound::network {
namespace {

// Times 1, 2, 4 s: median 2, so the factors are 2/4, 2/2, 2/1, sorted.
TEST(LinkSpread, PairFactorsAreMedianOverTime) {
  EXPECT_EQ(pair_factors_from_times({4.0, 1.0, 2.0}), (std::vector<double>{0.5, 1.0, 2.0}));
}

// A pair runs at its slower node, and node factors are drawn so that the smaller of two is
// distributed as the pairs are: the expected slowest of 2 nodes is the pairs' mean, exactly.
TEST(LinkSpread, TwoNodesAreOnePair) {
  const LinkSpread s{"t", {0.5, 0.9, 1.0, 1.0, 1.05}};
  const double mean = std::accumulate(s.pair_factors.begin(), s.pair_factors.end(), 0.0) / 5;
  EXPECT_NEAR(s.expected_min_factor(2), mean, 1e-12);
  EXPECT_NEAR(s.expected_min_factor(1 << 20), 0.5, 1e-6);  // enough nodes always hold the slowest
}

// The closed form against a Monte Carlo of the draws themselves, on the shipped sweep: the slowest
// of M nodes over 20000 groups of M consecutive node indices, for M = 1, 8 and 64.
TEST(LinkSpread, ExpectedSlowestMatchesItsDraws) {
  auto spread = testing::shipped_presets().link_spread("xxrjun-cluster00");
  ASSERT_TRUE(spread) << spread.error().message;
  EXPECT_EQ(spread->pair_factors.size(), 393u);
  for (long m : {1L, 8L, 64L}) {
    constexpr int kGroups = 20000;
    double sum = 0;
    for (int g = 0; g < kGroups; ++g) {
      double slowest = 1e9;
      for (long i = 0; i < m; ++i) slowest = std::min(slowest, spread->nic_factor(g * m + i, 7));
      sum += slowest;
    }
    EXPECT_NEAR(sum / kGroups, spread->expected_min_factor(m), 0.01) << m << " nodes";
  }
  // And the draws are the sweep's own values, fixed by the seed.
  const double f = spread->nic_factor(3, 1);
  EXPECT_TRUE(std::binary_search(spread->pair_factors.begin(), spread->pair_factors.end(), f));
  EXPECT_EQ(spread->nic_factor(3, 1), f);
}

// A spread file names its line and value where a time is not a positive number.
TEST(LinkSpread, ABadLineIsOneErrorNamingIt) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "spread_calibration";
  std::filesystem::create_directories(dir / "fabric" / "spread");
  std::ofstream(dir / "fabric" / "spread" / "bad.txt") << "# a comment\n2400\n-3\n";
  auto bad = sim::Presets(dir).link_spread("bad");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.txt:3: \"-3\": a pair's time in us, a positive number"), std::string::npos)
      << bad.error().message;
  auto missing = sim::Presets(dir).link_spread("nope");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no link spread named \"nope\" (have: bad)"), std::string::npos)
      << missing.error().message;
}

}  // namespace
}  // namespace commbound::network
