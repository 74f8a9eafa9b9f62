// CostModel: seconds for a compute op on one GPU, the slowdown it suffers while NCCL runs beside
// it, and the GPU's power while it runs.
//
// Two sources:
//   * a calibration table (calibration::KernelTable: measured on a real GPU, or derived from one):
//     each op is priced by its kernel shape (Op::kernel) with the table's one rule, price(): its
//     measured p50 when the table has the shape, else the nearest measured row's achieved rate,
//     else the table's [device] roofline;
//   * no table: the DATASHEET ROOFLINE max(FLOPs / dense bf16 peak, bytes / HBM bandwidth) from
//     calibration/gpus.toml on the op's FLOPs and bytes. Real kernels are slower (GEMMs reach
//     60-80% of peak), so compute times are lower bounds and MFU an upper bound.
// Every report states which (source(), describe()) and how many ops each way (summarize()).
#pragma once

#include "calibration/table/kernel_table.hpp"
#include "sim/engine/contention.hpp"
#include "sim/scenario/training.hpp"
#include "sim/workload/workload.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace commbound::sim {

// How the compute ops of a set of programs were priced: `exact` ops by their own table row,
// `fallback` ops otherwise (without a table: every op), with the fallbacks by "<kind>_<how>"
// (gemm_nearest, attention_roofline, memory_bound_nearest, elementwise_nearest (a framework's
// elementwise kernels, priced from the measured rows of their kind), gemm_fp8_ratio (an FP8
// matrix product: its bf16 price x the table's measured FP8 / bf16 ratio at the nearest shape),
// gemm_fp8_derived (the same without [[gemm_fp8]] rows: x bf16 / fp8 datasheet peak), ..., or
// "roofline" without a table).
struct CostSummary {
  int exact_ops = 0;
  int fallback_ops = 0;
  std::map<std::string, int> fallbacks;
};

class CostModel {
public:
  // The datasheet roofline; `why` (optional) says why no table is used, for describe().
  explicit CostModel(const GpuSpec& gpu, std::string why = "");
  // Prices from `table`; attention rows of `attention_kernel` ("commbound", "cudnn", "flash2").
  CostModel(const GpuSpec& gpu, std::shared_ptr<const calibration::KernelTable> table, std::string attention_kernel);

  double seconds(const Op& op) const { return price(op).seconds; }
  // The op's kernel priced, times its back-to-back runs (Op::runs), times the power limit's
  // slowdown for a compute-bound kernel (hold_at_power_limit).
  calibration::Priced price(const Op& op) const { return price(op, limit_slowdown_); }
  // The same at another power-limit slowdown (1: none), as a part or a bound is charged.
  calibration::Priced price(const Op& op, double limit_slowdown) const;

  // A training step run back to back holds the board at its power limit when its compute-bound
  // kernels (GEMM, attention) take enough of its time: the board lowers its clock and they slow
  // down; memory-bound kernels do not (their speed is HBM's). The table's [power] limit_gemm_*
  // curve, measured with sustained mixes of a GEMM and memory copies, gives the slowdown at the
  // programs' share of compute-bound time in their compute (every compute op at its table price).
  // Attention is slowed like a GEMM (derived: the curve was measured on GEMMs). Without the curve,
  // or not called, compute runs at the table's prices (`commbound profile` charges each part its
  // own slowdown through price(op, limit_slowdown_for({part}))). Idle and communication-only time, which
  // lowers the real board's mean power, is not counted: an upper bound on the slowdown.
  void hold_at_power_limit(const std::vector<Program>& stages);
  double compute_bound_share() const { return compute_bound_share_; }
  double power_limit_slowdown() const { return limit_slowdown_; }
  // What hold_at_power_limit would set for `stages` (their compute-bound share into `share` when
  // given), each op but the optimizer's counted `micro_batches` times (programs of one micro-batch
  // standing for all: the iteration bounds), without holding.
  double limit_slowdown_for(const std::vector<Program>& stages, int micro_batches = 1, double* share = nullptr) const;
  // A GEMM or attention kernel priced by this model (not measured: no Op::fixed_s): what the power
  // limit slows.
  static bool compute_bound(const Op& op);
  // How much the collectives running beside a compute op slow it (contention.hpp): from the
  // table's [contention], else calibration/gpus.toml's comm_contention_factor. A measured op
  // (Op::fixed_s) already holds whatever ran beside it: 1.
  const Contention& contention() const { return contention_; }
  double slowdown(const Op& op, const CommLoad& load) const {
    return op.fixed_s ? 1.0 : contention_.slowdown(op.kernel, load);
  }

  // "roofline", "measured" or "derived".
  std::string source() const;
  // One line: "measured: calibration/h100-sxm5.toml (NVIDIA H100 80GB HBM3, 2026-11-22, commit
  // abc1234)", "derived: ...", or "roofline: ...".
  std::string describe() const;
  // The table's file as reports name it ("" without a table).
  std::string table_path() const { return table_ ? table_->display_path() : ""; }
  CostSummary summarize(const std::vector<Program>& stages) const;

  // Mean board power (W) over an iteration whose compute stream ran compute-bound kernels (GEMM,
  // attention) for `compute_bound_fraction` of it and memory-bound kernels for
  // `memory_bound_fraction`, and in which only communication ran for `comm_only_fraction`. Table
  // with [power]: idle_W + (gemm_W - idle_W) x compute-bound + (memory_bound_W - idle_W) x
  // memory-bound + (comm_w() - idle_W) x communication-only; otherwise idle + (TDP - idle) x busy
  // fraction (communication alone priced as idle: nothing to derive it from).
  double power_w(double compute_bound_fraction, double memory_bound_fraction, double comm_only_fraction = 0) const;
  // The board power (W) while NCCL's kernels run and no compute does. DERIVED, not measured: they
  // hold [contention] comm_sms of the GPU's [provenance] sm_count SMs for the whole collective
  // (copying, reducing, polling their peers' flags), each taken to draw what an SM draws in a
  // memory-bound kernel: idle_W + (memory_bound_W - idle_W) x comm_sms / sm_count. Idle power
  // when the table lacks either figure.
  double comm_w() const;
  // One line: "measured: the table's [power]; 184 W while only communication runs (derived)", or the
  // datasheet model's statement (docs/metrics.md explains both).
  std::string describe_power() const;

private:
  calibration::Priced price_once(const Op& op) const;

  GpuSpec gpu_;
  std::string why_;
  std::shared_ptr<const calibration::KernelTable> table_;
  std::string attention_kernel_;
  Contention contention_;
  // The table's prices already looked up, by kernel shape: a program repeats a few dozen kernels
  // thousands of times, and the table prices a shape it lacks by scanning all its rows. Not
  // thread-safe (nothing in commbound prices from several threads).
  struct PricedKernel {
    model::KernelShape kernel;
    calibration::Priced priced;
  };
  mutable std::vector<PricedKernel> memo_;
  double compute_bound_share_ = 0;
  double limit_slowdown_ = 1;
};

}  // namespace commbound::sim
