#include "calibration/table/kernel_table.hpp"

#include "core/check.hpp"
#include "calibration/table/attention_tiling.hpp"
#include "core/table_reader.hpp"
#include "core/units.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

namespace commbound::calibration {

// The kernel shapes this table prices are model/'s.
using namespace commbound::model;
namespace {

// The runs of `rows` (sorted by ElementwiseRow::key) that time one op on one path, cold or warm:
// [first, last), by elements.
std::vector<std::pair<std::size_t, std::size_t>> op_runs(const std::vector<ElementwiseRow>& rows) {
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j < rows.size() && rows[j].path == rows[i].path && rows[j].op == rows[i].op && rows[j].warm == rows[i].warm) {
      ++j;
    }
    runs.emplace_back(i, j);
    i = j;
  }
  return runs;
}

constexpr long kMaxDim = 1L << 40;
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

// --- reading ------------------------------------------------------------------------------------

// A row's times: required in a calibration table; in a rows file all three or none.
std::optional<KernelTiming> read_timing(TableReader& r, TableContent content) {
  const bool timed = r.has("p10_ms") || r.has("p50_ms") || r.has("p90_ms");
  if (!timed && content == TableContent::rows) return std::nullopt;
  KernelTiming t;
  t.p10_s = r.required_number("p10_ms", 1e-9, 1e9) * kSecondsPerMs;
  t.p50_s = r.required_number("p50_ms", 1e-9, 1e9) * kSecondsPerMs;
  t.p90_s = r.required_number("p90_ms", 1e-9, 1e9) * kSecondsPerMs;
  if (!r.failed() && !(t.p10_s <= t.p50_s && t.p50_s <= t.p90_s)) r.fail("p50_ms", "must lie between p10_ms and p90_ms");
  return t;
}

// Whether a row must state the keys of a timed row (implementation, bytes).
bool row_is_timed(const TableReader& r, TableContent content) {
  return content == TableContent::calibration || r.has("p10_ms") || r.has("p50_ms") || r.has("p90_ms");
}

// The tables of an array of tables such as [[gemm]], or an error naming the element that is not one.
Expected<std::vector<const toml::table*>> rows_of(TableReader& top, const std::string& key) {
  std::vector<const toml::table*> rows;
  const toml::array* arr = top.array(key);
  if (arr == nullptr) return rows;  // absent, or not an array: top.finish() reports that
  for (const auto& e : *arr) {
    if (!e.is_table()) return Error{where(e) + ": " + key + ": expected [[" + key + "]] tables"};
    rows.push_back(e.as_table());
  }
  return rows;
}

Status read_provenance(const toml::table& table, TableProvenance& p) {
  TableReader r(table, "provenance");
  p.gpu = r.required_string("gpu");
  if (r.has("sm_count")) p.sm_count = r.integer("sm_count", 0, 1, 1 << 20);
  if (r.has("sm_clock_max_MHz")) p.sm_clock_max_hz = r.number("sm_clock_max_MHz", 0, 1, 1e5) * kHzPerMHz;
  if (r.has("memory_clock_MHz")) p.memory_clock_hz = r.number("memory_clock_MHz", 0, 1, 1e5) * kHzPerMHz;
  if (r.has("memory_GB")) p.memory_bytes = r.number("memory_GB", 0, 0.001, 1e6) * kBytesPerGB;
  p.driver = r.string("driver", "");
  p.cuda_runtime = r.string("cuda_runtime", "");
  p.cublaslt = r.string("cublaslt", "");
  p.date = r.required_string("date");
  p.tool_commit = r.required_string("tool_commit");
  p.derived = r.boolean("derived", false);
  p.timed_runs = r.string("timed_runs", "");
  p.input_rotation = r.string("input_rotation", "");
  if (r.has("measurement_s")) p.measurement_s = r.number("measurement_s", 0, 0, 1e9);
  p.derived_from = p.derived ? r.required_string("derived_from") : r.string("derived_from", "");
  p.derivation = p.derived ? r.required_string("derivation") : r.string("derivation", "");
  if (!r.failed() && !p.derived && !p.derived_from.empty()) r.fail("derived_from", "only for derived = true");
  return r.finish();
}

Status read_device(const toml::table& table, TableDevice& d) {
  TableReader r(table, "device");
  d.copy_bytes_per_s = r.required_number("copy_GBps", 1e-3, 1e7) * kBytesPerGB;
  d.gemm_flops_per_s = r.required_number("gemm_TFLOPs", 1e-3, 1e7) * kFlopsPerTFLOP;
  return r.finish();
}

Status read_power(const toml::table& table, TablePower& p) {
  TableReader r(table, "power");
  p.idle_w = r.required_number("idle_W", 0, 1e5);
  p.gemm_w = r.required_number("gemm_W", 0, 1e5);
  p.memory_bound_w = r.required_number("memory_bound_W", 0, 1e5);
  if (r.has("gemm_sm_clock_MHz")) p.gemm_sm_clock_hz = r.number("gemm_sm_clock_MHz", 0, 1, 1e5) * kHzPerMHz;
  if (r.has("mixed_W")) p.mixed_w = r.number("mixed_W", 0, 0, 1e5);
  if (r.has("mixed_compute_fraction")) p.mixed_compute_fraction = r.number("mixed_compute_fraction", 0, 0, 1);
  if (r.has("power_limit_W")) p.power_limit_w = r.number("power_limit_W", 0, 1, 1e5);
  if (r.has("sample_period_ms")) p.sample_period_s = r.number("sample_period_ms", 0, 1e-3, 1e6) * kSecondsPerMs;
  if (r.has("phase_s")) p.phase_s = r.number("phase_s", 0, 1e-3, 1e6);
  if (r.has("limit_gemm_share") || r.has("limit_gemm_slowdown")) {
    const toml::array* shares = r.required_array("limit_gemm_share");
    const std::size_t n = shares != nullptr ? shares->size() : 0;
    p.limit_gemm_share = r.numbers("limit_gemm_share", n, 1e-6, 1);
    p.limit_gemm_slowdown = r.numbers("limit_gemm_slowdown", n, 1, 10);
    for (std::size_t i = 1; i < n && !r.failed(); ++i) {
      if (!(p.limit_gemm_share[i] > p.limit_gemm_share[i - 1])) {
        char why[160];
        std::snprintf(why, sizeof why, "must increase, element by element (element %zu is %g after %g)", i,
                      p.limit_gemm_share[i], p.limit_gemm_share[i - 1]);
        r.fail("limit_gemm_share", why);
      }
    }
  }
  return r.finish();
}

Status read_contention(const toml::table& table, TableContention& c) {
  TableReader r(table, "contention");
  if (r.has("comm_sms")) c.comm_sms = r.integer("comm_sms", 0, 0, 1 << 20);
  if (r.has("comm_GBps")) c.comm_bytes_per_s = r.number("comm_GBps", 0, 0, 1e7) * kBytesPerGB;
  c.gemm_factor = r.required_number("gemm_factor", 1, 10);
  c.attention_factor = r.required_number("attention_factor", 1, 10);
  if (r.has("unpaced_comm_GBps")) c.unpaced_comm_bytes_per_s = r.number("unpaced_comm_GBps", 0, 0, 1e7) * kBytesPerGB;
  if (r.has("unpaced_gemm_factor")) c.unpaced_gemm_factor = r.number("unpaced_gemm_factor", 1, 1, 10);
  if (r.has("unpaced_attention_factor")) c.unpaced_attention_factor = r.number("unpaced_attention_factor", 1, 1, 10);
  return r.finish();
}

Expected<GemmRow> read_gemm(const toml::table& row, TableContent content) {
  TableReader r(row, "gemm");
  GemmRow x;
  x.shape.m = r.required_integer("m", 1, kMaxDim);
  x.shape.n = r.required_integer("n", 1, kMaxDim);
  x.shape.k = r.required_integer("k", 1, kMaxDim);
  x.shape.layout = *parse_gemm_layout(r.choice("layout", "forward", {"forward", "dgrad", "wgrad"}));
  if (!r.has("layout") && !r.failed()) r.fail("layout", "missing (required)");
  x.time = read_timing(r, content);
  if (Status s = r.finish(); !s) return s.error();
  return x;
}

Expected<AttentionRow> read_attention(const toml::table& row, TableContent content) {
  TableReader r(row, "attention");
  AttentionRow x;
  x.implementation = r.choice("implementation", "commbound", {"commbound", "cudnn", "flash2"});
  if (!r.has("implementation") && !r.failed() && row_is_timed(r, content)) r.fail("implementation", "missing (required)");
  x.shape.direction = *parse_direction(r.choice("direction", "forward", {"forward", "backward"}));
  if (!r.has("direction") && !r.failed()) r.fail("direction", "missing (required)");
  x.shape.batch = r.required_integer("batch", 1, kMaxDim);
  x.shape.heads = r.required_integer("heads", 1, kMaxDim);
  x.shape.kv_heads = r.required_integer("kv_heads", 1, kMaxDim);
  x.shape.seq = r.required_integer("seq", 1, kMaxDim);
  x.shape.head_dim = r.required_integer("head_dim", 1, kMaxDim);
  if (!r.has("causal") && !r.failed()) r.fail("causal", "missing (required)");
  x.shape.causal = r.boolean("causal", true);
  if (!r.failed() && x.shape.heads % x.shape.kv_heads != 0) r.fail("kv_heads", "must divide heads");
  x.time = read_timing(r, content);
  if (Status s = r.finish(); !s) return s.error();
  return x;
}

Expected<MemoryBoundRow> read_memory_bound(const toml::table& row, TableContent content) {
  TableReader r(row, "memory_bound");
  MemoryBoundRow x;
  x.shape.op = r.choice("op", "", memory_bound_ops());
  if (!r.has("op") && !r.failed()) r.fail("op", "missing (required)");
  x.shape.tokens = r.required_integer("tokens", 1, kMaxDim);
  x.shape.width = r.required_integer("width", 1, kMaxDim);
  x.bytes = row_is_timed(r, content) ? r.required_number("bytes", 1, 1e18) : r.number("bytes", 0, 1, 1e18);
  x.time = read_timing(r, content);
  if (Status s = r.finish(); !s) return s.error();
  return x;
}

// FP8 rows are always timed: `content` (read_rows' signature) changes nothing.
Expected<Fp8GemmRow> read_fp8_gemm(const toml::table& row, TableContent /*content*/) {
  TableReader r(row, "gemm_fp8");
  Fp8GemmRow x;
  x.m = r.required_integer("m", 1, kMaxDim);
  x.n = r.required_integer("n", 1, kMaxDim);
  x.k = r.required_integer("k", 1, kMaxDim);
  x.scaling = r.choice("scaling", "tensorwise", {"tensorwise", "rowwise"});
  if (!r.has("scaling") && !r.failed()) r.fail("scaling", "missing (required)");
  x.bf16_s = r.required_number("bf16_ms", 1e-9, 1e9) * kSecondsPerMs;
  x.fp8_s = r.required_number("fp8_ms", 1e-9, 1e9) * kSecondsPerMs;
  if (Status s = r.finish(); !s) return s.error();
  return x;
}

// PyTorch elementwise rows are always timed, like FP8 rows.
Expected<ElementwiseRow> read_pytorch_elementwise(const toml::table& row, TableContent /*content*/) {
  TableReader r(row, "pytorch_elementwise");
  ElementwiseRow x;
  x.path = r.choice("path", "vectorized", {"vectorized", "unrolled", "indexed", "reduction", "column_reduction"});
  if (!r.has("path") && !r.failed()) r.fail("path", "missing (required)");
  x.op = r.required_string("op");
  x.warm = r.choice("l2", "cold", {"cold", "warm"}) == "warm";
  x.elements = r.required_integer("elements", 1, kMaxDim);
  x.width = r.integer("width", 0, 1, kMaxDim);
  x.bytes = r.required_number("bytes", 1, 1e15);
  x.queued_s = r.required_number("queued_us", 1e-3, 1e9) * kSecondsPerUs;
  if (Status s = r.finish(); !s) return s.error();
  return x;
}

// --- writing ------------------------------------------------------------------------------------

// toml++'s formatter with basic (double-quoted) strings, the format's documented style.
constexpr auto kFormat = toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings;

void put_timing(toml::table& t, const std::optional<KernelTiming>& time) {
  if (!time) return;
  t.insert("p10_ms", time->p10_s / kSecondsPerMs);
  t.insert("p50_ms", time->p50_s / kSecondsPerMs);
  t.insert("p90_ms", time->p90_s / kSecondsPerMs);
}

toml::table provenance_table(const TableProvenance& p) {
  toml::table t;
  t.insert("gpu", p.gpu);
  if (p.sm_count) t.insert("sm_count", static_cast<std::int64_t>(*p.sm_count));
  if (p.sm_clock_max_hz) t.insert("sm_clock_max_MHz", *p.sm_clock_max_hz / kHzPerMHz);
  if (p.memory_clock_hz) t.insert("memory_clock_MHz", *p.memory_clock_hz / kHzPerMHz);
  if (p.memory_bytes) t.insert("memory_GB", *p.memory_bytes / kBytesPerGB);
  for (const auto& [key, value] : {std::pair{"driver", &p.driver}, std::pair{"cuda_runtime", &p.cuda_runtime},
                                   std::pair{"cublaslt", &p.cublaslt}, std::pair{"timed_runs", &p.timed_runs},
                                   std::pair{"input_rotation", &p.input_rotation},
                                   std::pair{"derived_from", &p.derived_from}, std::pair{"derivation", &p.derivation}}) {
    if (!value->empty()) t.insert(key, *value);
  }
  t.insert("date", p.date);
  t.insert("tool_commit", p.tool_commit);
  t.insert("derived", p.derived);
  if (p.measurement_s) t.insert("measurement_s", *p.measurement_s);
  return t;
}

toml::table power_table(const TablePower& w) {
  toml::table t;
  t.insert("idle_W", w.idle_w);
  t.insert("gemm_W", w.gemm_w);
  t.insert("memory_bound_W", w.memory_bound_w);
  if (w.gemm_sm_clock_hz) t.insert("gemm_sm_clock_MHz", *w.gemm_sm_clock_hz / kHzPerMHz);
  if (w.mixed_w) t.insert("mixed_W", *w.mixed_w);
  if (w.mixed_compute_fraction) t.insert("mixed_compute_fraction", *w.mixed_compute_fraction);
  if (w.power_limit_w) t.insert("power_limit_W", *w.power_limit_w);
  if (w.sample_period_s) t.insert("sample_period_ms", *w.sample_period_s / kSecondsPerMs);
  if (w.phase_s) t.insert("phase_s", *w.phase_s);
  if (!w.limit_gemm_share.empty()) {
    toml::array share, slowdown;
    for (double v : w.limit_gemm_share) share.push_back(v);
    for (double v : w.limit_gemm_slowdown) slowdown.push_back(v);
    t.insert("limit_gemm_share", std::move(share));
    t.insert("limit_gemm_slowdown", std::move(slowdown));
  }
  return t;
}

toml::table contention_table(const TableContention& c) {
  toml::table t;
  if (c.comm_sms) t.insert("comm_sms", static_cast<std::int64_t>(*c.comm_sms));
  if (c.comm_bytes_per_s) t.insert("comm_GBps", *c.comm_bytes_per_s / kBytesPerGB);
  t.insert("gemm_factor", c.gemm_factor);
  t.insert("attention_factor", c.attention_factor);
  if (c.unpaced_comm_bytes_per_s) t.insert("unpaced_comm_GBps", *c.unpaced_comm_bytes_per_s / kBytesPerGB);
  if (c.unpaced_gemm_factor) t.insert("unpaced_gemm_factor", *c.unpaced_gemm_factor);
  if (c.unpaced_attention_factor) t.insert("unpaced_attention_factor", *c.unpaced_attention_factor);
  return t;
}

toml::table row_table(const GemmRow& r) {
  toml::table t;
  t.insert("m", r.shape.m);
  t.insert("n", r.shape.n);
  t.insert("k", r.shape.k);
  t.insert("layout", to_string(r.shape.layout));
  put_timing(t, r.time);
  return t;
}

toml::table row_table(const AttentionRow& r) {
  toml::table t;
  if (r.time) t.insert("implementation", r.implementation);
  t.insert("direction", to_string(r.shape.direction));
  t.insert("batch", r.shape.batch);
  t.insert("heads", r.shape.heads);
  t.insert("kv_heads", r.shape.kv_heads);
  t.insert("seq", r.shape.seq);
  t.insert("head_dim", r.shape.head_dim);
  t.insert("causal", r.shape.causal);
  put_timing(t, r.time);
  return t;
}

toml::table row_table(const Fp8GemmRow& r) {
  toml::table t;
  t.insert("m", r.m);
  t.insert("n", r.n);
  t.insert("k", r.k);
  t.insert("scaling", r.scaling);
  t.insert("bf16_ms", r.bf16_s / kSecondsPerMs);
  t.insert("fp8_ms", r.fp8_s / kSecondsPerMs);
  return t;
}

toml::table row_table(const ElementwiseRow& r) {
  toml::table t;
  t.insert("path", r.path);
  t.insert("op", r.op);
  if (r.warm) t.insert("l2", "warm");
  t.insert("elements", r.elements);
  if (r.width > 0) t.insert("width", r.width);
  t.insert("bytes", r.bytes);
  t.insert("queued_us", r.queued_s / kSecondsPerUs);
  return t;
}

toml::table row_table(const MemoryBoundRow& r) {
  toml::table t;
  t.insert("op", r.shape.op);
  t.insert("tokens", r.shape.tokens);
  t.insert("width", r.shape.width);
  if (r.time) t.insert("bytes", r.bytes);
  put_timing(t, r.time);
  return t;
}

// One section, `[key]` or the `[[key]]` rows, through the formatter, after a blank line unless first.
void write_section(std::ostream& out, bool& first, const char* key, toml::table content) {
  toml::table section;
  section.insert(key, std::move(content));
  out << (first ? "" : "\n\n") << toml::toml_formatter{section, kFormat};
  first = false;
}

template <class Row>
void write_rows(std::ostream& out, bool& first, const char* key, const std::vector<Row>& rows) {
  if (rows.empty()) return;
  toml::array array;
  for (const Row& r : rows) array.push_back(row_table(r));
  toml::table section;
  section.insert(key, std::move(array));
  out << (first ? "" : "\n\n") << toml::toml_formatter{section, kFormat};
  first = false;
}

KernelTiming scaled(const std::optional<KernelTiming>& t, double f) {
  COMMBOUND_CHECK(t.has_value(), "deriving from an untimed row");
  return {t->p10_s * f, t->p50_s * f, t->p90_s * f};
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

// Reads `rows` (the [[section]] tables) with `read` into `table`, in file order. The first row of
// each key (`key_of`: the row's shape) is kept; a second is an error naming both rows' places.
template <class Row, class KeyOf>
Status read_rows(KernelTable& table, const std::vector<const toml::table*>& rows, const std::string& section,
                 Expected<Row> (*read)(const toml::table&, TableContent), TableContent content, KeyOf key_of) {
  std::map<decltype(key_of(std::declval<const Row&>())), std::string> seen;
  for (const toml::table* row : rows) {
    auto x = read(*row, content);
    if (!x) return x.error();
    if (auto [it, fresh] = seen.emplace(key_of(*x), where(*row)); !fresh) {
      return Error{where(*row) + ": [[" + section + "]]: the same shape as the row at " + it->second};
    }
    table.add(std::move(*x));
  }
  return Ok{};
}

}  // namespace

double TablePower::limit_slowdown(double share) const {
  if (limit_gemm_share.empty()) return 1;
  share = std::clamp(share, 0.0, 1.0);
  double x0 = 0, y0 = 1;  // no compute-bound work: nothing to slow down
  for (std::size_t i = 0; i < limit_gemm_share.size(); ++i) {
    const double x1 = limit_gemm_share[i], y1 = limit_gemm_slowdown[i];
    if (share <= x1) return y0 + (y1 - y0) * (share - x0) / (x1 - x0);
    x0 = x1;
    y0 = y1;
  }
  return y0;
}

const char* to_string(Match m) {
  switch (m) {
    case Match::exact: return "exact";
    case Match::nearest: return "nearest";
    case Match::roofline: return "roofline";
  }
  return "?";
}

Expected<KernelTable> KernelTable::load(const std::filesystem::path& path, const std::string& display_path,
                                        TableContent content) {
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  KernelTable g;
  g.display_path_ = display_path;
  TableReader top(*file, "");
  const toml::table* prov_t = top.table("provenance");
  const toml::table* device_t = top.table("device");
  const toml::table* power_t = top.table("power");
  const toml::table* contention_t = top.table("contention");
  auto gemm_rows = rows_of(top, "gemm");
  if (!gemm_rows) return gemm_rows.error();
  auto attention_rows = rows_of(top, "attention");
  if (!attention_rows) return attention_rows.error();
  auto memory_rows = rows_of(top, "memory_bound");
  if (!memory_rows) return memory_rows.error();
  auto fp8_rows = rows_of(top, "gemm_fp8");
  if (!fp8_rows) return fp8_rows.error();
  auto elementwise_rows = rows_of(top, "pytorch_elementwise");
  if (!elementwise_rows) return elementwise_rows.error();
  if (content == TableContent::calibration) {
    if (!top.failed() && prov_t == nullptr) top.fail("provenance", "missing table [provenance]");
    if (!top.failed() && device_t == nullptr) top.fail("device", "missing table [device]");
  }
  if (Status s = top.finish(); !s) return s.error();

  if (prov_t != nullptr) {
    TableProvenance p;
    if (Status s = read_provenance(*prov_t, p); !s) return s.error();
    g.provenance_ = p;
  }
  if (device_t != nullptr) {
    TableDevice d;
    if (Status s = read_device(*device_t, d); !s) return s.error();
    g.device_ = d;
  }
  if (Status s = read_rows(g, *gemm_rows, "gemm", read_gemm, content, [](const GemmRow& r) { return r.shape; }); !s) {
    return s.error();
  }
  if (Status s = read_rows(g, *attention_rows, "attention", read_attention, content,
                           [](const AttentionRow& r) { return std::pair{r.implementation, r.shape}; });
      !s) {
    return s.error();
  }
  if (Status s = read_rows(g, *memory_rows, "memory_bound", read_memory_bound, content,
                           [](const MemoryBoundRow& r) { return r.shape; });
      !s) {
    return s.error();
  }
  if (Status s = read_rows(g, *fp8_rows, "gemm_fp8", read_fp8_gemm, content,
                           [](const Fp8GemmRow& r) { return std::tuple{r.m, r.n, r.k, r.scaling}; });
      !s) {
    return s.error();
  }
  if (Status s = read_rows(g, *elementwise_rows, "pytorch_elementwise", read_pytorch_elementwise, content,
                           [](const ElementwiseRow& r) { return r.key(); });
      !s) {
    return s.error();
  }
  if (power_t != nullptr) {
    TablePower p;
    if (Status s = read_power(*power_t, p); !s) return s.error();
    g.power_ = p;
  }
  if (contention_t != nullptr) {
    TableContention c;
    if (Status s = read_contention(*contention_t, c); !s) return s.error();
    g.contention_ = c;
  }
  return g;
}

bool KernelTable::add(GemmRow row) {
  if (!gemm_keys_.insert(row.shape).second) return false;
  gemms_.push_back(std::move(row));
  return true;
}

bool KernelTable::add(AttentionRow row) {
  if (!attention_keys_.insert({row.implementation, row.shape}).second) return false;
  attentions_.push_back(std::move(row));
  return true;
}

bool KernelTable::add(MemoryBoundRow row) {
  if (!memory_bound_keys_.insert(row.shape).second) return false;
  memory_bounds_.push_back(std::move(row));
  return true;
}

bool KernelTable::add(ElementwiseRow row) {
  const auto at = std::lower_bound(elementwise_rows_.begin(), elementwise_rows_.end(), row,
                                   [](const ElementwiseRow& a, const ElementwiseRow& b) { return a.key() < b.key(); });
  if (at != elementwise_rows_.end() && at->key() == row.key()) return false;
  elementwise_rows_.insert(at, std::move(row));
  return true;
}

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

void KernelTable::add_rows(const KernelTable& other) {
  for (const GemmRow& r : other.gemms_) add(r);
  for (const AttentionRow& r : other.attentions_) add(r);
  for (const MemoryBoundRow& r : other.memory_bounds_) add(r);
  for (const Fp8GemmRow& r : other.fp8_gemms_) add(r);
  for (const ElementwiseRow& r : other.elementwise_rows_) add(r);
}

const TableProvenance& KernelTable::provenance() const {
  COMMBOUND_CHECK(provenance_.has_value(), "provenance() of a table without [provenance]");
  return *provenance_;
}

const TableDevice& KernelTable::device() const {
  COMMBOUND_CHECK(device_.has_value(), "device() of a table without [device]");
  return *device_;
}

std::string KernelTable::describe() const {
  const TableProvenance& p = provenance();
  if (p.derived) return "derived: " + display_path_ + " (" + p.gpu + ", derived from " + p.derived_from + ")";
  return "measured: " + display_path_ + " (" + p.gpu + ", " + p.date + ", commit " + p.tool_commit + ")";
}

bool KernelTable::has_attention(const std::string& implementation) const {
  return std::any_of(attentions_.begin(), attentions_.end(),
                     [&](const AttentionRow& r) { return r.implementation == implementation; });
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
  const auto runs = op_runs(elementwise_rows_);
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
  const auto tiling = implementation == "flash2" ? flash2_tiling(s.head_dim, s.direction) : std::nullopt;
  const std::optional<long> sms = provenance_ ? provenance_->sm_count : std::nullopt;
  if (!tiling || !sms) return s.flops() / row.flops();
  const long slots = *sms * tiling->ctas_per_sm;
  return attention_drain_tiles(s, *tiling, slots) / attention_drain_tiles(row, *tiling, slots);
}

Priced KernelTable::roofline(double flops, double bytes) const {
  const TableDevice& d = device();
  return {std::max(flops / d.gemm_flops_per_s, bytes / d.copy_bytes_per_s), Match::roofline};
}

Priced KernelTable::price(const KernelShape& shape, const std::string& attention_implementation) const {
  if (const auto* s = std::get_if<GemmShape>(&shape)) {
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
    const AttentionRow* best = nullptr;
    double best_d = std::numeric_limits<double>::infinity();
    for (const auto& r : attentions_) {
      if (r.implementation != attention_implementation || r.shape.direction != s->direction ||
          r.shape.head_dim != s->head_dim) {
        continue;
      }
      if (r.shape == *s) return {timed(r.time).p50_s, Match::exact, spread(r.time)};
      const double d = log_gap(r.shape.batch, s->batch) + log_gap(r.shape.heads, s->heads) +
                       log_gap(r.shape.kv_heads, s->kv_heads) + log_gap(r.shape.seq, s->seq) +
                       (r.shape.causal != s->causal ? kCausalMismatchPenalty : 0);
      if (d < best_d) best_d = d, best = &r;
    }
    if (best == nullptr) return roofline(s->flops(), s->bytes());
    return {timed(best->time).p50_s * attention_scale(*s, best->shape, attention_implementation), Match::nearest,
            spread(best->time)};
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

void KernelTable::write(std::ostream& out, const std::vector<std::string>& comments) const {
  for (const auto& c : comments) out << "# " << c << "\n";
  if (!comments.empty()) out << "\n";
  bool first = true;
  if (provenance_) write_section(out, first, "provenance", provenance_table(*provenance_));
  if (device_) {
    toml::table t;
    t.insert("copy_GBps", device_->copy_bytes_per_s / kBytesPerGB);
    t.insert("gemm_TFLOPs", device_->gemm_flops_per_s / kFlopsPerTFLOP);
    write_section(out, first, "device", std::move(t));
  }
  if (power_) write_section(out, first, "power", power_table(*power_));
  if (contention_) write_section(out, first, "contention", contention_table(*contention_));
  write_rows(out, first, "gemm", gemms_);
  write_rows(out, first, "attention", attentions_);
  write_rows(out, first, "memory_bound", memory_bounds_);
  write_rows(out, first, "gemm_fp8", fp8_gemms_);
  write_rows(out, first, "pytorch_elementwise", elementwise_rows_);
  if (!first) out << "\n";
}

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
  for (const auto& [first, last] : op_runs(elementwise_rows_)) {
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

std::string table_name_for_device(const std::filesystem::path& gpus_toml, const std::string& device_name) {
  if (auto gpus = parse_toml_file(gpus_toml); gpus) {
    for (const auto& [name, node] : *gpus) {
      const toml::table* t = node.as_table();
      if (t != nullptr && (*t)["device_name"].value_or(std::string()) == device_name) return std::string(name.str());
    }
  }
  std::string s;
  for (char c : device_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s;
}

}  // namespace commbound::calibration
