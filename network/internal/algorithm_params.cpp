#include "network/internal/algorithm_params.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::network::internal {

double AlgorithmParams::hop_s(int src_rank, int dst_rank) const {
  const HopClass hc = platform.hop_class(src_rank, dst_rank);
  if (fit != nullptr) return hc == HopClass::net ? fit->net_hop_s : fit->nvlink_hop_s;
  // With one rank per node every network hop's latency is exposed: NCCL then prices it at Tree's
  // (tuning.cc, "With ppn=1 latencies are fully exposed, use the Tree network latency").
  const bool one_per_node = hc == HopClass::net && shape.ranks == shape.nodes;
  double h = nccl.hop(one_per_node ? Algorithm::tree : choice.algorithm, hc, choice.protocol);
  if (choice.algorithm == Algorithm::ring && hc != HopClass::net) h = std::max(h, net_overhead_s);
  return h * latency_factor;
}

double AlgorithmParams::net_messages_s(int steps, double step_payload_bytes) const {
  if (fit == nullptr || shape.nodes <= 1 || step_payload_bytes <= 0) return 0;
  const double messages = std::ceil(step_payload_bytes / nccl.message_bytes[int(choice.protocol)]);
  return steps * messages * fit->net_message_s;
}

}  // namespace commbound::network::internal
