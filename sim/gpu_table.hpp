// GpuTable: a GPU's kernel times, read from a calibration table (calibration/<gpu>.toml, format in
// docs/calibration.md): measured on a real GPU by commbound-calibrate, or derived from another
// GPU's measured table (`commbound derive-table`, provenance.derived = true).
//
// Every key is checked: an unknown key, a wrong type, an impossible value or a duplicated shape is
// an error naming file:line: key = value. Times are stored in seconds, rates in bytes or FLOPs per
// second (SI inside; the file's ms, GB/s and TFLOP/s are converted here).
//
// Lookups price one kernel shape and say how:
//   exact    the table has the shape: its p50;
//   nearest  the table has rows of the same kind (GEMM: same layout; attention: same
//            implementation, direction and head_dim; memory-bound: same op): the nearest row by
//            log-distance over the shape's sizes lends its achieved rate (FLOP/s for GEMM and
//            attention, bytes/s for memory-bound ops) to this shape's FLOPs or bytes;
//   roofline no comparable row: max(FLOPs / [device] gemm_TFLOPs, bytes / [device] copy_GBps).
#pragma once

#include "calibration/base/expected.hpp"
#include "sim/kernel_shape.hpp"

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace commbound::sim {

struct KernelTiming {
  double p10_s = 0, p50_s = 0, p90_s = 0;
};

struct GemmRow {
  GemmShape shape;
  KernelTiming time;
};

struct AttentionRow {
  std::string implementation;  // "commbound" (kernels/attention.cu) or "cudnn"
  AttentionShape shape;
  KernelTiming time;
};

struct MemoryBoundRow {
  MemoryBoundShape shape;
  double bytes = 0;  // as the table states it (the fewest bytes the kernel must move)
  KernelTiming time;
};

// [provenance]: empty strings and unset optionals are keys the file does not have.
struct TableProvenance {
  std::string gpu;  // cudaGetDeviceProperties name (derived tables: the target's description)
  std::optional<long> sm_count;
  std::optional<double> sm_clock_max_hz, memory_clock_hz, memory_bytes, measurement_s;
  std::string driver, cuda_runtime, cublaslt, date, tool_commit, timed_runs, input_rotation;
  bool derived = false;
  std::string derived_from, derivation;  // derived tables only
};

// [power]: NVML board power, watts.
struct TablePower {
  double idle_w = 0, gemm_w = 0, memory_bound_w = 0;
  std::optional<double> gemm_sm_clock_hz, mixed_w, mixed_compute_fraction, power_limit_w, sample_period_s, phase_s;
};

// [contention]: slowdown factors of compute while a communication-like copy runs.
struct TableContention {
  std::optional<long> comm_sms;
  std::optional<double> comm_bytes_per_s;
  double gemm_factor = 1, attention_factor = 1;
};

enum class Match { exact, nearest, roofline };
const char* to_string(Match m);

struct Priced {
  double seconds = 0;
  Match match = Match::roofline;
};

class GpuTable {
public:
  // Reads and validates `path`; `display_path` is how reports name the file.
  static Expected<GpuTable> load(const std::filesystem::path& path, const std::string& display_path);

  const std::string& display_path() const { return display_path_; }
  const TableProvenance& provenance() const { return provenance_; }
  double copy_bytes_per_s() const { return copy_bytes_per_s_; }
  double gemm_flops_per_s() const { return gemm_flops_per_s_; }
  const std::vector<GemmRow>& gemms() const { return gemms_; }
  const std::vector<AttentionRow>& attentions() const { return attentions_; }
  const std::vector<MemoryBoundRow>& memory_bounds() const { return memory_bounds_; }
  const std::optional<TablePower>& power() const { return power_; }
  const std::optional<TableContention>& contention() const { return contention_; }

  // "measured: <file> (<gpu>, <date>, commit <c>)" or "derived: <file> (<gpu>, derived from ...)".
  std::string describe() const;
  // Whether any attention row has this implementation.
  bool has_attention(const std::string& implementation) const;

  Priced gemm(const GemmShape& s) const;
  Priced attention(const std::string& implementation, const AttentionShape& s) const;
  Priced memory_bound(const MemoryBoundShape& s) const;

  // Writes the table in the format it was read from (docs/calibration.md).
  void write(std::ostream& out) const;

  // A table for another GPU (`to`) from this measured one (`from` = this table's GPU) by the
  // datasheet ratios: GEMM and attention times x (from peak / to peak), memory-bound times x
  // (from HBM / to HBM), [device] likewise, [power] watts x (to TDP / from TDP), [contention]
  // copied. `source_path` names this table in the new provenance; `date` is today's.
  struct Datasheet {
    std::string name, description, peak_dtype;
    double peak_flops_per_s = 0, hbm_bytes_per_s = 0, memory_bytes = 0, tdp_w = 0;
  };
  GpuTable derive(const Datasheet& from, const Datasheet& to, const std::string& source_path,
                  const std::string& date) const;

private:
  Priced roofline(double flops, double bytes) const;

  std::string display_path_;
  TableProvenance provenance_;
  double copy_bytes_per_s_ = 0;
  double gemm_flops_per_s_ = 0;
  std::vector<GemmRow> gemms_;
  std::vector<AttentionRow> attentions_;
  std::vector<MemoryBoundRow> memory_bounds_;
  std::optional<TablePower> power_;
  std::optional<TableContention> contention_;
};

}  // namespace commbound::sim
