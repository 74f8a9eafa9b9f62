// SendRecv: one message of S bytes (nccl-tests' size) from the first rank to the second, as NCCL's
// point-to-point over one path (the ring's protocol latencies).
//
//   time = base + hwLat of the hop (at least netOverhead inside a node) + route latency
//               + S / (efficiency * B)
// with B the path's bottleneck bandwidth (its max-min share when other traffic runs). Always fluid.
//
// nccl-tests bus bandwidth: busbw = algbw (factor 1; bus_bw_factor in collective.hpp).
#pragma once

#include "network/internal/algorithm_params.hpp"

namespace commbound::network::internal {

// Runs the SendRecv (must be called from a SimGrid actor; exactly two ranks, sender first:
// CollectiveRunner::check). Simulated time advances by base, the hop latency and the flow.
AlgorithmResult run_send_recv(const AlgorithmParams& params);

}  // namespace commbound::network::internal
