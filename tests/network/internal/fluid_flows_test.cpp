// segments_of against the worked numbers of fluid_flows.hpp (only edge counts matter: the hosts
// are never touched, so null ones do), and run_fluid() on a real platform.
#include "network/internal/fluid_flows.hpp"

#include "network/platform.hpp"
#include "tests/network/in_child.hpp"
#include "tests/network/test_support.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace commbound::network::internal {
namespace {

// A ring AllGather over 64 DGX nodes: 8 rail groups of 512 edges.
std::vector<GroupFlow> rails_of_64_nodes() {
  static const std::vector<Edge> ring(512, Edge{nullptr, nullptr});  // outlives the flows that view it
  return std::vector<GroupFlow>(8, GroupFlow{ring, 1e6, -1});
}

// 512 free slots, none reserved: a quarter, 128 segments, 16 per group of 32 edges.
TEST(SegmentsOf, TakesAQuarterOfTheFreeSlots) {
  const auto segments = segments_of(rails_of_64_nodes(), {.free = 512, .reserved = 0});
  ASSERT_EQ(segments.size(), 128u);
  for (const Segment& s : segments) EXPECT_EQ(s.edges.size(), 32u);
}

// 512 free of which 256 reserved for other collectives: a quarter of 256, 64 segments of 64 edges.
TEST(SegmentsOf, LeavesTheReserveAlone) {
  const auto segments = segments_of(rails_of_64_nodes(), {.free = 512, .reserved = 256});
  ASSERT_EQ(segments.size(), 64u);
  for (const Segment& s : segments) EXPECT_EQ(s.edges.size(), 64u);
}

// Fewer spare slots than 4 per group: still one segment per group, whole.
TEST(SegmentsOf, KeepsOneSegmentPerGroup) {
  const auto segments = segments_of(rails_of_64_nodes(), {.free = 10, .reserved = 8});
  ASSERT_EQ(segments.size(), 8u);
  for (const Segment& s : segments) EXPECT_EQ(s.edges.size(), 512u);
}

// 8 one-GPU nodes on a fat tree of radix 4 at oversubscription 3: leaves of 3 nodes behind one
// up-port each.
network::ClusterSpec oversubscribed_8_nodes() {
  network::ClusterSpec spec = testing::one_gpu_nodes(8, network::Topology::fat_tree);
  spec.fabric.switch_radix = 4;
  spec.fabric.oversubscription = 3;
  return spec;
}

// A PAT step (every rank sends to the rank `distance` before it) over 8 one-GPU nodes on a fat
// tree of radix 4 at oversubscription 3: leaves of 3 nodes (0-2, 3-5, 6-7) behind one up-port each.
// At distance 1 one edge leaves and one enters each leaf: every edge at the NIC's rate r. At
// distance 2 two leave leaf 0-2 (0 -> 6, 1 -> 7) and share its up-port, r / 2, while 2 -> 0 stays in
// the leaf at r; at distance 4 three leave it, r / 3. Run uncapped, the in-leaf edges finish first
// and the step ends with the slowest; with every edge capped at the rate they reach together
// (coupled_group_rates, as run_pat runs its steps) it ends at the same instant: bytes / (r / k).
TEST(RunFluid, EdgesCappedAtTheirCoupledRateEndWhenUncappedOnesDo) {
  const network::ClusterSpec spec = oversubscribed_8_nodes();
  auto platform = Platform::create(spec);
  ASSERT_TRUE(platform) << platform.error().message;
  const double r = spec.fabric.nic_bw_bytes_per_s();
  const double bytes = 64e6;
  const std::vector<std::pair<int, double>> sharing = {{1, 1}, {2, 2}, {4, 3}};  // distance, edges per up-port
  std::vector<double> coupled, uncapped_s, capped_s;
  (*platform)->run([&] {
    for (const auto& step : sharing) {
      const int distance = step.first;
      std::vector<Edge> edges;
      for (int i = 0; i < 8; ++i) edges.emplace_back((*platform)->gpu(i), (*platform)->gpu((i - distance + 8) % 8));
      coupled.push_back(coupled_group_rates(group_links({edges}), {-1}).front());
      uncapped_s.push_back(run_fluid(**platform, {{edges, bytes, -1}}).bandwidth_s);
      capped_s.push_back(run_fluid(**platform, {{edges, bytes, coupled.back()}}).bandwidth_s);
    }
  });
  ASSERT_EQ(coupled.size(), sharing.size());
  for (std::size_t i = 0; i < sharing.size(); ++i) {
    const double expected_s = bytes / (r / sharing[i].second);
    EXPECT_NEAR(coupled[i], r / sharing[i].second, 1e-9 * r) << "distance " << sharing[i].first;
    EXPECT_NEAR(uncapped_s[i], expected_s, 1e-9 * expected_s) << "distance " << sharing[i].first;
    EXPECT_NEAR(capped_s[i], expected_s, 1e-9 * expected_s) << "distance " << sharing[i].first;
  }
}

// PAT's distance-2 step of the test above (edge i -> i + 2 over 8 one-GPU nodes, leaves 0-2, 3-5,
// 6-7 behind one up-port each), every edge capped at `cap_of_nic` times the NIC's rate r: one
// run_fluid() call of 64 MB through each edge. Two edges leave each leaf, so the links carry every
// edge at r / 2 at once, and not at r. `simulate` switches
// unsimulated calls off (LinkOccupancy::disable). Returns its bandwidth time, or with `flows` the
// flows SimGrid started.
double distance_2_step(double cap_of_nic, bool simulate, bool flows) {
  const network::ClusterSpec spec = oversubscribed_8_nodes();
  auto platform = Platform::create(spec);
  EXPECT_TRUE(platform) << platform.error().message;
  const double r = spec.fabric.nic_bw_bytes_per_s();
  long started = 0;
  simgrid::s4u::Comm::on_send_cb([&started](const simgrid::s4u::Comm&) { ++started; });
  double bandwidth_s = 0;
  (*platform)->run([&] {
    if (simulate) (*platform)->occupancy().disable();
    std::vector<Edge> edges;
    for (int i = 0; i < 8; ++i) edges.emplace_back((*platform)->gpu(i), (*platform)->gpu((i + 2) % 8));
    bandwidth_s = run_fluid(**platform, {{edges, 64e6, cap_of_nic * r}}).bandwidth_s;
  });
  return flows ? static_cast<double>(started) : bandwidth_s;
}

// Alone, a call capped at rates its links carry at once moves every segment at its cap: it starts
// no flow and takes 64 MB / (r / 2), as SimGrid takes simulating it, to rounding.
TEST(RunFluid, AnUnsimulatedCallEndsAsItsFlowsWould) {
  const double r = oversubscribed_8_nodes().fabric.nic_bw_bytes_per_s();
  const double expected_s = 64e6 / (r / 2);
  const double unsimulated_s = testing::in_child([] { return distance_2_step(0.5, false, false); });
  const double simulated_s = testing::in_child([] { return distance_2_step(0.5, true, false); });
  EXPECT_NEAR(unsimulated_s, expected_s, 1e-12 * expected_s);
  EXPECT_NEAR(simulated_s, expected_s, 1e-12 * expected_s);
  EXPECT_EQ(testing::in_child([] { return distance_2_step(0.5, false, true); }), 0);
  EXPECT_GT(testing::in_child([] { return distance_2_step(0.5, true, true); }), 0);
}

// Capped at the NIC's rate, the two edges through each up-port cannot both have their cap: the call
// is simulated (priced at its caps it would end in half the time), and ends when those edges have
// moved their bytes at r / 2 each.
TEST(RunFluid, CapsTheLinksCannotCarryAreSimulated) {
  const double r = oversubscribed_8_nodes().fabric.nic_bw_bytes_per_s();
  const double expected_s = 64e6 / (r / 2);
  EXPECT_GT(testing::in_child([] { return distance_2_step(1.0, false, true); }), 0);
  EXPECT_NEAR(testing::in_child([] { return distance_2_step(1.0, false, false); }), expected_s, 1e-9 * expected_s);
}

// Two calls at once over 8 one-GPU nodes as above (leaves 0-2, 3-5, 6-7, every port at r): A,
// 0 -> 3, and B, 1 -> 4, 64 MB each, both capped at `cap_of_nic` x r. Both cross leaf 0's up-port
// and leaf 1's down-port. Returns A's bandwidth time, or with `flows` the flows SimGrid started.
double two_calls_on_one_up_port(double cap_of_nic, bool simulate, bool flows) {
  const network::ClusterSpec spec = oversubscribed_8_nodes();
  auto platform = Platform::create(spec, 2);
  EXPECT_TRUE(platform) << platform.error().message;
  Platform& p = **platform;
  const double cap = cap_of_nic * spec.fabric.nic_bw_bytes_per_s();
  long started = 0;
  simgrid::s4u::Comm::on_send_cb([&started](const simgrid::s4u::Comm&) { ++started; });
  double a_s = 0;
  p.run([&] {
    if (simulate) p.occupancy().disable();
    const std::vector<Edge> a = {Edge{p.gpu(0), p.gpu(3)}}, b = {Edge{p.gpu(1), p.gpu(4)}};
    auto ta = simgrid::s4u::Actor::create("a", p.gpu(0), [&] { a_s = run_fluid(p, {{a, 64e6, cap}}).bandwidth_s; });
    auto tb = simgrid::s4u::Actor::create("b", p.gpu(1), [&] { run_fluid(p, {{b, 64e6, cap}}); });
    ta->join();
    tb->join();
  });
  return flows ? static_cast<double>(started) : a_s;
}

// A link two calls share binds neither when their caps fit it together: at r / 2 each, the up-port
// carries both (r), so neither starts a flow, and each moves 64 MB in 64 MB / (r / 2), as SimGrid
// gives simulating both. At 0.6 r each they exceed it (1.2 r): both are simulated and share it,
// r / 2 each, the same time.
TEST(RunFluid, CallsWhoseCapsFitASharedLinkAreNotSimulated) {
  const double r = oversubscribed_8_nodes().fabric.nic_bw_bytes_per_s();
  const double expected_s = 64e6 / (r / 2);
  EXPECT_EQ(testing::in_child([] { return two_calls_on_one_up_port(0.5, false, true); }), 0);
  EXPECT_NEAR(testing::in_child([] { return two_calls_on_one_up_port(0.5, false, false); }), expected_s,
              1e-12 * expected_s);
  EXPECT_NEAR(testing::in_child([] { return two_calls_on_one_up_port(0.5, true, false); }), expected_s,
              1e-9 * expected_s);
  EXPECT_GT(testing::in_child([] { return two_calls_on_one_up_port(0.6, false, true); }), 0);
  EXPECT_NEAR(testing::in_child([] { return two_calls_on_one_up_port(0.6, false, false); }), expected_s,
              1e-9 * expected_s);
}

// A call's flows leave out the links only it uses, and are rerouted over one when another call
// comes onto it. 8 one-GPU nodes as above (leaves 0-2, 3-5, 6-7, every port at r), no latencies:
// - t = 0: B, 0 -> 3, uncapped, r x 1 ms. Alone at r.
// - t = 0.2 ms: A, 1 -> 4, capped at r, r x 2 ms. It meets B on leaf 0's up-port and leaf 1's
//   down-port: simulated, over those two links only (its NICs left out). Both at r / 2: B ends at
//   0.2 + 2 x 0.8 = 1.8 ms; A has then moved r x 0.8 ms, and goes on at r.
// - t = 2.0 ms: C, 5 -> 4, uncapped, r x 10 ms, inside leaf 1. It meets A on node 4's NIC, which
//   A's flow left out: A, with r x 1.0 ms left, is rerouted over it and shares it, r / 2 each: A
//   ends at 4.0 ms, a bandwidth time of 3.8 ms (not rerouted it would end at 3.0 ms). Every flow
//   simulated over its whole route from the start (LinkOccupancy::disable) gives the same.
double rerouted_call_s(bool simulate_all) {
  network::ClusterSpec spec = oversubscribed_8_nodes();
  spec.fabric.link.latency_s = 0;
  spec.fabric.switch_latency_s = 0;
  auto platform = Platform::create(spec, 3);
  EXPECT_TRUE(platform) << platform.error().message;
  Platform& p = **platform;
  const double r = spec.fabric.nic_bw_bytes_per_s();
  double a_s = -1;
  p.run([&] {
    if (simulate_all) p.occupancy().disable();
    auto edge = [&p](int src, int dst) { return std::vector<Edge>{Edge{p.gpu(src), p.gpu(dst)}}; };
    const std::vector<Edge> b = edge(0, 3), a = edge(1, 4), c = edge(5, 4);
    for (const auto& e : {b, a, c}) EXPECT_EQ(route_latency_s(e[0].first, e[0].second), 0);
    // From the clock at the start (a test before this one in the same process may have moved it).
    const double t0_s = simgrid::s4u::Engine::get_clock();
    auto call = [&p, t0_s](const std::vector<Edge>& edges, double start_s, double bytes, double cap, double* out) {
      return [&p, &edges, t0_s, start_s, bytes, cap, out] {
        simgrid::s4u::this_actor::sleep_until(t0_s + start_s);
        const double s = run_fluid(p, {{edges, bytes, cap}}).bandwidth_s;
        if (out != nullptr) *out = s;
      };
    };
    auto tb = simgrid::s4u::Actor::create("b", p.gpu(0), call(b, 0, r * 1e-3, -1, nullptr));
    auto ta = simgrid::s4u::Actor::create("a", p.gpu(1), call(a, 0.2e-3, r * 2e-3, r, &a_s));
    auto tc = simgrid::s4u::Actor::create("c", p.gpu(5), call(c, 2.0e-3, r * 10e-3, -1, nullptr));
    tb->join();
    ta->join();
    tc->join();
  });
  return a_s;
}

TEST(RunFluid, AFlowIsReroutedOverALinkItLeftOutWhenAnotherCallComesOntoIt) {
  const double expected_s = 3.8e-3;
  EXPECT_NEAR(testing::in_child([] { return rerouted_call_s(false); }), expected_s, 1e-9 * expected_s);
  EXPECT_NEAR(testing::in_child([] { return rerouted_call_s(true); }), expected_s, 1e-9 * expected_s);
}

}  // namespace
}  // namespace commbound::network::internal
