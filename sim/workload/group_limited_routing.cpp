#include "sim/workload/group_limited_routing.hpp"

#include "core/check.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace commbound::sim::moe {

GroupLimitedCounts draw_group_limited(const GroupLimitedRouting& r) {
  COMMBOUND_CHECK(r.ranks > 0 && r.ranks_per_node > 0 && r.ranks % r.ranks_per_node == 0, "ranks by node");
  COMMBOUND_CHECK(r.experts % r.ranks == 0, "experts a multiple of ranks");
  GroupLimitedCounts out;
  out.ranks = r.ranks;
  out.nodes = r.ranks / r.ranks_per_node;
  const int per_rank = r.experts / r.ranks;
  const int per_node = r.experts / out.nodes;
  const int kept_nodes = out.nodes > 1 ? std::min(out.nodes, r.max_nodes) : 1;
  COMMBOUND_CHECK(r.top_k >= 1 && r.top_k <= (out.nodes > 1 ? kept_nodes : 1) * per_node, "top_k within the kept nodes");
  out.rank_tokens.assign(static_cast<std::size_t>(r.ranks) * r.ranks, 0.0);
  out.node_tokens.assign(static_cast<std::size_t>(r.ranks) * out.nodes, 0.0);
  std::mt19937_64 draw(r.seed);
  std::vector<double> score(static_cast<std::size_t>(r.experts));
  std::vector<int> node_order(static_cast<std::size_t>(out.nodes));
  std::vector<int> candidates;
  std::vector<double> best(static_cast<std::size_t>(out.nodes));
  std::vector<char> hit_rank(static_cast<std::size_t>(r.ranks)), hit_node(static_cast<std::size_t>(out.nodes));
  for (int src = 0; src < r.ranks; ++src) {
    for (int t = 0; t < r.tokens_per_rank; ++t) {
      for (double& s : score) s = static_cast<double>(draw() >> 11) * 0x1.0p-53;
      candidates.clear();
      if (out.nodes > 1) {
        for (int k = 0; k < out.nodes; ++k) {
          best[k] = *std::max_element(score.begin() + k * per_node, score.begin() + (k + 1) * per_node);
        }
        std::iota(node_order.begin(), node_order.end(), 0);
        std::partial_sort(node_order.begin(), node_order.begin() + kept_nodes, node_order.end(),
                          [&](int a, int b) { return best[a] > best[b]; });
        for (int n = 0; n < kept_nodes; ++n) {
          for (int e = node_order[n] * per_node; e < (node_order[n] + 1) * per_node; ++e) candidates.push_back(e);
        }
      } else {
        candidates.resize(score.size());
        std::iota(candidates.begin(), candidates.end(), 0);
      }
      std::partial_sort(candidates.begin(), candidates.begin() + r.top_k, candidates.end(),
                        [&](int a, int b) { return score[a] > score[b]; });
      std::fill(hit_rank.begin(), hit_rank.end(), 0);
      std::fill(hit_node.begin(), hit_node.end(), 0);
      for (int c = 0; c < r.top_k; ++c) {
        hit_rank[candidates[c] / per_rank] = 1;
        hit_node[candidates[c] / per_node] = 1;
      }
      for (int j = 0; j < r.ranks; ++j) out.rank_tokens[static_cast<std::size_t>(src) * r.ranks + j] += hit_rank[j];
      for (int k = 0; k < out.nodes; ++k) out.node_tokens[static_cast<std::size_t>(src) * out.nodes + k] += hit_node[k];
    }
  }
  return out;
}

}  // namespace commbound::sim::moe
