// KernelTable: a GPU's kernel times, the calibration table of docs/calibration.md, with its one
// reader (load), its one writer (write, through toml++'s formatter) and its one pricing rule
// (price). Measured on a real GPU by commbound-calibrate, derived from another GPU's measured
// table (`commbound derive-table`, provenance.derived = true), or rows without times: the shapes
// a scenario needs (`commbound shapes`, the input of `commbound-calibrate --shapes`).
//
// Every key is checked: an unknown key, a wrong type, an impossible value or a duplicated shape is
// an error naming file:line: key = value. Times are stored in seconds, rates in bytes or FLOPs per
// second (SI inside; the file's ms, GB/s, TFLOP/s and MHz are converted where it is read and
// written).
//
// price() prices one kernel shape and says how:
//   exact    the table has the shape: its p50;
//   nearest  the table has rows of the same kind (GEMM: same layout; attention: same
//            implementation and direction, of the shape's head_dim, else of the measured head_dim
//            nearest it by log-distance, the larger on a tie; memory-bound: same op): the nearest row by
//            log-distance sqrt(sum (ln a - ln b)^2) over the shape's sizes (GEMM m, n, k; attention
//            batch, heads, kv_heads, seq, a row of the other causality only when none of the same
//            exists; memory-bound tokens, width; ties to the earlier row) lends its achieved rate
//            (FLOP/s for GEMM and attention, bytes/s for memory-bound ops) to this shape's FLOPs or
//            bytes, both counted by kernel_shape.hpp's formulas; except FlashAttention-2's and
//            cuDNN's rows ("flash2", "cudnn") of the shape's head_dim, whose time is carried by the ratio of the two
//            grids' drain times on the table's SMs (attention_tiling.hpp), when the table's
//            [provenance] has sm_count. A grouped product (GemmShape::group, an MoE layer's
//            local experts in one launch) costs its merged product (gemm_tiling.hpp) priced so,
//            times the ratio of the two drain times of cuBLAS's tiles where sm_count is known: a
//            small or ragged expert pays its whole tiles. An attention of a head_dim no row has (latent attention's
//            192-wide queries and keys, 128-wide values, priced as one head_dim of equal FLOPs)
//            takes the FLOP rate of the nearest head_dim measured: a flash kernel of another head
//            width runs the same tiles' products and softmax, near its neighbour's rate, where the
//            GEMM roofline is 1.2-2.5x faster than any attention row of an H100 table;
//   roofline no comparable row: max(FLOPs / [device] gemm_TFLOPs, bytes / [device] copy_GBps).
// An ElementwiseShape (a framework's small elementwise, reduction or copy kernel) is priced
// `nearest` from the [[pytorch_elementwise]] rows of the PyTorch path its kind runs on (streaming:
// vectorized, cast: unrolled, indexed, reduction, column_reduction, which takes the reduction rows
// where a table has none of its own): of the ops timed cold on that path, those whose bytes per
// element are nearest the shape's (log-distance; ties averaged; a reduction of known width among
// the ops timed with a width, by the log-distance over bytes per element and width, since a
// reduction's launch shape and time follow its rows' width), each interpolated linearly
// between its two rows around the shape's size, bytes on the vectorized path (bound by HBM),
// elements on the others (bound by the SMs' issue rate or, for reductions, by the rows' latency);
// below the smallest row its time, above the largest its rate. A shape that reads bytes the
// kernels just before it wrote (fresh_bytes) moves from that cold price toward the same op's L2-warm
// rows (timed over one input set, reads and writes in L2) by the fresh share of its bytes, up to the
// largest warm row (past it, its operands outgrow L2): reads of what was just written hit L2, while
// its writes and its older reads go to HBM. A table without such rows (derived
// tables) prices it from the rows of the measured kernel that moves bytes as it does (streaming,
// cast and indexed: residual_add; reduction: rmsnorm_forward), by the line t = fixed + bytes / rate
// fitted to their times by least squares on relative error; an indexed kernel then takes at least
// its elements at PyTorch's indexed-path issue rate per SM and clock (kernel_table_price.cpp), where
// [provenance] names sm_count and the clock.
//
// Host-only and C++17 (kernels/ includes it); the file format needs toml++ in kernel_table_io.cpp only.
#pragma once

#include "core/expected.hpp"
#include "model/kernel_shape.hpp"

#include <filesystem>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace commbound::calibration {

// Nearest-rank percentiles of a kernel's timed runs, seconds (the file's p10_ms, p50_ms, p90_ms).
struct KernelTiming {
  double p10_s = 0, p50_s = 0, p90_s = 0;
};

// A row: a shape and, once measured, its times.
struct GemmRow {
  model::GemmShape shape;
  std::optional<KernelTiming> time;
};

struct AttentionRow {
  // "commbound" (kernels/device/attention.cu), "cudnn" (cuDNN's fused attention) or "flash2"
  // (FlashAttention-2 as PyTorch's SDPA flash backend runs it).
  std::string implementation = "commbound";
  model::AttentionShape shape;
  std::optional<KernelTiming> time;
};

struct MemoryBoundRow {
  model::MemoryBoundShape shape;
  double bytes = 0;  // as a timed row states it (the fewest bytes the kernel moves); 0 when unstated
  std::optional<KernelTiming> time;
};

// An FP8 GEMM beside the bf16 one of the same shape, timed in the same run (torch._scaled_mm in
// float8_e4m3fn, forward layout: bench/eager_measure.py): their ratio prices an FP8 product as its
// bf16 row times the ratio of the nearest measured shape (KernelTable::fp8_ratio).
struct Fp8GemmRow {
  std::int64_t m = 0, n = 0, k = 0;
  std::string scaling = "tensorwise";  // "tensorwise" (one scale per tensor) or "rowwise"
  double bf16_s = 0, fp8_s = 0;
};

// One of PyTorch's elementwise kernels timed queued back to back behind a sleep kernel (the
// GPU's time per kernel in a stream, the gap to the next kernel included: bench/eager_measure.py,
// section elementwise). Such rows price a framework's ElementwiseShapes (KernelTable::price).
struct ElementwiseRow {
  // PyTorch's kernel: "vectorized", "unrolled", "indexed", "reduction" or "column_reduction"
  std::string path;
  std::string op;             // the op timed on that path, e.g. "add_bf16", "mul_fp32_row_broadcast"
  std::int64_t elements = 0;  // its output's (a reduction: its input's)
  double bytes = 0;           // counted as kernel_shape.hpp counts an ElementwiseShape's
  double queued_s = 0;
  std::int64_t width = 0;  // a reduction's contiguous dimension (0: not recorded)
  bool warm = false;       // timed over one input set (L2-resident while it fits); else rotated
                           // beyond L2, every operand from HBM
  auto key() const { return std::tuple{path, op, warm, elements}; }  // the table's order
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

// [device]: the roofline of a table, measured beside its rows.
struct TableDevice {
  double copy_bytes_per_s = 0;  // device-to-device copy, bytes read + written per second
  double gemm_flops_per_s = 0;  // bf16 GEMM 8192^3
};

// [power]: NVML board power, watts.
struct TablePower {
  double idle_w = 0, gemm_w = 0, memory_bound_w = 0;
  std::optional<double> gemm_sm_clock_hz, mixed_w, mixed_compute_fraction, power_limit_w, sample_period_s, phase_s;
  // How much slower a GEMM runs when the board holds its power limit, measured with sustained mixes
  // of a GEMM and memory copies (bench/power_mix.py): at limit_gemm_share[i] of the GPU's time in
  // GEMMs, a GEMM takes limit_gemm_slowdown[i] x its time in a short burst. Shares increase; empty
  // when not measured.
  std::vector<double> limit_gemm_share, limit_gemm_slowdown;

  // The slowdown at `share` (0..1) of the GPU's time in compute-bound kernels: linear between the
  // measured points, from 1 at share 0 to the first, and the last beyond it; 1 when not measured.
  double limit_slowdown(double share) const;
};

// [contention]: slowdown factors of compute while a communication-like copy runs on comm_sms SMs,
// paced to comm_bytes_per_s (payload: each byte copied counts once), and optionally again with the
// copy unpaced (as fast as its SMs go: the same SMs, far more HBM traffic).
struct TableContention {
  std::optional<long> comm_sms;
  std::optional<double> comm_bytes_per_s;
  double gemm_factor = 1, attention_factor = 1;
  std::optional<double> unpaced_comm_bytes_per_s, unpaced_gemm_factor, unpaced_attention_factor;
};

enum class Match { exact, nearest, roofline };
const char* to_string(Match m);

struct Priced {
  double seconds = 0;
  Match match = Match::roofline;
  double relative_spread = 0;  // (p90 - p10) / p50 of the row priced from; 0 from the roofline (unmeasured)
};

// What a file must hold besides its rows.
enum class TableContent {
  calibration,  // [provenance] and [device], and every row timed: a table to price from
  rows,         // rows, timed or not (every section optional): a shapes file, rows to add
};

class KernelTable {
public:
  // An empty table: no rows, no sections; fill it with add() and the setters.
  KernelTable() = default;

  // Reads and validates `path` as `content`; `display_path` is how reports name the file. In a
  // row, the times p10_ms, p50_ms, p90_ms come all three (p10 <= p50 <= p90) or not at all; a timed
  // row also states its attention `implementation` or memory-bound `bytes`, which an untimed one
  // may leave out (implementation "commbound", bytes 0).
  static Expected<KernelTable> load(const std::filesystem::path& path, const std::string& display_path,
                                    TableContent content = TableContent::calibration);

  // Appends a row unless the table holds its shape already (attention: implementation and shape);
  // returns whether it was added.
  bool add(GemmRow row);
  bool add(AttentionRow row);
  bool add(MemoryBoundRow row);
  // Appends every row of `other` whose shape this table does not hold, in `other`'s order.
  void add_rows(const KernelTable& other);
  void set_provenance(TableProvenance p) { provenance_ = std::move(p); }
  void set_device(TableDevice d) { device_ = d; }
  void set_power(TablePower p) { power_ = p; }
  void set_contention(TableContention c) { contention_ = c; }

  const std::string& display_path() const { return display_path_; }
  bool has_provenance() const { return provenance_.has_value(); }
  // Always-on check: the table has [provenance] (every TableContent::calibration table does).
  const TableProvenance& provenance() const;
  bool has_device() const { return device_.has_value(); }
  // Always-on check: the table has [device] (every TableContent::calibration table does).
  const TableDevice& device() const;
  const std::vector<GemmRow>& gemms() const { return gemms_; }
  const std::vector<AttentionRow>& attentions() const { return attentions_; }
  const std::vector<MemoryBoundRow>& memory_bounds() const { return memory_bounds_; }
  const std::vector<Fp8GemmRow>& fp8_gemms() const { return fp8_gemms_; }
  void add(Fp8GemmRow row) { fp8_gemms_.push_back(std::move(row)); }
  // FP8 time / bf16 time of the [[gemm_fp8]] row of `scaling` nearest to `shape` (log-distance over
  // m, n, k; any layout: only forward products were measured), or nullopt without such rows.
  std::optional<double> fp8_ratio(const model::GemmShape& shape, const std::string& scaling = "tensorwise") const;
  // Kept sorted by path, op and elements; a row of a (path, op, elements) held already is not added.
  const std::vector<ElementwiseRow>& elementwise_rows() const { return elementwise_rows_; }
  bool add(ElementwiseRow row);
  std::size_t size() const { return gemms_.size() + attentions_.size() + memory_bounds_.size(); }
  const std::optional<TablePower>& power() const { return power_; }
  const std::optional<TableContention>& contention() const { return contention_; }

  // "measured: <file> (<gpu>, <date>, commit <c>)" or "derived: <file> (<gpu>, derived from ...)".
  std::string describe() const;
  // Whether any attention row has this implementation.
  bool has_attention(const std::string& implementation) const;

  // The time of `shape` (attention: the rows of `attention_implementation`), and how it was found
  // (the header's rule). std::monostate costs 0 (exact). Always-on checks: the table has [device],
  // and the rows it prices from are timed.
  Priced price(const model::KernelShape& shape, const std::string& attention_implementation = "commbound") const;

  // Writes the table in docs/calibration.md's format through toml++'s formatter: `comments` first,
  // each line prefixed with "# ", then [provenance], [device], [power], [contention] (those the
  // table has), then the [[gemm]], [[attention]], [[memory_bound]], [[gemm_fp8]] and
  // [[pytorch_elementwise]] rows in table order; a timed row with its times, implementation and
  // bytes, an untimed one with its shape keys only.
  void write(std::ostream& out, const std::vector<std::string>& comments = {}) const;

  // A table for another GPU (`to`) from this measured one (`from` = this table's GPU) by the
  // datasheet ratios: GEMM and attention times x (from peak / to peak), memory-bound times x
  // (from HBM / to HBM), [device] likewise, [power] watts x (to TDP / from TDP) with the power-limit
  // curve copied, [contention] copied. [[pytorch_elementwise]] rows keep each op's smallest row's
  // time (a kernel that moves almost nothing costs its launch and drain, not bandwidth) and scale
  // the rest of each row's time: by the memory ratio, or on the indexed path (bound by its SMs'
  // issue rate) by the ratio of SMs x clock where both GPUs name theirs; their L2-warm rows are not
  // carried (another L2's size and bandwidth follow no HBM ratio: warm kernels are priced cold
  // there). [[gemm_fp8]] rows are not carried (FP8 GEMMs then take the datasheet ratio). `source_path` names this table in the new
  // provenance; `date` is today's. Always-on
  // checks: this table has [provenance] and [device].
  //
  // With the target's published achievable rates (`to.achievable_*` > 0: a sustained cuBLAS GEMM
  // rate, an achieved HBM copy rate, with `to.achievable_source` naming where they come from),
  // the ratios are this table's own measured [device] rates over the target's achievable ones
  // instead: each row keeps its efficiency relative to its own GPU's best GEMM (or copy), and the
  // source GPU's distance from its datasheet peak (its clocks under its power limit, its memory
  // system) no longer carries over to the target.
  struct Datasheet {
    std::string name, description, peak_dtype;
    double peak_flops_per_s = 0, hbm_bytes_per_s = 0, memory_bytes = 0, tdp_w = 0;
    double achievable_gemm_flops_per_s = 0, achievable_copy_bytes_per_s = 0;  // 0: unknown (datasheet ratios)
    std::string achievable_source;
    long sm_count = 0;             // 0: unknown (the derived table names no SMs)
    double sm_clock_max_hz = 0;    // 0: unknown
  };
  KernelTable derive(const Datasheet& from, const Datasheet& to, const std::string& source_path,
                     const std::string& date) const;

private:
  Priced roofline(double flops, double bytes) const;
  Priced price_elementwise(const model::ElementwiseShape& s) const;
  double indexed_issue_s(const model::ElementwiseShape& s) const;
  std::optional<double> pytorch_elementwise_s(const model::ElementwiseShape& s) const;
  double attention_scale(const model::AttentionShape& s, const model::AttentionShape& row, const std::string& implementation) const;
  Priced price_grouped(const model::GemmShape& s) const;

  std::string display_path_;
  std::optional<TableProvenance> provenance_;
  std::optional<TableDevice> device_;
  std::vector<GemmRow> gemms_;
  std::vector<AttentionRow> attentions_;
  std::vector<MemoryBoundRow> memory_bounds_;
  std::vector<Fp8GemmRow> fp8_gemms_;
  std::vector<ElementwiseRow> elementwise_rows_;
  std::optional<TablePower> power_;
  std::optional<TableContention> contention_;
  // The shapes held, for add()'s one-row-per-shape rule.
  std::set<model::GemmShape> gemm_keys_;
  std::set<std::pair<std::string, model::AttentionShape>> attention_keys_;
  std::set<model::MemoryBoundShape> memory_bound_keys_;
};

// The name a table measured on `device_name` (what CUDA reports, e.g. "NVIDIA H100 80GB HBM3")
// takes, so that the simulator finds it as calibration/<name>.toml: the preset of `gpus_toml`
// (calibration/gpus.toml) with that device_name, e.g. "h100-sxm5"; else the name in lower case with
// runs of other characters as '-' ("nvidia-geforce-rtx-4090"), also when `gpus_toml` cannot be read.
std::string table_name_for_device(const std::filesystem::path& gpus_toml, const std::string& device_name);

}  // namespace commbound::calibration
