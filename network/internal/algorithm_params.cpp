#include "network/internal/algorithm_params.hpp"

#include <algorithm>

namespace commbound::network::internal {

double AlgorithmParams::hop_s(int src_rank, int dst_rank) const {
  const HopClass hc = platform.hop_class(src_rank, dst_rank);
  double h = nccl.hop(choice.algorithm, hc, choice.protocol);
  if (choice.algorithm == Algorithm::ring && hc != HopClass::net) h = std::max(h, net_overhead_s);
  return h * latency_factor;
}

}  // namespace commbound::network::internal
