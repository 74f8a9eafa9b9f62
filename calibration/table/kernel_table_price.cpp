// Pricing a kernel from a table: its own row, else the nearest measured shape of its kind at that
// shape's achieved rate, else the table's roofline; PyTorch's elementwise kernels by their paths.
#include "calibration/table/kernel_table.hpp"

#include "calibration/table/attention_tiling.hpp"
#include "calibration/table/gemm_tiling.hpp"
#include "calibration/table/internal/elementwise_runs.hpp"
#include "core/check.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace commbound::calibration {

// The kernel shapes this table prices are model/'s.
using namespace commbound::model;
namespace {

// PyTorch's indexed elementwise kernel (ATen Loops.cuh's launch_legacy_kernel: every operand's
// offset computed per element, scalar loads) is bound by the SMs' instruction issue, not by HBM.
// Its rate per SM per clock, from a public measurement on H200 (the same GH100 SMs as H100): the
// tile-ai/TileOPs pull request 500 benchmark (PyTorch 2.9.1, CUDA 12.8) times F.prelu on
// (1024 x 10240) fp16 with one weight per channel (a broadcast operand: the indexed path) at
// 1.18 TB/s, its input read and output written (41.9 MB): 35.5 us for 10,485,760 elements,
// 2.95e11 elements/s over 132 SMs at 1980 MHz (DERIVED: assumes the kernel ran at the maximum SM
// clock, as a memory-bound kernel far below the power limit does). The same benchmark's
// same-shape ops (leaky_relu) reach 2.57 TB/s.
constexpr double kIndexedElementsPerSmCycle = 10485760 / 35.5e-6 / (132 * 1980e6);
// A row whose causality differs from the shape's is used only when no row of the same causality
// exists: its distance gets this penalty (larger than any log-distance between real shapes).
constexpr double kCausalMismatchPenalty = 1e3;

double log_gap(std::int64_t a, std::int64_t b) {
  const double d = std::log(static_cast<double>(a)) - std::log(static_cast<double>(b));
  return d * d;
}

const KernelTiming& timed(const std::optional<KernelTiming>& t) {
  COMMBOUND_CHECK(t.has_value(), "pricing from an untimed row");
  return *t;
}

// A row's run-to-run spread relative to its median: (p90 - p10) / p50.
double spread(const std::optional<KernelTiming>& t) {
  const KernelTiming& k = timed(t);
  return (k.p90_s - k.p10_s) / k.p50_s;
}


}  // namespace

std::optional<double> KernelTable::fp8_ratio(const GemmShape& shape, const std::string& scaling) const {
  const Fp8GemmRow* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const Fp8GemmRow& r : fp8_gemms_) {
    if (r.scaling != scaling) continue;
    const double d = log_gap(r.m, shape.m) + log_gap(r.n, shape.n) + log_gap(r.k, shape.k);
    if (d < best_d) best_d = d, best = &r;
  }
  if (best == nullptr) return std::nullopt;
  return best->fp8_s / best->bf16_s;
}

// A framework's elementwise kernel: no row measures it, but the rows of the measured kernel that
// moves bytes the same way do. Their times against their bytes fit a line t = t0 + bytes / rate:
// t0 the fixed cost of a kernel (launch to completion on an idle GPU, what a tiny kernel takes),
// rate the streaming bandwidth a large one reaches. The rows span two orders of magnitude of bytes
// and a framework's kernels sit at the small end, so the fit minimises each row's relative error
// (least squares weighted by 1 / t^2), not its absolute error: unweighted, the largest rows set
// the line, and one of them slower than the rest (H100's 1.6 GB residual_add, 15% above the line
// of the others) turned t0 negative and priced the 25 MB row 28% fast. Weighted, the H100 fit is
// t0 = 4.0 us and 3.06 TB/s (rmsnorm_forward: 3.7 us and 2.75 TB/s), within 1% of every
// residual_add row from 25 MB to 1.2 GB and within 3% of every rmsnorm_forward row but one.
// Fewer than two rows (or a fit without a positive rate): the roofline.
Priced KernelTable::price_elementwise(const ElementwiseShape& s) const {
  if (const auto queued_s = pytorch_elementwise_s(s)) return {*queued_s, Match::nearest, 0};
  const bool reduces = s.kind == ElementwiseKind::reduction || s.kind == ElementwiseKind::column_reduction;
  const char* reference = reduces ? "rmsnorm_forward" : "residual_add";
  double n = 0, w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, spreads = 0;
  for (const MemoryBoundRow& r : memory_bounds_) {
    if (r.shape.op != reference) continue;
    const double x = r.shape.bytes(), y = timed(r.time).p50_s;
    if (y <= 0) continue;
    const double weight = 1 / (y * y);
    n += 1, spreads += spread(r.time);
    w += weight, sx += weight * x, sy += weight * y, sxx += weight * x * x, sxy += weight * x * y;
  }
  const double det = w * sxx - sx * sx;
  if (n < 2 || det <= 0) return roofline(0, s.bytes);
  const double seconds_per_byte = (w * sxy - sx * sy) / det;
  if (seconds_per_byte <= 0) return roofline(0, s.bytes);
  const double fixed_s = std::max(0.0, (sy - seconds_per_byte * sx) / w);
  const double streamed_s = fixed_s + s.bytes * seconds_per_byte;
  return {std::max(streamed_s, indexed_issue_s(s)), Match::nearest, spreads / n};
}

// The [[pytorch_elementwise]] price of `s` (the header's rule), or nullopt without rows of its path.
std::optional<double> KernelTable::pytorch_elementwise_s(const ElementwiseShape& s) const {
  const auto path_of = [](ElementwiseKind kind) {
    switch (kind) {
      case ElementwiseKind::streaming: return "vectorized";
      case ElementwiseKind::cast: return "unrolled";
      case ElementwiseKind::reduction: return "reduction";
      case ElementwiseKind::column_reduction: return "column_reduction";
      case ElementwiseKind::indexed: return "indexed";
    }
    return "vectorized";
  };
  const auto runs = internal::op_runs(elementwise_rows_);
  const auto has_path = [&](const std::string& path) {
    return std::any_of(runs.begin(), runs.end(), [&](const auto& run) { return elementwise_rows_[run.first].path == path; });
  };
  std::string path = path_of(s.kind);
  // A table timed before column reductions were: they take the row reductions' rows.
  if (s.kind == ElementwiseKind::column_reduction && !has_path(path)) path = "reduction";
  const bool by_bytes = s.kind == ElementwiseKind::streaming;
  const auto size = [&](const ElementwiseRow& r) { return by_bytes ? r.bytes : static_cast<double>(r.elements); };
  const double shape_size = by_bytes ? s.bytes : static_cast<double>(s.elements);
  // A shape moving no bytes (a kernel on a few scalars) counts as one byte per element.
  const double per_element = s.elements > 0 && s.bytes > 0 ? s.bytes / static_cast<double>(s.elements) : 1;
  // A reduction of known width takes the ops timed with a width, by the log-distance over bytes per
  // element and width; the others (and every shape where no op has a width) those timed without.
  const bool by_width = s.width > 0 && std::any_of(runs.begin(), runs.end(), [&](const auto& run) {
                          const ElementwiseRow& r = elementwise_rows_[run.first];
                          return r.path == path && !r.warm && r.width > 0;
                        });
  struct Op {
    std::size_t first, last;
    double distance;
  };
  std::vector<Op> ops;
  for (const auto& [first, last] : runs) {
    const ElementwiseRow& r = elementwise_rows_[first];
    if (r.path != path || r.warm || (r.width > 0) != by_width) continue;
    const double d_bytes = std::log(r.bytes / static_cast<double>(r.elements) / per_element);
    const double d_width = by_width ? std::log(static_cast<double>(r.width) / static_cast<double>(s.width)) : 0;
    ops.push_back({first, last, std::hypot(d_bytes, d_width)});
  }
  if (ops.empty()) return std::nullopt;
  const double nearest = std::min_element(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
                           return a.distance < b.distance;
                         })->distance;
  // The op's warm rows, where they reach the shape's size (past them its operands outgrow L2).
  const auto warm_run = [&](const Op& cold) -> std::optional<Op> {
    const ElementwiseRow& c = elementwise_rows_[cold.first];
    for (const auto& [first, last] : runs) {
      const ElementwiseRow& w = elementwise_rows_[first];
      if (w.warm && w.path == c.path && w.op == c.op && shape_size <= size(elementwise_rows_[last - 1])) {
        return Op{first, last, cold.distance};
      }
    }
    return std::nullopt;
  };
  const auto at_size = [&](const Op& op) {
    const ElementwiseRow* rows = &elementwise_rows_[op.first];
    const std::size_t n = op.last - op.first;
    std::size_t above = 0;  // the first row at or above the shape's size
    while (above < n && size(rows[above]) < shape_size) ++above;
    if (above == 0) return rows[0].queued_s;
    if (above == n) return rows[n - 1].queued_s * shape_size / size(rows[n - 1]);
    const ElementwiseRow &a = rows[above - 1], &b = rows[above];
    return a.queued_s + (b.queued_s - a.queued_s) * (shape_size - size(a)) / (size(b) - size(a));
  };
  const double fresh_share = s.bytes > 0 ? std::clamp(s.fresh_bytes / s.bytes, 0.0, 1.0) : 0;
  double sum_s = 0;
  int count = 0;
  for (const Op& cold : ops) {
    if (cold.distance > nearest + 1e-9) continue;
    const double cold_s = at_size(cold);
    const std::optional<Op> warm = fresh_share > 0 ? warm_run(cold) : std::nullopt;
    sum_s += warm ? cold_s + (at_size(*warm) - cold_s) * fresh_share : cold_s;
    ++count;
  }
  return sum_s / count;
}

// An indexed kernel's time at its SMs' issue rate: 0 for the other kinds, and where the table
// does not name its SMs and clock (derived tables), which leaves it on the streaming line.
double KernelTable::indexed_issue_s(const ElementwiseShape& s) const {
  if (s.kind != ElementwiseKind::indexed || !provenance_ || !provenance_->sm_count || !provenance_->sm_clock_max_hz) {
    return 0;
  }
  const double elements_per_s =
      kIndexedElementsPerSmCycle * static_cast<double>(*provenance_->sm_count) * *provenance_->sm_clock_max_hz;
  return static_cast<double>(s.elements) / elements_per_s;
}

// A nearest attention row's time carried to `s`: by the ratio of the two grids' drain times where
// the implementation's tiling is known and the table names its SM count (attention_tiling.hpp),
// else by the ratio of their FLOPs.
double KernelTable::attention_scale(const AttentionShape& s, const AttentionShape& row,
                                    const std::string& implementation) const {
  const auto tiling = implementation == "flash2"  ? flash2_tiling(s.head_dim, s.direction)
                      : implementation == "cudnn" ? cudnn_tiling(s.head_dim, s.direction)
                                                  : std::nullopt;
  const std::optional<long> sms = provenance_ ? provenance_->sm_count : std::nullopt;
  if (!tiling || !sms) return s.flops() / row.flops();
  const long slots = *sms * tiling->ctas_per_sm;
  return attention_drain_tiles(s, *tiling, slots) / attention_drain_tiles(row, *tiling, slots);
}

// A grouped product (gemm_tiling.hpp): its merged product's price, times the ratio of the group's
// drain time to the merged product's where the table names its SM count: the experts' padding to
// whole tiles and their shared waves, what one product of the same rows does not pay.
Priced KernelTable::price_grouped(const GemmShape& s) const {
  if (s.token_rows() <= 0) return {0, Match::exact};  // no expert received a token: nothing launched
  const GemmShape merged = merged_product(s);
  Priced p = price(merged);
  if (p.match == Match::exact) p.match = Match::nearest;  // no row measures the group itself
  const std::optional<long> sms = provenance_ ? provenance_->sm_count : std::nullopt;
  if (!sms) return p;
  const long slots = *sms * kCublasH100Tiling.ctas_per_sm;
  p.seconds *= gemm_drain_steps(s, kCublasH100Tiling, slots) / gemm_drain_steps(merged, kCublasH100Tiling, slots);
  return p;
}

Priced KernelTable::roofline(double flops, double bytes) const {
  const TableDevice& d = device();
  return {std::max(flops / d.gemm_flops_per_s, bytes / d.copy_bytes_per_s), Match::roofline};
}

Priced KernelTable::price(const KernelShape& shape, const std::string& attention_implementation) const {
  if (const auto* s = std::get_if<GemmShape>(&shape)) {
    if (!s->group.empty()) return price_grouped(*s);
    const GemmRow* best = nullptr;
    double best_d = std::numeric_limits<double>::infinity();
    for (const auto& r : gemms_) {
      if (r.shape.layout != s->layout) continue;
      if (r.shape == *s) return {timed(r.time).p50_s, Match::exact, spread(r.time)};
      const double d = log_gap(r.shape.m, s->m) + log_gap(r.shape.n, s->n) + log_gap(r.shape.k, s->k);
      if (d < best_d) best_d = d, best = &r;
    }
    if (best == nullptr) return roofline(s->flops(), s->bytes());
    return {timed(best->time).p50_s * s->flops() / best->shape.flops(), Match::nearest, spread(best->time)};
  }
  if (const auto* s = std::get_if<AttentionShape>(&shape)) {
    // The rows' head_dim: the shape's where measured, else the nearest measured (the larger on a tie).
    std::int64_t head_dim = 0;
    double head_d = std::numeric_limits<double>::infinity();
    for (const auto& r : attentions_) {
      if (r.implementation != attention_implementation || r.shape.direction != s->direction) continue;
      const double d = log_gap(r.shape.head_dim, s->head_dim);
      if (d < head_d || (d == head_d && r.shape.head_dim > head_dim)) head_d = d, head_dim = r.shape.head_dim;
    }
    const AttentionRow* best = nullptr;
    double best_d = std::numeric_limits<double>::infinity();
    for (const auto& r : attentions_) {
      if (r.implementation != attention_implementation || r.shape.direction != s->direction ||
          r.shape.head_dim != head_dim) {
        continue;
      }
      if (r.shape == *s) return {timed(r.time).p50_s, Match::exact, spread(r.time)};
      const double d = log_gap(r.shape.batch, s->batch) + log_gap(r.shape.heads, s->heads) +
                       log_gap(r.shape.kv_heads, s->kv_heads) + log_gap(r.shape.seq, s->seq) +
                       (r.shape.causal != s->causal ? kCausalMismatchPenalty : 0);
      if (d < best_d) best_d = d, best = &r;
    }
    if (best == nullptr) return roofline(s->flops(), s->bytes());
    const double scale = head_dim == s->head_dim ? attention_scale(*s, best->shape, attention_implementation)
                                                 : s->flops() / best->shape.flops();
    return {timed(best->time).p50_s * scale, Match::nearest, spread(best->time)};
  }
  if (const auto* s = std::get_if<MemoryBoundShape>(&shape)) {
    const MemoryBoundRow* best = nullptr;
    double best_d = std::numeric_limits<double>::infinity();
    for (const auto& r : memory_bounds_) {
      if (r.shape.op != s->op) continue;
      if (r.shape == *s) return {timed(r.time).p50_s, Match::exact, spread(r.time)};
      const double d = log_gap(r.shape.tokens, s->tokens) + log_gap(r.shape.width, s->width);
      if (d < best_d) best_d = d, best = &r;
    }
    if (best == nullptr) return roofline(0, s->bytes());
    // The row's achieved bytes/s applied to this shape's bytes, both counted by the same formula.
    return {timed(best->time).p50_s * s->bytes() / best->shape.bytes(), Match::nearest, spread(best->time)};
  }
  if (const auto* s = std::get_if<ElementwiseShape>(&shape)) return price_elementwise(*s);
  return {0, Match::exact};  // std::monostate: no kernel
}
}  // namespace commbound::calibration
