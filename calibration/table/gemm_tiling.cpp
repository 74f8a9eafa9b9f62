#include "calibration/table/gemm_tiling.hpp"

#include "core/ceil_div.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <vector>

namespace commbound::calibration {
namespace {

// Above this many tiles the group is taken as fluid (gemm_tiling.hpp).
constexpr std::int64_t kMaxSimulatedTiles = std::int64_t{1} << 18;

// One product of a group: `tiles` output tiles of `steps` main-loop steps each.
struct Product {
  std::int64_t tiles = 0, steps = 0;
};

}  // namespace

model::GemmShape merged_product(const model::GemmShape& s) {
  if (s.group.empty()) return s;
  model::GemmShape merged = s;
  merged.group.clear();
  const auto experts = static_cast<std::int64_t>(s.group.size());
  const std::int64_t tokens = s.token_rows();
  if (s.layout == model::GemmLayout::wgrad) {
    merged.m = s.m * experts;
    merged.k = ceil_div(tokens, experts);
  } else {
    merged.m = tokens;
  }
  return merged;
}

double gemm_drain_steps(const model::GemmShape& s, const GemmTiling& t, long slots) {
  const bool wgrad = s.layout == model::GemmLayout::wgrad;
  std::vector<Product> products;
  const std::vector<std::int64_t> rows = s.group.empty() ? std::vector<std::int64_t>{s.token_rows()} : s.group;
  for (std::int64_t r : rows) {
    if (r <= 0) continue;
    // wgrad: dW [m x n] tiled whole, each tile reducing over the product's tokens; forward and
    // dgrad: [tokens x n] tiled, each tile looping over k.
    products.push_back(wgrad ? Product{ceil_div(s.m, t.block_m) * ceil_div(s.n, t.block_n), ceil_div(r, t.block_k)}
                             : Product{ceil_div(r, t.block_m) * ceil_div(s.n, t.block_n), ceil_div(s.k, t.block_k)});
  }
  std::int64_t tiles = 0;
  double steps = 0;
  for (const Product& p : products) tiles += p.tiles, steps += static_cast<double>(p.tiles * p.steps);
  if (tiles > kMaxSimulatedTiles) return steps / static_cast<double>(slots);
  // Each slot's finishing time; the next tile goes to the slot free first.
  std::priority_queue<std::int64_t, std::vector<std::int64_t>, std::greater<>> free_at;
  for (long i = 0; i < std::min<std::int64_t>(slots, tiles); ++i) free_at.push(0);
  std::int64_t last = 0;
  for (const Product& p : products) {
    for (std::int64_t i = 0; i < p.tiles; ++i) {
      const std::int64_t done = free_at.top() + p.steps;
      free_at.pop();
      free_at.push(done);
      last = std::max(last, done);
    }
  }
  return static_cast<double>(last);
}

}  // namespace commbound::calibration
