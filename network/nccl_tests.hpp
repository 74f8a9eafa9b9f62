// The simulated nccl-tests: one collective over a list of node counts and sizes, reported with
// nccl-tests' algbw and busbw conventions (see bus_bw_factor in collective.hpp).
#pragma once

#include "network/collective.hpp"
#include "network/collective_runner.hpp"
#include "core/expected.hpp"

#include <functional>
#include <optional>
#include <vector>

namespace commbound::network {

struct CollectiveSweep {
  CollectiveOp op = CollectiveOp::all_gather;
  std::vector<int> nodes;           // node counts; each point uses the first `nodes` nodes
  // GPUs of each node in the call, its first ones (a tensor-parallel group of 2 on an 8-GPU node is
  // its own communicator of those 2 GPUs); 0: all of the node's.
  int gpus_per_node = 0;
  std::vector<double> sizes_bytes;  // nccl-tests sizes
  std::optional<Algorithm> algorithm;  // forced (NCCL_ALGO) or chosen by the tuner
  std::optional<Protocol> protocol;    // forced (NCCL_PROTO) or chosen by the tuner
  Fidelity fidelity = Fidelity::fluid;
  AllToAllMethod all_to_all_method = AllToAllMethod::nccl;  // alltoall only
};

struct SweepRow {
  CollectiveOp op;
  int nodes;
  int ranks;
  double size_bytes;
  CollectiveResult result;
  double alg_bw_bytes_per_s;
  double bus_bw_bytes_per_s;
};

// The choice for one point: forced parts kept, the rest as NCCL's tuner would pick among them.
Expected<CollectiveChoice> resolve_choice(const CollectiveRunner& runner, const CollectiveCall& call,
                                          std::optional<Algorithm> algorithm, std::optional<Protocol> protocol);

// One nccl-tests measurement to simulate.
struct SweepPoint {
  CollectiveOp op = CollectiveOp::all_gather;
  int nodes = 1;
  double size_bytes = 0;
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  int gpus_per_node = 0;  // the first GPUs of each node in the call; 0: all of the node's
  AllToAllMethod all_to_all_method = AllToAllMethod::nccl;  // alltoall only
  std::vector<int> ranks;  // the call's ranks when given (a training group's); nodes then only labels the row
  // SendRecv with `ranks` given: its communicator (CollectiveCall::comm_ranks, comm_gpus_per_node).
  int comm_ranks = 0;
  int comm_gpus_per_node = 0;
};

// The ranks of one nccl-tests run of `op` on the first `nodes` nodes, `gpus_per_node` of each
// (0: all): node-major, as nccl-tests orders them. SendRecv: the farthest pair, the first GPU to
// the next GPU of the same node on one node, else to the first GPU of the last node.
std::vector<int> sweep_ranks(const Platform& platform, CollectiveOp op, int nodes, int gpus_per_node);

// Runs `points` one after the other in simulated time on `platform` (which must hold the largest
// node count), in `fidelity`. Checks every point before simulating any (a gpus_per_node outside
// 1..the node's GPUs is an error). Calls `progress(done, total)`.
Expected<std::vector<SweepRow>> run_points(Platform& platform, const NcclConstants& nccl,
                                           const std::vector<SweepPoint>& points, Fidelity fidelity,
                                           const std::function<void(int, int)>& progress);

// Runs every (nodes, size) point in order, one after the other in simulated time, on `platform`
// (which must hold the largest node count). Calls `progress(done, total)` after each point.
// Checks every point before simulating any, so a bad forced choice fails without output.
Expected<std::vector<SweepRow>> run_sweep(Platform& platform, const NcclConstants& nccl, const CollectiveSweep& sweep,
                                          const std::function<void(int, int)>& progress);

}  // namespace commbound::network
