// A table for another GPU, scaled from a measured one by datasheet or achievable ratios.
#include "calibration/table/kernel_table.hpp"

#include "calibration/table/internal/elementwise_runs.hpp"
#include "core/check.hpp"
#include "core/units.hpp"

namespace commbound::calibration {

// The kernel shapes this table prices are model/'s.
using namespace commbound::model;
namespace {

KernelTiming scaled(const std::optional<KernelTiming>& t, double f) {
  COMMBOUND_CHECK(t.has_value(), "deriving from an untimed row");
  return {t->p10_s * f, t->p50_s * f, t->p90_s * f};
}

}  // namespace

KernelTable KernelTable::derive(const Datasheet& from, const Datasheet& to, const std::string& source_path,
                                const std::string& date) const {
  const bool achievable_compute = to.achievable_gemm_flops_per_s > 0;
  const bool achievable_memory = to.achievable_copy_bytes_per_s > 0;
  // Time ratios of compute-bound and memory-bound kernels.
  const double compute = achievable_compute ? device().gemm_flops_per_s / to.achievable_gemm_flops_per_s
                                            : from.peak_flops_per_s / to.peak_flops_per_s;
  const double memory = achievable_memory ? device().copy_bytes_per_s / to.achievable_copy_bytes_per_s
                                          : from.hbm_bytes_per_s / to.hbm_bytes_per_s;
  const double watts = to.tdp_w / from.tdp_w;
  auto short_fmt = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  auto peak_name = [&](const Datasheet& d) {
    return "dense " + d.peak_dtype + " " + short_fmt(d.peak_flops_per_s / kFlopsPerTFLOP) + " TFLOP/s";
  };
  const TableProvenance& source = provenance();
  KernelTable g;
  g.display_path_ = display_path_;
  TableProvenance p;
  p.gpu = to.description;
  p.memory_bytes = to.memory_bytes;
  p.date = date;
  p.tool_commit = source.tool_commit;
  p.derived = true;
  p.derived_from = source_path + " (" + source.gpu + ", " + source.date + ")";
  if (to.sm_count > 0) p.sm_count = to.sm_count;  // the target's datasheet: what SM-bound kernels scale by
  if (to.sm_clock_max_hz > 0) p.sm_clock_max_hz = to.sm_clock_max_hz;
  const std::string dtype_note =
      from.peak_dtype == to.peak_dtype ? "" : " (" + to.name + " has no " + from.peak_dtype + ": its " + to.peak_dtype + " tensor peak)";
  const std::string compute_why =
      achievable_compute ? from.name + " measured GEMM " + short_fmt(device().gemm_flops_per_s / kFlopsPerTFLOP) +
                               " TFLOP/s ([device]) / " + to.name + " achievable GEMM " +
                               short_fmt(to.achievable_gemm_flops_per_s / kFlopsPerTFLOP) + " TFLOP/s"
                         : from.name + " " + peak_name(from) + " / " + to.name + " " + peak_name(to) + dtype_note;
  const std::string memory_why =
      achievable_memory ? "measured copy " + short_fmt(device().copy_bytes_per_s / kBytesPerGB) + " / achievable copy " +
                              short_fmt(to.achievable_copy_bytes_per_s / kBytesPerGB) + " GB/s"
                        : "HBM " + short_fmt(from.hbm_bytes_per_s / kBytesPerGB) + " / " +
                              short_fmt(to.hbm_bytes_per_s / kBytesPerGB) + " GB/s";
  p.derivation = "GEMM and attention times x " + short_fmt(compute) + " (" + compute_why + "), memory-bound times x " +
                 short_fmt(memory) + " (" + memory_why + "), power x " + short_fmt(watts) + " (TDP " +
                 short_fmt(to.tdp_w) + " / " + short_fmt(from.tdp_w) + " W, crude), contention copied; " +
                 (achievable_compute || achievable_memory ? "achievable rates from " + to.achievable_source + ", " : "") +
                 "datasheet figures from calibration/gpus.toml";
  // PyTorch's indexed elementwise path is bound by its SMs' issue rate (indexed_issue_s).
  const bool sm_rates = source.sm_count && source.sm_clock_max_hz && to.sm_count > 0 && to.sm_clock_max_hz > 0;
  const double issue = sm_rates ? static_cast<double>(*source.sm_count) * *source.sm_clock_max_hz /
                                      (static_cast<double>(to.sm_count) * to.sm_clock_max_hz)
                                : memory;
  if (!elementwise_rows_.empty()) {
    p.derivation += "; PyTorch elementwise rows: each op's smallest row's time kept, the rest x " + short_fmt(memory) +
                    " (indexed path: x " + short_fmt(issue) + (sm_rates ? ", SMs x clock)" : ", the memory ratio)") +
                    ", L2-warm rows not carried (warm kernels priced cold)";
  }
  if (power_ && !power_->limit_gemm_share.empty()) p.derivation += "; power-limit curve copied from " + from.name;
  g.provenance_ = p;
  g.device_ = TableDevice{device().copy_bytes_per_s / memory, device().gemm_flops_per_s / compute};
  for (GemmRow r : gemms_) {
    r.time = scaled(r.time, compute);
    g.add(r);
  }
  for (AttentionRow r : attentions_) {
    r.time = scaled(r.time, compute);
    g.add(r);
  }
  for (MemoryBoundRow r : memory_bounds_) {
    r.time = scaled(r.time, memory);
    g.add(r);
  }
  for (const auto& [first, last] : internal::op_runs(elementwise_rows_)) {
    if (elementwise_rows_[first].warm) continue;  // L2's size and bandwidth are not the HBM's ratio
    const double launch_s = elementwise_rows_[first].queued_s;  // the op's smallest row
    const double ratio = elementwise_rows_[first].path == "indexed" ? issue : memory;
    for (std::size_t i = first; i < last; ++i) {
      ElementwiseRow r = elementwise_rows_[i];
      r.queued_s = launch_s + (r.queued_s - launch_s) * ratio;
      g.add(r);
    }
  }
  if (power_) {
    TablePower w;
    w.idle_w = power_->idle_w * watts;
    w.gemm_w = power_->gemm_w * watts;
    w.memory_bound_w = power_->memory_bound_w * watts;
    if (power_->mixed_w) w.mixed_w = *power_->mixed_w * watts;
    w.mixed_compute_fraction = power_->mixed_compute_fraction;
    w.power_limit_w = to.tdp_w;  // the target's board limit (datasheet TDP)
    // The slowdown at the limit by compute-bound share: the source GPU's measured curve, copied.
    w.limit_gemm_share = power_->limit_gemm_share;
    w.limit_gemm_slowdown = power_->limit_gemm_slowdown;
    g.power_ = w;
  }
  g.contention_ = contention_;
  return g;
}
}  // namespace commbound::calibration
