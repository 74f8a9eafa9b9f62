// The algorithm registry (network/internal/algorithm.hpp): one row per Algorithm, in its order,
// every name read back to its algorithm, every row complete, no two sharing a constants key (a row
// without one reads no constants).
#include "network/internal/algorithm.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace commbound::network::internal {
namespace {

TEST(AlgorithmRegistry, OneCompleteRowPerAlgorithm) {
  std::set<std::string> keys;
  for (Algorithm a : kAllAlgorithms) {
    const AlgorithmSpec& spec = algorithm_spec(a);
    EXPECT_EQ(spec.id, a);
    EXPECT_EQ(parse_algorithm(spec.name), a) << spec.name;
    if (spec.constants_key != nullptr) {
      EXPECT_TRUE(keys.insert(spec.constants_key).second) << spec.constants_key;
    }
    EXPECT_TRUE(spec.unsupported && spec.latency_s && spec.alg_bw_bytes_per_s && spec.run) << spec.name;
  }
  EXPECT_EQ(algorithm_names().size(), static_cast<std::size_t>(kAlgorithms));
}

}  // namespace
}  // namespace commbound::network::internal
