#include "network/internal/channel_groups.hpp"

#include <algorithm>

namespace commbound::network::internal {
namespace {

// Splits `total` channels over `groups` groups as evenly as NCCL's round-robin would.
double channels_of(int group, int groups, int total) { return total / groups + (group < total % groups ? 1 : 0); }

}  // namespace

std::vector<std::vector<int>> by_node(const Platform& platform, const std::vector<int>& ranks) {
  std::vector<int> slot(static_cast<std::size_t>(platform.spec().nodes), -1);  // node -> index in `nodes`
  std::vector<std::vector<int>> nodes;
  for (int r : ranks) {
    int& s = slot[static_cast<std::size_t>(platform.node_of(r))];
    if (s < 0) {
      s = static_cast<int>(nodes.size());
      nodes.emplace_back();
    }
    nodes[static_cast<std::size_t>(s)].push_back(r);
  }
  for (auto& n : nodes) std::sort(n.begin(), n.end());
  return nodes;
}

namespace {

// Where rail_head sits in `node_ranks`: the first rank whose GPU is at or after the rail's own.
std::size_t rail_head_index(const Platform& platform, const std::vector<int>& node_ranks, int rail) {
  const NodeType& node = platform.spec().node;
  const int head_local = rail * node.gpus / node.nics;
  const auto it = std::find_if(node_ranks.begin(), node_ranks.end(),
                               [&](int r) { return platform.local_of(r) >= head_local; });
  return it == node_ranks.end() ? 0 : static_cast<std::size_t>(it - node_ranks.begin());
}

}  // namespace

int rail_head(const Platform& platform, const std::vector<int>& node_ranks, int rail) {
  return node_ranks[rail_head_index(platform, node_ranks, rail)];
}

std::vector<int> rotate_to_rail(const Platform& platform, std::vector<int> node_ranks, int rail) {
  const auto head = static_cast<std::ptrdiff_t>(rail_head_index(platform, node_ranks, rail));
  std::rotate(node_ranks.begin(), node_ranks.begin() + head, node_ranks.end());
  return node_ranks;
}

std::vector<int> rails_used(const Platform& platform, const std::vector<std::vector<int>>& nodes) {
  if (nodes.size() <= 1) return {0};
  const NodeType& node = platform.spec().node;
  std::vector<char> present(static_cast<std::size_t>(node.gpus), 0);
  for (int r : nodes.front()) present[static_cast<std::size_t>(platform.local_of(r))] = 1;
  std::vector<int> rails;
  for (int rail = 0; rail < node.nics && static_cast<int>(rails.size()) < node.nccl_channels; ++rail) {
    if (present[static_cast<std::size_t>(rail * node.gpus / node.nics)]) rails.push_back(rail);
  }
  if (rails.empty()) rails.push_back(platform.local_of(nodes.front().front()) * node.nics / node.gpus);
  return rails;
}

std::vector<GroupSlot> group_slots(int groups, int channels, bool merge) {
  std::vector<GroupSlot> out;
  for (int c = 0; c < (merge ? groups : channels); ++c) {
    out.push_back({c % groups, merge ? channels_of(c, groups, channels) : 1.0});
  }
  return out;
}

}  // namespace commbound::network::internal
