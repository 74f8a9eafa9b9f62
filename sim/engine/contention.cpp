#include "sim/engine/contention.hpp"

#include <algorithm>
#include <variant>

#include <fmt/format.h>

namespace commbound::sim {
namespace {

// The copy kernel's HBM traffic per payload byte: it reads each byte and writes it.
constexpr double kCopyHbmBytesPerPayloadByte = 2;

}  // namespace

Contention::Contention(double flat_factor) : flat_gemm_(flat_factor), flat_attention_(flat_factor) {}

Contention::Contention(const calibration::KernelTable& table, double flat_factor)
    : flat_gemm_(flat_factor), flat_attention_(flat_factor) {
  const auto& c = table.contention();
  if (!c) return;
  flat_gemm_ = c->gemm_factor;
  flat_attention_ = c->attention_factor;
  const auto& sms = table.has_provenance() ? table.provenance().sm_count : std::nullopt;
  if (!c->comm_sms || !sms || *sms <= 0 || *c->comm_sms <= 0 || !table.has_device()) return;
  measured_ = true;
  sm_count_ = static_cast<double>(*sms);
  hbm_bytes_per_s_ = table.device().copy_bytes_per_s;
  const double sm_share = static_cast<double>(*c->comm_sms) / sm_count_;
  const double paced_hbm = kCopyHbmBytesPerPayloadByte * c->comm_bytes_per_s.value_or(0) / hbm_bytes_per_s_;
  auto solve = [&](double paced_factor, std::optional<double> unpaced_factor) {
    Costs k;
    if (c->unpaced_comm_bytes_per_s && unpaced_factor) {
      const double unpaced_hbm = kCopyHbmBytesPerPayloadByte * *c->unpaced_comm_bytes_per_s / hbm_bytes_per_s_;
      if (unpaced_hbm > paced_hbm && *unpaced_factor >= paced_factor) {
        k.hbm_cost = (*unpaced_factor - paced_factor) / (unpaced_hbm - paced_hbm);
        k.sm_cost = std::max(0.0, (paced_factor - 1 - k.hbm_cost * paced_hbm) / sm_share);
        hbm_split_ = true;
        return k;
      }
    }
    k.sm_cost = (paced_factor - 1) / sm_share;  // the whole measured slowdown charged to the SMs
    return k;
  };
  gemm_ = solve(c->gemm_factor, c->unpaced_gemm_factor);
  attention_ = solve(c->attention_factor, c->unpaced_attention_factor);
}

CommLoad Contention::sm_load(int channels) const {
  if (!measured_) return {1, 0};
  return {static_cast<double>(channels) / sm_count_, 0};
}

CommLoad Contention::hbm_load(double bus_bytes_per_s) const {
  if (!measured_) return {};
  return {0, kNcclHbmBytesPerBusByte * bus_bytes_per_s / hbm_bytes_per_s_};
}

double Contention::slowdown(const model::KernelShape& kernel, const CommLoad& load) const {
  if (load.sm_share <= 0 && load.hbm_share <= 0) return 1;
  if (std::holds_alternative<std::monostate>(kernel)) return 1;
  if (!measured_) return std::holds_alternative<model::AttentionShape>(kernel) ? flat_attention_ : flat_gemm_;
  const double sm = std::min(load.sm_share, 1.0);
  const double hbm = std::min(load.hbm_share, kMaxCommHbmShare);
  if (model::is_memory_bound(kernel)) return 1 / (1 - hbm);
  const Costs& k = std::holds_alternative<model::AttentionShape>(kernel) ? attention_ : gemm_;
  return 1 + k.sm_cost * sm + k.hbm_cost * hbm;
}

std::string Contention::describe() const {
  if (!measured_) {
    return fmt::format("flat while any collective runs: GEMM and memory-bound x{:.3g}, attention x{:.3g}", flat_gemm_,
                       flat_attention_);
  }
  return fmt::format(
      "[contention]: GEMM 1 + {:.3g} x SM share + {:.3g} x HBM share, attention 1 + {:.3g} x SM share + {:.3g} x HBM "
      "share{}; memory-bound 1 / (1 - HBM share), derived; NCCL: one SM per channel, {:g} HBM bytes per bus byte, derived",
      gemm_.sm_cost, gemm_.hbm_cost, attention_.sm_cost, attention_.hbm_cost,
      hbm_split_ ? "" : " (paced point only: all charged to SMs)", kNcclHbmBytesPerBusByte);
}

}  // namespace commbound::sim
