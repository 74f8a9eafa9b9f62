#include "network/internal/algorithm.hpp"

#include "core/check.hpp"

#include <array>

namespace commbound::network::internal {

// The rows, each defined by its algorithm's file.
extern const AlgorithmSpec kRingAlgorithm;      // ring.cpp
extern const AlgorithmSpec kTreeAlgorithm;      // tree.cpp
extern const AlgorithmSpec kNvlsAlgorithm;      // nvls.cpp
extern const AlgorithmSpec kNvlsTreeAlgorithm;  // nvls.cpp
extern const AlgorithmSpec kPatAlgorithm;       // pat.cpp

const AlgorithmSpec& algorithm_spec(Algorithm a) {
  // The registry: one row per algorithm, in Algorithm's order.
  static const std::array<const AlgorithmSpec*, kAlgorithms> kRows = {
      &kRingAlgorithm, &kTreeAlgorithm, &kNvlsAlgorithm, &kNvlsTreeAlgorithm, &kPatAlgorithm};
  const auto i = static_cast<std::size_t>(a);
  COMMBOUND_CHECK(i < kRows.size() && kRows[i]->id == a, "the algorithm registry is out of Algorithm's order");
  return *kRows[i];
}

}  // namespace commbound::network::internal
