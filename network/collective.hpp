// Collective operations, NCCL's algorithms and protocols, and nccl-tests' bandwidth conventions.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::network {

enum class CollectiveOp { all_gather, reduce_scatter, all_reduce, send_recv };
enum class Algorithm { ring, tree, nvls, nvls_tree, pat };
enum class Protocol { ll, ll128, simple };
enum class Fidelity { fluid, step };

inline constexpr int kAlgorithms = 5;
inline constexpr int kProtocols = 3;
inline constexpr std::array<Algorithm, kAlgorithms> kAllAlgorithms = {Algorithm::ring, Algorithm::tree, Algorithm::nvls,
                                                                     Algorithm::nvls_tree, Algorithm::pat};

// One collective call. `size_bytes` follows nccl-tests: the whole output buffer for AllGather,
// the whole input buffer for ReduceScatter, the buffer for AllReduce, the message for SendRecv.
// `ranks` are global GPU ranks (node-major: rank = node * gpus_per_node + local); for SendRecv
// exactly two, sender first.
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::all_gather;
  std::vector<int> ranks;
  double size_bytes = 0;
};

// An (algorithm, protocol) pair as NCCL_ALGO / NCCL_PROTO would force it.
struct CollectiveChoice {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
};

// What one simulated collective cost.
struct CollectiveResult {
  double time_s = 0;         // launch to completion on the slowest rank
  double bandwidth_s = 0;    // the part spent moving bytes (max over flows, route latency excluded)
  double latency_s = 0;      // base + per-hop latency on the critical path (+ pipeline fill)
  CollectiveChoice choice;
  Fidelity fidelity = Fidelity::fluid;
  long flows = 0;            // SimGrid communications created
};

// nccl-tests: algbw = size / time; busbw = algbw * factor, the factor reflecting the bytes every
// rank must move: (n-1)/n for AllGather and ReduceScatter, 2(n-1)/n for AllReduce, 1 for SendRecv.
double bus_bw_factor(CollectiveOp op, int ranks);

const char* to_string(CollectiveOp op);
const char* to_string(Algorithm a);
const char* to_string(Protocol p);
const char* to_string(Fidelity f);
std::optional<CollectiveOp> parse_collective_op(std::string_view s);
std::optional<Algorithm> parse_algorithm(std::string_view s);
std::optional<Protocol> parse_protocol(std::string_view s);
std::optional<Fidelity> parse_fidelity(std::string_view s);

}  // namespace commbound::network
