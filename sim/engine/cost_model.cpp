#include "sim/engine/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace commbound::sim {
namespace {

using calibration::Match;
using calibration::Priced;

// "gemm", "attention", "memory_bound" or "elementwise": the kind of a kernel shape, as reports
// count fallbacks.
const char* kind_of(const model::KernelShape& k) {
  if (std::holds_alternative<model::GemmShape>(k)) return "gemm";
  if (std::holds_alternative<model::AttentionShape>(k)) return "attention";
  if (std::holds_alternative<model::ElementwiseShape>(k)) return "elementwise";
  return "memory_bound";
}

}  // namespace

CostModel::CostModel(const GpuSpec& gpu, std::string why)
    : gpu_(gpu), why_(std::move(why)), contention_(gpu.comm_contention_factor) {}

CostModel::CostModel(const GpuSpec& gpu, std::shared_ptr<const calibration::KernelTable> table,
                     std::string attention_kernel)
    : gpu_(gpu),
      table_(std::move(table)),
      attention_kernel_(std::move(attention_kernel)),
      contention_(table_ ? Contention(*table_, gpu.comm_contention_factor) : Contention(gpu.comm_contention_factor)) {}

Priced CostModel::price(const Op& op, double limit_slowdown) const {
  Priced p = price_once(op);
  p.seconds *= op.runs;
  if (limit_slowdown != 1 && compute_bound(op)) p.seconds *= limit_slowdown;
  return p;
}

bool CostModel::compute_bound(const Op& op) {
  return !op.fixed_s && !std::holds_alternative<std::monostate>(op.kernel) && !model::is_memory_bound(op.kernel);
}

double CostModel::limit_slowdown_for(const std::vector<Program>& stages, int micro_batches, double* share) const {
  double bound_s = 0, all_s = 0;
  for (const Program& p : stages) {
    for (const Op& op : p.ops) {
      if (std::holds_alternative<std::monostate>(op.kernel) || op.fixed_s) continue;
      const double s = price_once(op).seconds * op.runs * (op.kind == OpKind::optimizer ? 1 : micro_batches);
      all_s += s;
      if (compute_bound(op)) bound_s += s;
    }
  }
  const double f = all_s > 0 ? bound_s / all_s : 0;
  if (share != nullptr) *share = f;
  return table_ && table_->power() ? table_->power()->limit_slowdown(f) : 1;
}

void CostModel::hold_at_power_limit(const std::vector<Program>& stages) {
  limit_slowdown_ = limit_slowdown_for(stages, 1, &compute_bound_share_);
}

Priced CostModel::price_once(const Op& op) const {
  if (op.fixed_s) return {*op.fixed_s, Match::exact, 0.0};  // measured: its own time, no spread to draw from
  if (!table_) {
    const auto* g = std::get_if<model::GemmShape>(&op.kernel);
    const double peak = g && g->precision == model::Precision::fp8 ? gpu_.peak_fp8_flops_per_s : gpu_.peak_flops_per_s;
    return {std::max(op.flops / peak, op.bytes / gpu_.hbm_bytes_per_s), Match::roofline};
  }
  for (const PricedKernel& m : memo_) {
    if (m.kernel == op.kernel) return m.priced;
  }
  // A synchronisation point (no kernel): 0, exact. An FP8 matrix product: the bf16 one's price
  // times the FP8 / bf16 time ratio the table measured at the nearest shape ([[gemm_fp8]],
  // tensorwise scaling as Transformer Engine's recipes run it), else the datasheet's bf16 / fp8
  // peak ratio (derived).
  model::KernelShape priced_as = op.kernel;
  double factor = 1;
  if (auto* g = std::get_if<model::GemmShape>(&priced_as); g && g->precision == model::Precision::fp8) {
    g->precision = model::Precision::bf16;
    const std::optional<double> measured = table_->fp8_ratio(*g);
    factor = measured ? *measured : gpu_.peak_flops_per_s / gpu_.peak_fp8_flops_per_s;
  }
  Priced p = table_->price(priced_as, attention_kernel_);
  p.seconds *= factor;
  memo_.push_back({op.kernel, p});
  return memo_.back().priced;
}

std::string CostModel::source() const {
  if (!table_) return "roofline";
  return table_->provenance().derived ? "derived" : "measured";
}

std::string CostModel::describe() const {
  if (table_) return table_->describe() + (attention_kernel_ == "commbound" ? "" : ", attention " + attention_kernel_);
  return "roofline: datasheet peaks (calibration/gpus.toml), not measured" + (why_.empty() ? "" : " (" + why_ + ")");
}

CostSummary CostModel::summarize(const std::vector<Program>& stages) const {
  CostSummary s;
  for (const Program& p : stages) {
    for (const Op& op : p.ops) {
      if (std::holds_alternative<std::monostate>(op.kernel) || op.fixed_s) continue;
      const Priced priced = price(op);
      const auto* g = std::get_if<model::GemmShape>(&op.kernel);
      if (table_ && g && g->precision == model::Precision::fp8) {
        ++s.fallback_ops;
        ++s.fallbacks[table_->fp8_ratio(*g) ? "gemm_fp8_ratio" : "gemm_fp8_derived"];  // as price_once decides
        continue;
      }
      if (table_ && priced.match == Match::exact) {
        ++s.exact_ops;
        continue;
      }
      ++s.fallback_ops;
      ++s.fallbacks[table_ ? std::string(kind_of(op.kernel)) + "_" + to_string(priced.match) : "roofline"];
    }
  }
  return s;
}

double CostModel::comm_w() const {
  if (!table_ || !table_->power()) return gpu_.idle_w;
  const calibration::TablePower& p = *table_->power();
  const auto& c = table_->contention();
  const auto& sms = table_->provenance().sm_count;
  if (!c || !c->comm_sms || !sms || *sms <= 0) return p.idle_w;
  return p.idle_w + (p.memory_bound_w - p.idle_w) * static_cast<double>(*c->comm_sms) / static_cast<double>(*sms);
}

double CostModel::power_w(double compute_bound_fraction, double memory_bound_fraction, double comm_only_fraction) const {
  if (table_ && table_->power()) {
    const calibration::TablePower& p = *table_->power();
    return p.idle_w + (p.gemm_w - p.idle_w) * compute_bound_fraction +
           (p.memory_bound_w - p.idle_w) * memory_bound_fraction + (comm_w() - p.idle_w) * comm_only_fraction;
  }
  return gpu_.idle_w + (gpu_.tdp_w - gpu_.idle_w) * (compute_bound_fraction + memory_bound_fraction);
}

std::string CostModel::describe_power() const {
  if (table_ && table_->power()) {
    return std::string(table_->provenance().derived ? "derived" : "measured") + ": the table's [power]; " +
           std::to_string(std::lround(comm_w())) + " W while only communication runs (derived)";
  }
  return "derived: idle + (TDP - idle) x compute-busy fraction (calibration/gpus.toml), not measured";
}

}  // namespace commbound::sim
