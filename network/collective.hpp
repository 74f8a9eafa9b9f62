// Collective operations, NCCL's algorithms and protocols, and how they map onto nccl-tests' ops
// (whose conventions, busbw among them, live in core/nccl_tests_op.hpp).
#pragma once

#include "core/nccl_tests_op.hpp"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::network {

enum class CollectiveOp { all_gather, reduce_scatter, all_reduce, send_recv, all_to_all };
// How an all-to-all moves its bytes (internal/all_to_all.hpp): `nccl` as NCCL runs it, a grouped
// send/recv to every peer, inter-node data relayed by PXN to the NIC on the destination's rail;
// `hierarchical` as DeepEP's normal kernels do, one RDMA transfer per (node, rail) pair, forwarded
// inside the destination node over NVLink.
enum class AllToAllMethod { nccl, hierarchical };
// NCCL's algorithms: each described once, by its row in the registry (network/algorithms.def lists
// them; network/internal/algorithm.hpp says what a row holds).
enum class Algorithm {
#define COMMBOUND_ALGORITHM(id, row) id,
#include "network/algorithms.def"
#undef COMMBOUND_ALGORITHM
};
enum class Protocol { ll, ll128, simple };
enum class Fidelity { fluid, step };

inline constexpr int kAlgorithms = 0
#define COMMBOUND_ALGORITHM(id, row) +1
#include "network/algorithms.def"
#undef COMMBOUND_ALGORITHM
    ;
inline constexpr int kProtocols = 3;
inline constexpr std::array<Algorithm, kAlgorithms> kAllAlgorithms = [] {
  std::array<Algorithm, kAlgorithms> all{};
  for (int i = 0; i < kAlgorithms; ++i) all[static_cast<std::size_t>(i)] = static_cast<Algorithm>(i);
  return all;
}();

// One collective call. `size_bytes` follows nccl-tests: the whole output buffer for AllGather,
// the whole input buffer for ReduceScatter, the buffer for AllReduce, the message for SendRecv,
// each rank's whole send buffer for AllToAll (size/n to every peer, itself included: nccl-tests'
// src/alltoall.cu). `ranks` are global GPU ranks (node-major: rank = node * gpus_per_node + local);
// for SendRecv exactly two, sender first.
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::all_gather;
  std::vector<int> ranks;
  double size_bytes = 0;
  // AllToAll only (alltoallv): n x n bytes, row-major, element i * n + j the bytes ranks[i] sends
  // ranks[j] (n = ranks.size()); the diagonal stays on the GPU and costs nothing. Null: the uniform
  // size_bytes / n to every peer; when set, size_bytes only labels the call (busbw). Shared, not
  // copied: the engine copies calls for sibling groups and the matrix can be 1024 x 1024.
  std::shared_ptr<const std::vector<double>> peer_bytes = nullptr;
  AllToAllMethod all_to_all_method = AllToAllMethod::nccl;  // AllToAll only
  // Hierarchical AllToAll only: n x m bytes, row-major, m the nodes of `ranks` in the order they
  // first appear; element i * m + k the bytes ranks[i] sends node k over RDMA. DeepEP sends a token
  // once per destination node and forwards it there to each of the node's GPUs it goes to, so this
  // is less than the sum of its peer_bytes to that node's ranks. Entries for a rank's own node are
  // not used. Null: that sum (a token sent once per destination GPU).
  std::shared_ptr<const std::vector<double>> node_bytes = nullptr;
  // SendRecv only: the communicator the pair belongs to, whose size sets how many channels NCCL
  // stripes a send to another node over (internal/p2p_channels.hpp). 0 ranks: the pair alone, a
  // two-rank communicator, as PyTorch makes for an unbatched send.
  int comm_ranks = 0;
  int comm_gpus_per_node = 0;  // the communicator's GPUs on each node it spans
};

// An (algorithm, protocol) pair as NCCL_ALGO / NCCL_PROTO would force it.
struct CollectiveChoice {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
};

// One term of a collective's time as the model builds it (`collective --explain`): what it is, how
// many of it the critical path holds and what each costs; `seconds` is their product, or the whole
// term where it is not a count of equal parts (count 0).
struct CostTerm {
  std::string what;
  double count = 0;
  double each_s = 0;
  double seconds = 0;
};

// What one simulated collective cost.
struct CollectiveResult {
  double time_s = 0;         // launch to completion on the slowest rank
  double bandwidth_s = 0;    // the part spent moving bytes (max over flows, route latency excluded)
  double latency_s = 0;      // base + per-hop latency on the critical path (+ pipeline fill)
  CollectiveChoice choice;
  Fidelity fidelity = Fidelity::fluid;
  long flows = 0;            // SimGrid communications created
  // The terms of latency_s as the algorithm adds them, then the bytes' term; ring itemizes its
  // latency (launch, latency chain, messages), the other algorithms give it whole.
  std::vector<CostTerm> terms;
  // AllToAll, itemized: the busiest link of each kind (a GPU's NVLink, a NIC, each way) with the
  // bytes it carries and their time at its rate alone (count 0): the bytes' term is at least the
  // longest of them; the one closest to it is the phase that bounds the call.
  std::vector<CostTerm> loads;
};

// The nccl-tests op that runs `op`, and back: the same five collectives, one for one.
NcclTestsOp nccl_tests_op(CollectiveOp op);
CollectiveOp collective_op(NcclTestsOp op);

// nccl-tests' busbw / algbw for `op` on `ranks` ranks: core/nccl_tests_op.hpp's
// bus_bw_factor of nccl_tests_op(op), where the factors and their sources are written.
double bus_bw_factor(CollectiveOp op, int ranks);

const char* to_string(CollectiveOp op);
const char* to_string(Algorithm a);  // NCCL_ALGO's spelling, lower case ("nvlstree")
// Every algorithm's to_string, in Algorithm's order.
std::vector<std::string> algorithm_names();
// The prefix of `a`'s rows in calibration/nccl/nccl-<release>.toml ("nvls_tree").
const char* constants_key(Algorithm a);
// How reports name the algorithm of a call of `op`: to_string(choice) for the collectives NCCL's
// tuner picks an algorithm for; "p2p" for SendRecv and AllToAll (NCCL's send/recv, no algorithm).
const char* algorithm_label(CollectiveOp op, Algorithm choice);
const char* to_string(Protocol p);
const char* to_string(Fidelity f);
const char* to_string(AllToAllMethod m);
std::optional<CollectiveOp> parse_collective_op(std::string_view s);
std::optional<Algorithm> parse_algorithm(std::string_view s);
std::optional<Protocol> parse_protocol(std::string_view s);
std::optional<Fidelity> parse_fidelity(std::string_view s);
// "nccl" or "hierarchical" (any case).
std::optional<AllToAllMethod> parse_all_to_all_method(std::string_view s);

}  // namespace commbound::network
