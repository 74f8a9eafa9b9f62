// NCCL's trees against the illustrations in NCCL's own source (src/graph/trees.cc: ncclGetBtree,
// ncclGetDtree), read off as parent tables, and the double binary tree's defining property.
#include "network/internal/tree.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace commbound::network::internal {
namespace {

void expect_parents(int n, int tree, const std::vector<int>& parent) {
  ASSERT_EQ(static_cast<int>(parent.size()), n);
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(dtree_parent(n, tree, rank), parent[rank]) << "n " << n << ", tree " << tree << ", rank " << rank;
  }
}

// The binary tree over 14 ranks: 0 at the root with one child, 8; under 8, 4 and 12; under 4, 2
// and 6; under 12, 10 and 13 (14 is out of bounds, so 13 hangs from 12); the odd ranks are leaves
// under their even neighbours: 1 and 3 under 2, 5 and 7 under 6, 9 and 11 under 10.
TEST(NcclTree, BinaryTreeMatchesNccl) {
  const std::vector<int> parent = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
  for (int rank = 0; rank < 14; ++rank) EXPECT_EQ(btree_parent(14, rank), parent[rank]) << "rank " << rank;
  expect_parents(14, 0, parent);
}

// Even count, 12 ranks: the second tree is the first mirrored. 11 at the root with one child, 3;
// under 3, 1 and 7; under 7, 5 and 9; leaves 0 and 2 under 1, 4 and 6 under 5, 8 and 10 under 9.
TEST(NcclTree, SecondTreeMirrorsForEvenCounts) {
  expect_parents(12, 1, {1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1});
}

// Odd count, 13 ranks: the second tree is the first shifted by one. 1 at the root with one child,
// 9; under 9, 5 and 0; under 5, 3 and 7; under 0, 11; leaves 2 and 4 under 3, 6 and 8 under 7,
// 10 and 12 under 11.
TEST(NcclTree, SecondTreeShiftsByOneForOddCounts) {
  expect_parents(13, 1, {9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11});
}

std::set<int> interior(int n, int tree) {
  std::set<int> out;
  for (int rank = 0; rank < n; ++rank) {
    if (const int up = dtree_parent(n, tree, rank); up >= 0) out.insert(up);
  }
  return out;
}

// For an even count no rank forwards data in both trees (the point of a double binary tree: each
// rank's links carry one tree's reduction, the other tree sees it as a leaf).
TEST(NcclTree, DoubleTreeInteriorsAreDisjointForEvenCounts) {
  for (int n : {2, 4, 6, 14, 64}) {
    const std::set<int> second = interior(n, 1);
    for (int r : interior(n, 0)) EXPECT_EQ(second.count(r), 0u) << "n " << n << ", rank " << r;
  }
}

}  // namespace
}  // namespace commbound::network::internal
