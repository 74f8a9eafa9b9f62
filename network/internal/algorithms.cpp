#include "network/internal/algorithm.hpp"

#include "core/check.hpp"

#include <array>

namespace commbound::network::internal {

// The rows, each defined by its algorithm's file (network/algorithms.def names it).
#define COMMBOUND_ALGORITHM(id, row) extern const AlgorithmSpec row;
#include "network/algorithms.def"
#undef COMMBOUND_ALGORITHM

const AlgorithmSpec& algorithm_spec(Algorithm a) {
  // The registry: one row per algorithm, in Algorithm's order.
  static const std::array<const AlgorithmSpec*, kAlgorithms> kRows = {
#define COMMBOUND_ALGORITHM(id, row) &row,
#include "network/algorithms.def"
#undef COMMBOUND_ALGORITHM
  };
  const auto i = static_cast<std::size_t>(a);
  COMMBOUND_CHECK(i < kRows.size() && kRows[i]->id == a, "the algorithm registry is out of Algorithm's order");
  return *kRows[i];
}

}  // namespace commbound::network::internal
