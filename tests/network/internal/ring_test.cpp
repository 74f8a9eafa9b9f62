// The ring's latency chain, worked by hand.
#include "network/internal/ring.hpp"

#include <gtest/gtest.h>

namespace commbound::network::internal {
namespace {

// Hops of 1, 2 and 3 us around a 3-rank ring. Two steps: the worst pair of consecutive hops is
// 2 + 3 = 5 us. Four steps: one whole lap (6 us) plus the worst single hop (3 us) = 9 us.
TEST(RingCriticalLatency, TakesTheWorstRunOfConsecutiveHops) {
  const std::vector<double> alpha_s = {1e-6, 2e-6, 3e-6};
  EXPECT_DOUBLE_EQ(ring_critical_latency(alpha_s, 2), 5e-6);
  EXPECT_DOUBLE_EQ(ring_critical_latency(alpha_s, 4), 9e-6);
  EXPECT_DOUBLE_EQ(ring_critical_latency(alpha_s, 3), 6e-6);
}

}  // namespace
}  // namespace commbound::network::internal
