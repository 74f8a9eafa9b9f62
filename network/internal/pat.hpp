// PAT (NCCL_ALGO_PAT, "Parallel Aggregated Trees", NCCL 2.23+): AllGather and ReduceScatter when
// every node holds one rank (ncclPatEnable; tuning.cc), in log2(n) steps instead of a ring's n - 1.
//
// Traffic: a Bruck-style exchange. AllGather step k (k = 0 .. ceil(log2 n) - 1) has every rank
// send what it holds, min(2^k, n - 2^k) blocks of S/n, to the rank 2^k before it; ReduceScatter
// runs the same steps in reverse, each rank sending the partial sums it no longer needs. Every rank
// moves S (n - 1)/n in all, as in a ring, but the steps are sequential, so
//   time = sum over steps of (step latency + the step's flows)
//   step latency = hwLat(PAT, NET) / 3.5                           (tuner: log2(nNodes) x interLat / 3.5)
//                = net_hop + the step's network sends' cost        (fit)
//   + base + 2.8 us x n once (the tuner's linear term; NCCL's PAT still walks every rank)
// and each step's bytes move at 0.75 of the links' rate: NCCL's own figure for what PAT achieves
// (tuning.cc: busBw x 0.75; no measurement of ours contradicts or replaces it). Always fluid.
#pragma once

#include "network/internal/algorithm_params.hpp"

namespace commbound::network::internal {

// Runs PAT (must be called from a SimGrid actor; one rank per node: CollectiveRunner::check).
AlgorithmResult run_pat(const AlgorithmParams& params);

}  // namespace commbound::network::internal
