// Job placement: which of a cluster's nodes each job of a [[job]] scenario runs on.
//
// Why: jobs that share a cluster meet only where their traffic crosses the same links, so where
// each one sits decides what it loses: packed onto neighbouring nodes (one leaf, one pod), spread
// over the whole cluster (every leaf's up-links carry some of it), or on node ranges the user names,
// as a scheduler's allocation would. Jobs never share a node.
#pragma once

#include "core/expected.hpp"

#include <string>
#include <utility>
#include <vector>

namespace commbound::sim {

// A job's nodes as the cluster numbers them, in the job's own node order.
using NodeList = std::vector<int>;

// The nodes of a cluster of `taken.size()` nodes that are still free; each placement below takes
// its nodes from it (marks them taken) or fails, taking none, with the reason.
//   place_ranges: the inclusive ranges [first, last], in order; each inside the cluster, none
//                 overlapping another or a node already taken.
//   place_packed: the lowest-numbered free nodes.
//   place_spread: free nodes spaced evenly over the free ones (free node floor(i * free / nodes)
//                 for i = 0 .. nodes - 1), so the job reaches across the whole cluster.
Expected<NodeList> place_ranges(const std::vector<std::pair<int, int>>& ranges, std::vector<bool>& taken);
Expected<NodeList> place_packed(int nodes, std::vector<bool>& taken);
Expected<NodeList> place_spread(int nodes, std::vector<bool>& taken);

// The node list as runs of consecutive nodes, each (first, last) inclusive, in the list's order.
std::vector<std::pair<int, int>> consecutive_ranges(const NodeList& nodes);

// A node list for a report: ranges of consecutive nodes ("0-127, 256-383", the first 6 ranges and
// a count beyond), or every k-th node as "0, 2, ..., 510 (stride 2)".
std::string node_ranges_text(const NodeList& nodes);

}  // namespace commbound::sim
