// OpTable: the rows of a calibration table (docs/calibration.md) - the op shapes a training step
// needs, with their measured times once measured - and its TOML form. Host-only (no CUDA): the
// simulator's `commbound shapes` writes the same rows without times, commbound-calibrate reads
// them, measures, and writes them back with times and provenance.
#pragma once

#include "calibration/base/expected.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace commbound::kernels {

// Nearest-rank percentiles of a kernel's timed runs, milliseconds; all zero until measured.
struct Timing {
  double p10_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
};

// The three GEMMs of a linear layer Y = X W^T (X [T x in], W [out x in]), row-major:
// forward {m = T, n = out, k = in}, dgrad dX = dY W {m = T, n = in, k = out},
// wgrad dW = dY^T X {m = out, n = in, k = T}.
enum class GemmLayout { forward, dgrad, wgrad };
const char* to_string(GemmLayout layout);

struct GemmRow {
  std::int64_t m = 0, n = 0, k = 0;
  GemmLayout layout = GemmLayout::forward;
  Timing timing;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

struct AttentionRow {
  std::string implementation = "commbound";  // or "cudnn"
  bool backward = false;
  int batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  Timing timing;
  // Executed FLOPs: forward 4 b h s^2 d (half of it under a causal mask); backward 2.5x forward.
  double flops() const;
};

// A memory-bound kernel at (tokens x width); `op` is one of docs/calibration.md's names.
struct MemoryBoundRow {
  std::string op;
  std::int64_t tokens = 0, width = 0;
  double bytes = 0;  // the fewest bytes it must move; 0 in a shapes file (filled when measured)
  Timing timing;
};

struct OpTable {
  std::vector<GemmRow> gemm;
  std::vector<AttentionRow> attention;
  std::vector<MemoryBoundRow> memory_bound;

  // Appends `other`'s rows that this table does not hold yet (same shape = same row).
  void merge(const OpTable& other);
  std::size_t size() const { return gemm.size() + attention.size() + memory_bound.size(); }
};

// One line naming a row's shape: "gemm forward 8192x12288x4096", "attention backward b2 h32/32
// s4096 d128", "rmsnorm_forward 8192x4096" (progress output, replay reports, lookups).
std::string describe(const GemmRow& row);
std::string describe(const AttentionRow& row);
std::string describe(const MemoryBoundRow& row);

// Reads the [[gemm]], [[attention]] and [[memory_bound]] rows of a shapes or calibration file;
// other tables ([provenance], [device], [power], [contention]) are skipped. Errors name the file,
// line, key and value.
Expected<OpTable> read_op_table(const std::filesystem::path& path);

// TOML text of the rows (times included when `with_timing`), in docs/calibration.md's format.
std::string format_op_rows(const OpTable& table, bool with_timing);

// The name a table measured on `device_name` (what CUDA reports, e.g. "NVIDIA H100 80GB HBM3")
// takes: the preset of `gpus_toml` (calibration/gpus.toml) with that device_name, e.g.
// "h100-sxm5", so that the simulator finds calibration/h100-sxm5.toml; else the name in lower
// case with runs of other characters as '-' ("nvidia-geforce-rtx-4090").
std::string table_name_for_device(const std::filesystem::path& gpus_toml, const std::string& device_name);

// A TOML string literal (quoted, escaped).
std::string toml_string(const std::string& s);

}  // namespace commbound::kernels
