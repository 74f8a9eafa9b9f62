// DeepSeek-V3's node-limited routing as DeepEP's tests draw it, counted per destination rank and
// per destination node: what DeepEP's normal kernels move in one dispatch.
//
// The draw (DeepEP tests/test_internode.py, tests/test_intranode.py): each of a rank's tokens scores
// every expert with an independent random number; with more than one node, a node's score is its
// best expert's, the token keeps the `max_nodes` best-scoring nodes, and picks its top_k best
// experts among theirs (on one node, among all). Experts are laid out in order, experts / ranks to
// a rank and experts / nodes to a node. Only the order of the scores matters, so they are drawn
// uniform (the tests draw |N(0,1)| + 1: the same order statistics), from std::mt19937_64 (whose
// output the C++ standard fixes) with the top 53 bits made a double: every platform draws the same.
//
// A token goes to a rank once however many of its experts sit there (DeepEP deduplicates per rank)
// and crosses to a node once (per node over RDMA, then forwarded over NVLink): rank_tokens counts
// (token, destination rank) pairs, node_tokens (token, destination node) pairs, each for every
// source rank, own rank and own node included (DeepEP's tests count them so in their GB/s).
#pragma once

#include <cstdint>
#include <vector>

namespace commbound::sim::moe {

struct GroupLimitedRouting {
  int ranks = 8;         // expert-parallel ranks, node-major
  int ranks_per_node = 8;
  int experts = 256;     // divisible by ranks
  int top_k = 8;
  int max_nodes = 4;     // DeepSeek-V3's node limit (its top-4 groups)
  int tokens_per_rank = 4096;
  std::uint64_t seed = 0;
};

struct GroupLimitedCounts {
  int ranks = 0, nodes = 0;
  std::vector<double> rank_tokens;  // ranks x ranks, row-major: [i * ranks + j] tokens rank i sends rank j
  std::vector<double> node_tokens;  // ranks x nodes, row-major: [i * nodes + k] tokens rank i sends node k
};

// Preconditions: ranks a multiple of ranks_per_node; experts a multiple of ranks; 1 <= top_k <=
// experts of max_nodes nodes; tokens_per_rank >= 0.
GroupLimitedCounts draw_group_limited(const GroupLimitedRouting& r);

}  // namespace commbound::sim::moe
