// AlgorithmParams and AlgorithmResult: what CollectiveRunner::run hands each algorithm (ring.hpp,
// tree.hpp, nvls.hpp, send_recv.hpp) and what it gets back.
//
// The runner computes what every algorithm shares (the call's shape, NCCL's latency multiplier,
// base latency and per-hop protocol latency); the algorithm simulates its traffic and reports its
// latency and bandwidth parts; the runner then closes the fluid schedule in simulated time.
#pragma once

#include "network/collective.hpp"
#include "network/nccl_constants.hpp"
#include "network/nccl_tuner.hpp"
#include "network/platform.hpp"
#include "network/internal/route_cache.hpp"

#include <optional>

namespace commbound::network::internal {

// One collective call as an algorithm runs it. The references must outlive the call.
struct AlgorithmParams {
  Platform& platform;
  const NcclConstants& nccl;
  const NcclTuner& tuner;       // the runner's: NCCL's topology search on this node type
  RouteCache& routes;          // the runner's: routes of groups seen by earlier calls
  const CollectiveCall& call;  // passed CollectiveRunner::check() with `choice`
  CallShape shape;
  CollectiveChoice choice;
  Fidelity fidelity = Fidelity::fluid;
  bool merge_channels = true;   // false: one flow group per NCCL channel (tests only)
  double latency_factor = 1;    // NCCL's multi-node Ring/Simple AllReduce multiplier, else 1
  double base_s = 0;            // NCCL's base latency x latency_factor, once per call
  double net_overhead_s = 0;    // NCCL's netOverhead for this shape and protocol (0 on one node)
  const FabricFit* fit = nullptr;  // NCCL as implemented on this fabric; null: the tuner's latencies
  bool itemize = false;            // fill AlgorithmResult::terms (`--explain`)

  // Payload bytes per byte on the wire for the protocol (LL 1/2, LL128 120/128, Simple 1).
  double efficiency() const { return nccl.data_efficiency[int(choice.protocol)]; }
  // The latency of the hop from `src_rank` to `dst_rank` on a step's critical path. With a fit, its
  // nvlink_hop_s or net_hop_s. Without, NCCL's protocol latency (hwLat) x latency_factor, a ring's
  // hop inside a node costing at least the netOverhead, as in NCCL's tuning.cc.
  double hop_s(int src_rank, int dst_rank) const;
  // The FIFO messages one connection carries for a step of `step_payload_bytes`: a Simple step is
  // chunks of two slices, an LL or LL128 step one message per message_bytes.
  double fifo_messages(double step_payload_bytes) const;
  // With a fit: the serialized per-message cost (FabricFit::message_s) one connection pays for
  // `steps` steps of `step_payload_bytes` each, NVLink or network; else 0.
  double messages_s(int steps, double step_payload_bytes) const;
  // The same, on more than one node only: the network sends of tree, NVLS and PAT, whose NVLink
  // side is priced by their own latencies.
  double net_messages_s(int steps, double step_payload_bytes) const;
};

// What an algorithm simulated: the CollectiveResult parts the runner cannot know.
struct AlgorithmResult {
  double latency_s = 0;    // base + per-hop latencies on the critical path
  std::vector<CostTerm> terms;  // latency_s itemized, where the algorithm does (ring); else empty
  std::string schedule_note;    // what makes schedule_s longer than latency + bytes, if known (itemized only)
  std::string rate_note;        // what capped the bytes' rate, if the algorithm knows (itemized only)
  std::vector<CostTerm> loads;  // CollectiveResult::loads (all-to-all, itemized only)
  double bandwidth_s = 0;  // fluid: the longest time a flow spent moving bytes; 0 when stepped
  // Fluid: the schedule's length where it is not bandwidth_s + latency_s (the tree's pipeline).
  std::optional<double> schedule_s;
  bool stepped = false;    // ran message by message: the elapsed simulated time is the result
  long flows = 0;          // SimGrid communications created
};

}  // namespace commbound::network::internal
