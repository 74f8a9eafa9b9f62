// MoE routing: the expected tokens per expert and rank against hand-worked numbers, the busiest
// rank's order statistic against closed forms and against a Monte Carlo over whole-layer draws
// (8 to 1024 EP ranks), capacity drops, determinism, and the histogram reader's errors.
#include "sim/workload/moe_routing.hpp"
#include "sim/workload/group_limited_routing.hpp"

#include "sim/engine/order_statistics.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace commbound::sim::moe {
namespace {

const double kPi = std::acos(-1.0);

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// E = 64 experts, top-2 or top-8, 8 EP ranks of 4096 tokens: 32768 tokens routed 8 ways make
// n = 262144 assignments, 1/8 of them to each rank, so each rank's mean is 4096 x 8 = 32768 exactly.
// Its Poisson standard deviation is sqrt(32768) = 181.019 (the multinomial's own,
// sqrt(n p (1 - p)) = sqrt(28672) = 169.33, times sqrt(8/7) for the fixed total), and the busiest of
// 8 lies E[max of 8 standard normals] = 1.42360 (Harter 1961) of those above: 32768 + 257.70.
TEST(MoeRouting, UniformRankLoadIsTokensTimesTopKAndTheBusiestIsTheOrderStatistic) {
  const Routing uniform;
  const LayerShape shape{64, 8, 8, 4096};
  const LayerRouting r = route_layer(uniform, shape, 0);
  ASSERT_EQ(r.rank_tokens_mean.size(), 8u);
  for (double tokens : r.rank_tokens_mean) EXPECT_DOUBLE_EQ(tokens, 32768);
  for (double tokens : r.expert_tokens_mean) EXPECT_DOUBLE_EQ(tokens, 32768.0 * 8 / 64);
  EXPECT_EQ(r.dropped_fraction, 0);
  for (int from = 0; from < 8; ++from) {
    double row = 0;
    for (int to = 0; to < 8; ++to) row += r.peer_tokens(from, to);
    EXPECT_DOUBLE_EQ(row, 4096.0 * 8);  // every token's 8 assignments leave (or stay on) its rank
  }
  EXPECT_NEAR(r.rank_tokens_stddev[0], 181.019, 1e-3);
  EXPECT_NEAR(r.busiest_rank_tokens, 32768 + 1.42360 * 181.019, 0.05);
  EXPECT_NEAR(r.busiest_rank_tokens - 32768, 1.5219 * std::sqrt(28672.0), 0.05);
  EXPECT_EQ(r.busiest_rank, 0);  // all equal: the lowest index
}

// Equal normals give the Gaussian order statistic (checked against the engine's independent GSL
// integration); Clark (1961) gives the maximum of two unequal normals in closed form:
// E[max] = m1 Phi(a) + m2 Phi(-a) + th phi(a), th = sqrt(s1^2 + s2^2), a = (m1 - m2) / th.
TEST(MoeRouting, ExpectedMaximumOfNormalsMatchesClosedForms) {
  for (int n : {1, 2, 8, 64, 1024}) {
    EXPECT_NEAR(expected_max_of_normals(std::vector<double>(n, 5.0), std::vector<double>(n, 2.0)),
                5 + 2 * expected_max_standard_normal(n), 1e-5)
        << n << " normals";
  }
  EXPECT_NEAR(expected_max_of_normals({0, 0}, {1, 1}), 1 / std::sqrt(kPi), 1e-6);
  const double m1 = 10, m2 = 9, s1 = 1, s2 = 2, th = std::sqrt(s1 * s1 + s2 * s2), a = (m1 - m2) / th;
  const double phi = std::exp(-a * a / 2) / std::sqrt(2 * kPi), cdf = 0.5 * std::erfc(-a / std::sqrt(2.0));
  EXPECT_NEAR(expected_max_of_normals({m1, m2}, {s1, s2}), m1 * cdf + m2 * (1 - cdf) + th * phi, 1e-6);
  EXPECT_EQ(expected_max_of_normals({3, 7, 5}, {0, 0, 0}), 7);     // constants: the largest
  EXPECT_NEAR(expected_max_of_normals({1000, 0}, {1, 1}), 1000, 1e-9);  // one far above: its mean
}

// Zipf(1) over 64 experts on 8 ranks: the rank whose 8 experts have the largest shares is the
// busiest; with one expert per rank (ep = E = 64) it is the rank of the most popular expert, whose
// share is 1 / H_64 (H_64 = 4.74389, the 64th harmonic number). The loads add up to every
// assignment.
TEST(MoeRouting, ZipfBusiestRankHoldsTheMostPopularExperts) {
  Routing zipf;
  zipf.kind = RoutingKind::zipf;
  zipf.zipf_s = 1.0;
  zipf.seed = 42;
  const LayerShape shape{64, 2, 8, 8192};
  const std::vector<double> share = expert_shares(zipf, shape, 5);
  std::vector<double> rank_share(8, 0.0);
  for (std::size_t e = 0; e < share.size(); ++e) rank_share[e / 8] += share[e];
  const auto most = static_cast<int>(std::max_element(rank_share.begin(), rank_share.end()) - rank_share.begin());
  const LayerRouting r = route_layer(zipf, shape, 5);
  EXPECT_EQ(r.busiest_rank, most);
  EXPECT_NEAR(sum(r.rank_tokens_mean), 8 * 8192.0 * 2, 1e-6);
  EXPECT_NEAR(sum(r.expert_tokens_mean), 8 * 8192.0 * 2, 1e-6);
  EXPECT_GT(r.busiest_rank_tokens, r.rank_tokens_mean[static_cast<std::size_t>(most)]);

  const LayerShape one_each{64, 2, 64, 8192};
  const std::vector<double> share64 = expert_shares(zipf, one_each, 5);
  const auto top = static_cast<int>(std::max_element(share64.begin(), share64.end()) - share64.begin());
  EXPECT_NEAR(share64[static_cast<std::size_t>(top)], 1 / 4.74389, 1e-5);
  const LayerRouting r64 = route_layer(zipf, one_each, 5);
  EXPECT_EQ(r64.busiest_rank, top);
  // Its 64 x 8192 tokens pick it with probability 2 / H_64 = 0.42159: 221037 tokens.
  EXPECT_NEAR(r64.rank_tokens_mean[static_cast<std::size_t>(top)], 64 * 8192 * 2 / 4.74389, 1.0);
}

// Water-filling by hand: loads {6, 1, 1, 1, 1}, top-2. Expert 0's share 0.6 would be picked by
// 1.2 of every token; it takes every token (q = 1) and the other 1 pick goes to the four equally.
TEST(MoeRouting, TopKPicksAreCappedAtEveryToken) {
  Routing h;
  h.kind = RoutingKind::histogram;
  h.histogram = {6, 1, 1, 1, 1};
  const std::vector<double> q = expert_pick_probabilities(h, LayerShape{5, 2, 1, 100}, 0);
  const std::vector<double> expected = {1.0, 0.25, 0.25, 0.25, 0.25};
  for (std::size_t e = 0; e < q.size(); ++e) EXPECT_NEAR(q[e], expected[e], 1e-12) << "expert " << e;
  // Zipf(1.2) over 64, top-8: the first share 1 / sum_i i^-1.2 = 0.294 would be 2.35 picks a token.
  Routing zipf;
  zipf.kind = RoutingKind::zipf;
  zipf.zipf_s = 1.2;
  const std::vector<double> qz = expert_pick_probabilities(zipf, LayerShape{64, 8, 8, 4096}, 0);
  EXPECT_NEAR(sum(qz), 8, 1e-12);
  EXPECT_EQ(*std::max_element(qz.begin(), qz.end()), 1.0);
  for (double p : qz) EXPECT_LE(p, 1.0);
}

// With more ranks than experts each expert is replicated: E = 2, ep = 4, top-1, loads {3, 1}.
// Expert 0 takes 3/4 of 4 x 1000 tokens, split over its replicas on ranks 0 and 1 (1500 each);
// expert 1 a quarter, 500 on each of ranks 2 and 3.
TEST(MoeRouting, ReplicatedExpertsSplitTheirTokens) {
  Routing h;
  h.kind = RoutingKind::histogram;
  h.histogram = {3, 1};
  const LayerRouting r = route_layer(h, LayerShape{2, 1, 4, 1000}, 0);
  const std::vector<double> expected_rank = {1500, 1500, 500, 500};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(r.rank_tokens_mean[i], expected_rank[i], 1e-9);
  EXPECT_NEAR(r.expert_tokens_mean[0], 3000, 1e-9);
  EXPECT_NEAR(r.expert_tokens_mean[1], 1000, 1e-9);
  EXPECT_EQ(r.busiest_rank, 0);
}

// Capacity factor 1, uniform: C = ceil(4096 x 8 / 64) = 512 per source rank and expert, the mean
// itself, so a source rank drops E[(X - 512)+] = sd phi(0) = sqrt(512) / sqrt(2 pi) = 9.027 per
// expert: 64 x 9.027 / 32768 = 1.763% of its assignments. Skewed (Zipf 1.2) the top expert is
// picked by every token, 4096 per source rank, and keeps 512: at least 3584 / 32768 = 10.9% drop.
// Dropless drops nothing; a huge factor is dropless.
TEST(MoeRouting, CapacityDropsWhatOverflowsAndOnlyThat) {
  Routing uniform;
  uniform.capacity_factor = 1.0;
  const LayerShape shape{64, 8, 8, 4096};
  const LayerRouting u = route_layer(uniform, shape, 0);
  EXPECT_NEAR(u.dropped_fraction, 64 * std::sqrt(512.0) / std::sqrt(2 * kPi) / 32768, 1e-6);
  // The Monte Carlo of the same multinomial draws, clipped count by count (its marginal's variance
  // is 512 (1 - 1/64), and counts are whole numbers): within 3% of the drop.
  const MonteCarloRouting mc = monte_carlo_route_layer(uniform, shape, 0, 400, 1);
  EXPECT_NEAR(u.dropped_fraction, mc.dropped_fraction, 0.03 * mc.dropped_fraction);

  Routing skew;
  skew.kind = RoutingKind::zipf;
  skew.zipf_s = 1.2;
  skew.capacity_factor = 1.0;
  const LayerRouting s = route_layer(skew, shape, 0);
  EXPECT_GT(s.dropped_fraction, 3584.0 / 32768);
  EXPECT_NEAR(sum(s.rank_tokens_mean), 8 * 32768 * (1 - s.dropped_fraction), 1e-6);
  const MonteCarloRouting smc = monte_carlo_route_layer(skew, shape, 0, 200, 2);
  EXPECT_NEAR(s.dropped_fraction, smc.dropped_fraction, 0.03 * smc.dropped_fraction);

  skew.capacity_factor = 0;
  const LayerRouting dropless = route_layer(skew, shape, 0);
  EXPECT_EQ(dropless.dropped_fraction, 0);
  EXPECT_NEAR(sum(dropless.rank_tokens_mean), 8 * 32768.0, 1e-6);
  skew.capacity_factor = 1e6;
  const LayerRouting huge = route_layer(skew, shape, 0);
  EXPECT_EQ(huge.dropped_fraction, 0);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(huge.rank_tokens_mean[i], dropless.rank_tokens_mean[i]);
  EXPECT_DOUBLE_EQ(huge.busiest_rank_tokens, dropless.busiest_rank_tokens);
}

// Padded to the capacity: 64 experts top-8 on 8 ranks of 4096 tokens, cf 1: C = ceil(4096 x 8 / 64)
// = 512 a slot; each rank's 8 slots take 512 from each of 8 source ranks: 32768 tokens, exactly,
// with no spread, even under a skewed router (which still drops what overflows); each source
// rank sends every other rank 8 x 512 = 4096.
TEST(MoeRouting, PaddingFillsEverySlotToItsCapacity) {
  Routing skew;
  skew.kind = RoutingKind::zipf;
  skew.zipf_s = 1.2;
  skew.capacity_factor = 1.0;
  skew.pad_to_capacity = true;
  const LayerShape shape{64, 8, 8, 4096};
  const LayerRouting padded = route_layer(skew, shape, 0);
  for (std::size_t r = 0; r < 8; ++r) {
    EXPECT_DOUBLE_EQ(padded.rank_tokens_mean[r], 32768.0);
    EXPECT_DOUBLE_EQ(padded.rank_tokens_stddev[r], 0.0);
  }
  EXPECT_DOUBLE_EQ(padded.busiest_rank_tokens, 32768.0);
  EXPECT_DOUBLE_EQ(padded.peer_tokens(0, 3), 4096.0);
  skew.pad_to_capacity = false;
  EXPECT_DOUBLE_EQ(padded.dropped_fraction, route_layer(skew, shape, 0).dropped_fraction);
  skew.pad_to_capacity = true;
  skew.capacity_factor = 0;
  EXPECT_FALSE(check_routing(skew, shape));
}

// The oracle: whole-layer multinomial draws (per rank, exact by the multinomial's aggregation),
// the mean over trials of the busiest rank, against the order statistic. Required: within 2% of
// the busiest rank's tokens; checked much tighter: within 2% of the busiest's excess over its mean
// plus 4 standard errors of the Monte Carlo. Trials 2^20 / ep (one binomial per rank per trial):
// the standard error is then at most 0.6 sd / sqrt(2^20 / 8) = 0.002 sd at 8 ranks and
// 0.4 sd / 32 = 0.012 sd at 1024, against an excess of 1.42 sd and 3.2 sd.
struct OracleCase {
  int ep, experts, top_k;
  RoutingKind kind;
  double zipf_s;
};

class MoeRoutingOracle : public ::testing::TestWithParam<OracleCase> {};

TEST_P(MoeRoutingOracle, BusiestRankEqualsMonteCarlo) {
  const OracleCase c = GetParam();
  Routing routing;
  routing.kind = c.kind;
  routing.zipf_s = c.zipf_s;
  routing.seed = 2024;
  const LayerShape shape{c.experts, c.top_k, c.ep, c.top_k == 2 ? 8192.0 : 4096.0};
  const int layer = 3;
  const LayerRouting r = route_layer(routing, shape, layer);
  const MonteCarloRouting mc = monte_carlo_route_layer(routing, shape, layer, (1 << 20) / c.ep, 7);
  const double mean = r.rank_tokens_mean[static_cast<std::size_t>(r.busiest_rank)];
  const double error = r.busiest_rank_tokens - mc.busiest_rank_tokens;
  const double sd = r.rank_tokens_stddev[static_cast<std::size_t>(r.busiest_rank)];
  std::printf("| %4d | %3d | %d | %-7s %.1f | %10.1f | %10.1f | %10.1f +- %5.1f | %+.4f%% | %5.2f sd | %+.3f sd |\n", c.ep, c.experts,
              c.top_k, to_string(c.kind), c.kind == RoutingKind::zipf ? c.zipf_s : 0.0, mean, r.busiest_rank_tokens,
              mc.busiest_rank_tokens, mc.busiest_rank_tokens_stderr, 100 * error / mc.busiest_rank_tokens, (r.busiest_rank_tokens - mean) / sd,
              error / sd);
  EXPECT_NEAR(r.busiest_rank_tokens, mc.busiest_rank_tokens, 0.02 * mc.busiest_rank_tokens);
  EXPECT_NEAR(r.busiest_rank_tokens, mc.busiest_rank_tokens, 0.02 * (r.busiest_rank_tokens - mean) + 4 * mc.busiest_rank_tokens_stderr);
}

std::vector<OracleCase> oracle_cases() {
  std::vector<OracleCase> cases;
  for (int ep : {8, 64, 256, 1024}) {
    for (int experts : {64, 256}) {
      for (int top_k : {2, 8}) {
        cases.push_back({ep, experts, top_k, RoutingKind::uniform, 0});
        cases.push_back({ep, experts, top_k, RoutingKind::zipf, 1.0});
        cases.push_back({ep, experts, top_k, RoutingKind::zipf, 1.2});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EpExpertsTopKDistribution, MoeRoutingOracle, ::testing::ValuesIn(oracle_cases()));

// The same inputs give the same bits; another layer draws another popularity order.
TEST(MoeRouting, DeterministicAndLayersDiffer) {
  Routing zipf;
  zipf.kind = RoutingKind::zipf;
  zipf.seed = 9;
  const LayerShape shape{256, 8, 64, 4096};
  const LayerRouting a = route_layer(zipf, shape, 11), b = route_layer(zipf, shape, 11);
  EXPECT_EQ(a.expert_tokens_mean, b.expert_tokens_mean);
  EXPECT_EQ(a.rank_tokens_mean, b.rank_tokens_mean);
  EXPECT_EQ(a.rank_tokens_stddev, b.rank_tokens_stddev);
  EXPECT_EQ(a.tokens_to_rank, b.tokens_to_rank);
  EXPECT_EQ(std::memcmp(&a.busiest_rank_tokens, &b.busiest_rank_tokens, sizeof(double)), 0);
  EXPECT_EQ(a.busiest_rank, b.busiest_rank);
  EXPECT_NE(expert_shares(zipf, shape, 11), expert_shares(zipf, shape, 12));
  Routing other_seed = zipf;
  other_seed.seed = 10;
  EXPECT_NE(expert_shares(zipf, shape, 11), expert_shares(other_seed, shape, 11));
  // The order is a permutation: the same shares, rearranged.
  std::vector<double> x = expert_shares(zipf, shape, 11), y = expert_shares(zipf, shape, 12);
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  EXPECT_EQ(x, y);
  const Routing uniform;
  EXPECT_EQ(route_layer(uniform, shape, 1).rank_tokens_mean, route_layer(uniform, shape, 2).rank_tokens_mean);
}

// route_layer runs once per MoE layer; at ep = 1024 and 256 experts it must stay well below the
// engine's cost per layer. Measured here (printed), bounded loosely at 20 ms a call so that a
// quadratic slip (an ep x ep matrix) fails on a shared machine too.
TEST(MoeRouting, RouteLayerIsFastAtThousandRanks) {
  Routing zipf;
  zipf.kind = RoutingKind::zipf;
  Routing histogram;
  histogram.kind = RoutingKind::histogram;
  for (int e = 0; e < 256; ++e) histogram.histogram.push_back(1000 + (e * 37) % 101);  // 101 distinct loads
  for (const Routing& routing : {Routing{}, zipf, histogram}) {
    const LayerShape shape{256, 8, 1024, 4096};
    constexpr int kCalls = 20;
    const auto start = std::chrono::steady_clock::now();
    double busiest = 0;
    for (int layer = 0; layer < kCalls; ++layer) busiest += route_layer(routing, shape, layer).busiest_rank_tokens;
    const double per_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / kCalls;
    std::printf("route_layer %s, ep 1024, E 256, top-8: %.3f ms a call\n", to_string(routing.kind), per_call_ms);
    EXPECT_GT(busiest, 0);
    EXPECT_LT(per_call_ms, 20.0);
  }
}

TEST(MoeRouting, CheckRoutingNamesTheBadField) {
  const Routing uniform;
  EXPECT_EQ(check_routing(uniform, LayerShape{64, 8, 48, 4096}).error().message,
            "ep = 48: must divide the 64 experts or be a multiple of them (each rank holds whole experts, or a replica of one)");
  EXPECT_EQ(check_routing(uniform, LayerShape{64, 65, 8, 4096}).error().message, "top_k = 65: must be from 1 to the 64 experts");
  Routing h;
  h.kind = RoutingKind::histogram;
  h.histogram = {1, 0, 0, 0};
  EXPECT_EQ(check_routing(h, LayerShape{4, 2, 2, 10}).error().message,
            "histogram: 1 of the 4 experts has a load > 0, fewer than top_k = 2 (a token picks top_k distinct experts)");
  Routing zipf;
  zipf.kind = RoutingKind::zipf;
  zipf.zipf_s = -1;
  EXPECT_EQ(check_routing(zipf, LayerShape{4, 2, 2, 10}).error().message, "zipf_s = -1: must be finite and >= 0");
  EXPECT_TRUE(check_routing(uniform, LayerShape{64, 8, 1024, 4096}).has_value());
  EXPECT_EQ(parse_routing_kind("zipf"), RoutingKind::zipf);
  EXPECT_EQ(parse_routing_kind("Zipf"), std::nullopt);
}

class HistogramFile : public ::testing::Test {
protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("moe_routing_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(HistogramFile, ReadsOneLoadPerLineWithComments) {
  const std::string path = write("good.txt", "# expert loads of layer 3, step 1200\n\n120\n  80  # a cold expert\n1.5e2\n0\n");
  const Expected<std::vector<double>> loads = read_expert_histogram(path, 4);
  ASSERT_TRUE(loads.has_value()) << loads.error().message;
  EXPECT_EQ(*loads, (std::vector<double>{120, 80, 150, 0}));
}

TEST_F(HistogramFile, EachBadFileGivesOneErrorNamingLineAndValue) {
  struct Case {
    std::string name, text, message_after_path;
  };
  const std::vector<Case> cases = {
      {"negative.txt", "# loads\n10\n-3\n5\n", ":3: expert 1 load = \"-3\": negative (a load counts tokens, >= 0)"},
      {"word.txt", "10\n12abc\n5\n", ":2: expert 1 load = \"12abc\": not a number"},
      {"few.txt", "10\n20\n\n", ":2: expert 1 load = \"20\": the last of 2 loads, the model has 3 experts"},
      {"many.txt", "10\n20\n30\n40\n", ":4: expert 3 load = \"40\": one load more than the model's 3 experts"},
      {"zeros.txt", "0\n0\n0.0\n", ":3: expert 2 load = \"0.0\": every load is 0 (the router sent no token to any expert)"},
  };
  for (const Case& c : cases) {
    const std::string path = write(c.name, c.text);
    const Expected<std::vector<double>> loads = read_expert_histogram(path, 3);
    ASSERT_FALSE(loads.has_value()) << c.name;
    EXPECT_EQ(loads.error().message, path + c.message_after_path);
  }
  const std::string missing = (dir_ / "missing.txt").string();
  EXPECT_EQ(read_expert_histogram(missing, 3).error().message, missing + ": cannot be read");
}

}  // namespace
}  // namespace commbound::sim::moe

namespace commbound::sim::moe {
namespace {

// Node-limited routing counted by hand. 2 nodes of 2 ranks, one expert a rank, top-2 within one
// node: a token keeps one node and takes both its experts, so it crosses to exactly one node and
// reaches exactly that node's two ranks, T node sends and 2T rank sends a source rank.
TEST(GroupLimitedRouting, ATokenTakesItsKeptNodesExpertsByHand) {
  const GroupLimitedCounts c = draw_group_limited({.ranks = 4, .ranks_per_node = 2, .experts = 4, .top_k = 2,
                                                   .max_nodes = 1, .tokens_per_rank = 1000, .seed = 3});
  ASSERT_EQ(c.nodes, 2);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.node_tokens[i * 2] + c.node_tokens[i * 2 + 1], 1000);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(c.rank_tokens[i * 4 + 2 * k], c.node_tokens[i * 2 + k]);
      EXPECT_EQ(c.rank_tokens[i * 4 + 2 * k + 1], c.node_tokens[i * 2 + k]);
    }
    EXPECT_GT(c.node_tokens[i * 2], 400);  // either node about half the time (sd 16)
    EXPECT_LT(c.node_tokens[i * 2], 600);
  }
}

// One node (no node limit), 256 experts on 8 ranks, top-8: a token's 8 experts are a uniform
// 8-subset, so it misses a rank with probability C(224, 8) / C(256, 8) = 0.33817 and reaches
// 8 (1 - 0.33817) = 5.2947 ranks on average (DeepEP's intranode test case); 32768 tokens put the
// mean within 0.01 (sd about 0.005).
TEST(GroupLimitedRouting, OneNodeReachesTheExpectedDistinctRanks) {
  const GroupLimitedCounts c = draw_group_limited({.ranks = 8, .ranks_per_node = 8, .experts = 256, .top_k = 8,
                                                   .max_nodes = 4, .tokens_per_rank = 4096, .seed = 1});
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  EXPECT_NEAR(sum(c.rank_tokens) / (8 * 4096), 8 * (1 - miss), 0.01);
  EXPECT_EQ(sum(c.node_tokens), 8 * 4096);  // one node: every token reaches it once
}

// 8 nodes, at most 4 a token: every token reaches between 1 and 4 nodes and at most 8 ranks; the
// draw is fixed by its seed.
TEST(GroupLimitedRouting, NodeLimitHoldsAndTheDrawIsSeeded) {
  const GroupLimitedRouting r{.ranks = 64, .ranks_per_node = 8, .experts = 256, .top_k = 8, .max_nodes = 4,
                              .tokens_per_rank = 256, .seed = 7};
  const GroupLimitedCounts c = draw_group_limited(r);
  for (int i = 0; i < 64; ++i) {
    const double nodes = std::accumulate(c.node_tokens.begin() + i * 8, c.node_tokens.begin() + (i + 1) * 8, 0.0);
    const double ranks = std::accumulate(c.rank_tokens.begin() + i * 64, c.rank_tokens.begin() + (i + 1) * 64, 0.0);
    EXPECT_GE(nodes, 256);
    EXPECT_LE(nodes, 4 * 256);
    EXPECT_GE(ranks, nodes);
    EXPECT_LE(ranks, 8 * 256);
  }
  EXPECT_EQ(draw_group_limited(r).rank_tokens, c.rank_tokens);
  GroupLimitedRouting other = r;
  other.seed = 8;
  EXPECT_NE(draw_group_limited(other).rank_tokens, c.rank_tokens);
}

}  // namespace
}  // namespace commbound::sim::moe
