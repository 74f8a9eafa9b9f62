#include "sim/scenario/job_placement.hpp"

#include <cstdint>
#include <algorithm>
#include <string>

namespace commbound::sim {
namespace {

std::vector<int> free_nodes(const std::vector<bool>& taken) {
  std::vector<int> free;
  for (std::size_t n = 0; n < taken.size(); ++n) {
    if (!taken[n]) free.push_back(static_cast<int>(n));
  }
  return free;
}

Expected<NodeList> take(NodeList nodes, std::vector<bool>& taken) {
  for (int n : nodes) taken[static_cast<std::size_t>(n)] = true;
  return nodes;
}

Error too_few(int nodes, std::size_t free) {
  return Error{"needs " + std::to_string(nodes) + " nodes; " + std::to_string(free) +
               " of the cluster's are free of the jobs placed before it"};
}

}  // namespace

Expected<NodeList> place_ranges(const std::vector<std::pair<int, int>>& ranges, std::vector<bool>& taken) {
  const int cluster = static_cast<int>(taken.size());
  std::vector<bool> mine(taken.size(), false);
  NodeList nodes;
  for (const auto& [first, last] : ranges) {
    const std::string range = "[" + std::to_string(first) + ", " + std::to_string(last) + "]";
    if (first < 0 || last < first || last >= cluster) {
      return Error{range + " is not a range of the cluster's nodes 0 to " + std::to_string(cluster - 1)};
    }
    for (int n = first; n <= last; ++n) {
      if (taken[static_cast<std::size_t>(n)]) return Error{range + ": node " + std::to_string(n) + " runs another job"};
      if (mine[static_cast<std::size_t>(n)]) return Error{range + ": node " + std::to_string(n) + " is in an earlier range"};
      mine[static_cast<std::size_t>(n)] = true;
      nodes.push_back(n);
    }
  }
  return take(std::move(nodes), taken);
}

Expected<NodeList> place_packed(int nodes, std::vector<bool>& taken) {
  const std::vector<int> free = free_nodes(taken);
  if (static_cast<std::size_t>(nodes) > free.size()) return too_few(nodes, free.size());
  return take(NodeList(free.begin(), free.begin() + nodes), taken);
}

Expected<NodeList> place_spread(int nodes, std::vector<bool>& taken) {
  const std::vector<int> free = free_nodes(taken);
  if (static_cast<std::size_t>(nodes) > free.size()) return too_few(nodes, free.size());
  NodeList picked;
  for (std::int64_t i = 0; i < nodes; ++i) {
    picked.push_back(free[static_cast<std::size_t>(i * static_cast<std::int64_t>(free.size()) / nodes)]);
  }
  return take(std::move(picked), taken);
}

std::vector<std::pair<int, int>> consecutive_ranges(const NodeList& nodes) {
  std::vector<std::pair<int, int>> ranges;
  for (std::size_t i = 0; i < nodes.size();) {
    std::size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
    ranges.emplace_back(nodes[i], nodes[j]);
    i = j + 1;
  }
  return ranges;
}

std::string node_ranges_text(const NodeList& nodes) {
  // Every k-th node (a spread job): its first two, the last and the stride.
  if (nodes.size() >= 3 && nodes[1] - nodes[0] > 1) {
    const int stride = nodes[1] - nodes[0];
    bool even = true;
    for (std::size_t i = 1; i < nodes.size() && even; ++i) even = nodes[i] - nodes[i - 1] == stride;
    if (even) {
      return std::to_string(nodes[0]) + ", " + std::to_string(nodes[1]) + ", ..., " + std::to_string(nodes.back()) +
             " (stride " + std::to_string(stride) + ")";
    }
  }
  std::vector<std::string> ranges;
  for (const auto& [first, last] : consecutive_ranges(nodes)) {
    ranges.push_back(first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last));
  }
  constexpr std::size_t kShownRanges = 6;  // a readable report line
  std::string text;
  for (std::size_t r = 0; r < std::min(ranges.size(), kShownRanges); ++r) text += (r == 0 ? "" : ", ") + ranges[r];
  if (ranges.size() > kShownRanges) text += ", ... (" + std::to_string(ranges.size()) + " ranges, " + std::to_string(nodes.size()) + " nodes)";
  return text;
}

}  // namespace commbound::sim
