#include "network/internal/algorithm_params.hpp"

#include <algorithm>
#include <cmath>

namespace commbound::network::internal {

double AlgorithmParams::hop_s(int src_rank, int dst_rank) const {
  const HopClass hc = platform.hop_class(src_rank, dst_rank);
  if (fit != nullptr) return hc == HopClass::net ? fit->net_hop_s : fit->nvlink_hop_s;
  // With one rank per node every network hop's latency is exposed: NCCL then prices it at Tree's
  // (tuning.cc, "With ppn=1 latencies are fully exposed, use the Tree network latency").
  const bool one_per_node = hc == HopClass::net && shape.ranks == shape.nodes && nccl.rules.one_per_node_tree_net_latency;
  double h = nccl.hop(one_per_node ? Algorithm::tree : choice.algorithm, hc, choice.protocol);
  if (choice.algorithm == Algorithm::ring && hc != HopClass::net) h = std::max(h, net_overhead_s);
  return h * latency_factor;
}

namespace {

// Slices per chunk of a ring's Simple protocol: ALLGATHER_CHUNKSTEPS / ALLGATHER_SLICESTEPS =
// (NCCL_STEPS/2) / (NCCL_STEPS/4), the same for ReduceScatter and AllReduce
// (src/include/collectives.h); a slice is message_bytes, a chunk two of them.
constexpr double kRingSimpleSlicesPerChunk = 2;

}  // namespace

double AlgorithmParams::fifo_messages(double step_payload_bytes) const {
  if (step_payload_bytes <= 0) return 0;
  const double message_bytes = nccl.message_bytes[int(choice.protocol)];
  return choice.protocol == Protocol::simple
             ? kRingSimpleSlicesPerChunk * std::ceil(step_payload_bytes / (kRingSimpleSlicesPerChunk * message_bytes))
             : std::ceil(step_payload_bytes / message_bytes);
}

double AlgorithmParams::messages_s(int steps, double step_payload_bytes) const {
  if (fit == nullptr) return 0;
  return steps * fifo_messages(step_payload_bytes) * fit->message_s;
}

double AlgorithmParams::net_messages_s(int steps, double step_payload_bytes) const {
  if (fit == nullptr || shape.nodes <= 1 || step_payload_bytes <= 0) return 0;
  const double messages = std::ceil(step_payload_bytes / nccl.message_bytes[int(choice.protocol)]);
  return steps * messages * fit->message_s;
}

}  // namespace commbound::network::internal
