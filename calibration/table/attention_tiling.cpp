#include "calibration/table/attention_tiling.hpp"

#include "core/ceil_div.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <vector>

namespace commbound::calibration {

// The kernel shapes this table prices are model/'s.
using namespace commbound::model;
namespace {

// Above this many CTAs the grid is taken as fluid (attention_tiling.hpp).
constexpr std::int64_t kMaxSimulatedCtas = std::int64_t{1} << 18;

// The score tiles each CTA of one (batch, head) computes, in launch order. The tile ranges are
// FlashAttention-2's (flash_fwd_kernel.h n_block_min / n_block_max, flash_bwd_kernel.h
// m_block_min / m_block_max, equal query and key lengths): a window keeps a query tile from the
// key tiles wholly before its first row's window, and a key tile from the query tiles wholly past
// its last row's reach.
std::vector<double> tiles_per_cta(const AttentionShape& s, const AttentionTiling& t) {
  const std::int64_t m_tiles = ceil_div(s.seq, t.block_m), n_tiles = ceil_div(s.seq, t.block_n);
  const bool local = s.causal && s.window > 0;
  const std::int64_t left = s.window - 1;  // keys before its own a query sees (window_size_left)
  std::vector<double> tiles;
  if (s.direction == Direction::forward) {
    // Query tile m reads key tiles up to the diagonal, those below (m + 1) block_m rows; with a
    // window, from the one holding key m block_m - left.
    for (std::int64_t m = 0; m < m_tiles; ++m) {
      const std::int64_t last = s.causal ? ceil_div(std::min((m + 1) * t.block_m, s.seq), t.block_n) : n_tiles;
      const std::int64_t first = local ? std::max<std::int64_t>(0, (m * t.block_m - left) / t.block_n) : 0;
      tiles.push_back(static_cast<double>(last - first));
    }
  } else {
    // Key tile n meets the query tiles from the one holding its first row to the last; with a
    // window, up to the one holding query (n + 1) block_n - 1 + left, the last its rows reach.
    for (std::int64_t n = 0; n < n_tiles; ++n) {
      const std::int64_t first = s.causal ? n * t.block_n / t.block_m : 0;
      const std::int64_t last = local ? std::min(m_tiles, ceil_div((n + 1) * t.block_n + left, t.block_m)) : m_tiles;
      tiles.push_back(static_cast<double>(last - first));
    }
  }
  return tiles;
}

}  // namespace

std::optional<AttentionTiling> flash2_tiling(std::int64_t head_dim, Direction direction) {
  const bool forward = direction == Direction::forward;
  if (head_dim == 128) return forward ? AttentionTiling{128, 64, 2} : AttentionTiling{64, 128, 1};
  if (head_dim == 64) return forward ? AttentionTiling{128, 128, 2} : AttentionTiling{128, 128, 1};
  return std::nullopt;
}

std::optional<AttentionTiling> cudnn_tiling(std::int64_t head_dim, Direction direction) {
  if (head_dim != 128) return std::nullopt;
  return direction == Direction::forward ? AttentionTiling{128, 128, 1} : AttentionTiling{64, 128, 1};
}

double attention_drain_tiles(const AttentionShape& s, const AttentionTiling& tiling, long slots) {
  const std::vector<double> group = tiles_per_cta(s, tiling);
  const std::int64_t groups = s.batch * s.heads;
  const auto ctas = groups * static_cast<std::int64_t>(group.size());
  if (ctas <= slots) return group.empty() ? 0 : *std::max_element(group.begin(), group.end());  // all at once
  if (ctas > kMaxSimulatedCtas) {
    const double per_group = std::accumulate(group.begin(), group.end(), 0.0);
    return per_group * static_cast<double>(groups) / static_cast<double>(slots);
  }
  // Each slot's finishing time; the next CTA goes to the slot free first.
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (long i = 0; i < slots; ++i) free_at.push(0);
  double last = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    for (double tiles : group) {
      const double done = free_at.top() + tiles;
      free_at.pop();
      free_at.push(done);
      last = std::max(last, done);
    }
  }
  return last;
}

}  // namespace commbound::calibration
