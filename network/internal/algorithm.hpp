// AlgorithmSpec: one of NCCL's collective algorithms, described once. How reports, scenario files
// and NCCL_ALGO spell it; its rows of NCCL's constants (calibration/nccl/nccl-<release>.toml);
// where NCCL runs it, the latency and bandwidth NCCL's tuner predicts for it (src/graph/tuning.cc);
// and how it moves bytes on the emulated fabric.
//
// Each algorithm's file (ring.cpp, tree.cpp, nvls.cpp, pat.cpp) defines its row (`extern const`:
// a namespace-scope const is otherwise private to its file); network/algorithms.def lists the rows,
// and from that list come the Algorithm enum and the registry (algorithms.cpp). NcclTuner and
// CollectiveRunner ask the row, never switch on the algorithm, and names, scenario choices and
// constants keys come from it: a new algorithm is its file, its line in algorithms.def and in
// network/CMakeLists.txt, and, when it has a constants key, its rows in each calibration/nccl/
// release (an algorithm that prices itself without NCCL's tables has none). SendRecv and
// AllToAll are NCCL's point to point, no algorithm of these (the tuner and runner handle them).
#pragma once

#include "network/internal/algorithm_params.hpp"
#include "network/nccl_constants.hpp"
#include "network/nccl_tuner.hpp"

#include <optional>
#include <string>

namespace commbound::network::internal {

// What NCCL's tuner has worked out for a call before it asks an algorithm for its bandwidth
// (NcclTuner::predict_s, after tuning.cc).
struct TunerBandwidth {
  // busBw before the algorithm's own caps: nChannels x per-channel bandwidth of the searched graph,
  // the GPU's NVLink up to two nodes (the ring graph's inside one NVSwitch node), the NICs beyond.
  double bus_bytes_per_s = 0;
  double intra_bytes_per_s = 0;  // the GPU's NVLink (bwIntra)
  double inter_bytes_per_s = 0;  // the node's NICs (bwInter)
  double steps = 0;              // a ring's steps for the op: AllReduce 2(n-1), SendRecv 1, else n-1
  double channels = 0;           // the node's NCCL channels
  const NcclConstants::ArchCaps* caps = nullptr;  // per-channel caps of the GPU's architecture
  int regime = 0;                // caps' node-count regime: 0 one node, 1 two, 2 more
};

struct AlgorithmSpec {
  Algorithm id;
  const char* name;           // NCCL_ALGO's spelling, lower case ("nvlstree")
  // Its rows' prefix in calibration/nccl/*.toml ("nvls_tree"); nullptr: it reads none (its latency
  // and bandwidth come from elsewhere) and the release files need not name it.
  const char* constants_key;
  // Why NCCL does not run it for `shape` with protocol `p`; "" when it does.
  std::string (*unsupported)(const NcclTuner& tuner, const CallShape& shape, Protocol p);
  // NCCL's predicted latency, seconds: base and hop latencies on its critical path.
  double (*latency_s)(const NcclTuner& tuner, const CallShape& shape, Protocol p);
  // NCCL's predicted algBw, bytes per second; nullopt where its tuner rules the algorithm out.
  std::optional<double> (*alg_bw_bytes_per_s)(const NcclTuner& tuner, const CallShape& shape, Protocol p,
                                              const TunerBandwidth& bw);
  // Simulates one call on the fabric (params passed CollectiveRunner::check).
  AlgorithmResult (*run)(const AlgorithmParams& params);
};

// The row of `a` (algorithms.cpp).
const AlgorithmSpec& algorithm_spec(Algorithm a);

}  // namespace commbound::network::internal
