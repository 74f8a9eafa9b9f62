// segments_of against the worked numbers of fluid_flows.hpp (only edge counts matter: the hosts
// are never touched, so null ones do).
#include "network/internal/fluid_flows.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace commbound::network::internal
