#include "sim/gpu_table.hpp"

#include "sim/presets.hpp"
#include "sim/table_reader.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace commbound::sim {
namespace {

constexpr double kSecondsPerMs = 1e-3;
constexpr double kBytesPerGB = 1e9;
constexpr double kFlopsPerTFLOP = 1e12;
constexpr double kHzPerMHz = 1e6;
constexpr long kMaxDim = 1L << 40;
// A row whose causality differs from the shape's is used only when no row of the same causality
// exists: its distance gets this penalty (larger than any log-distance between real shapes).
constexpr double kCausalMismatchPenalty = 1e3;

double log_gap(std::int64_t a, std::int64_t b) {
  const double d = std::log(static_cast<double>(a)) - std::log(static_cast<double>(b));
  return d * d;
}

KernelTiming read_timing(TableReader& r) {
  KernelTiming t;
  t.p10_s = r.required_number("p10_ms", 1e-9, 1e9) * kSecondsPerMs;
  t.p50_s = r.required_number("p50_ms", 1e-9, 1e9) * kSecondsPerMs;
  t.p90_s = r.required_number("p90_ms", 1e-9, 1e9) * kSecondsPerMs;
  if (!r.failed() && !(t.p10_s <= t.p50_s && t.p50_s <= t.p90_s)) r.fail("p50_ms", "must lie between p10_ms and p90_ms");
  return t;
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

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  std::string s = buf;
  // TOML floats need a decimal point or an exponent.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void write_timing(std::ostream& out, const KernelTiming& t) {
  out << "p10_ms = " << fmt(t.p10_s / kSecondsPerMs) << "\n"
      << "p50_ms = " << fmt(t.p50_s / kSecondsPerMs) << "\n"
      << "p90_ms = " << fmt(t.p90_s / kSecondsPerMs) << "\n";
}

KernelTiming scaled(const KernelTiming& t, double f) { return {t.p10_s * f, t.p50_s * f, t.p90_s * f}; }

}  // namespace

const char* to_string(Match m) {
  switch (m) {
    case Match::exact: return "exact";
    case Match::nearest: return "nearest";
    case Match::roofline: return "roofline";
  }
  return "?";
}

Expected<GpuTable> GpuTable::load(const std::filesystem::path& path, const std::string& display_path) {
  auto file = parse_toml_file(path);
  if (!file) return file.error();
  GpuTable g;
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
  if (!top.failed() && prov_t == nullptr) top.fail("provenance", "missing table [provenance]");
  if (!top.failed() && device_t == nullptr) top.fail("device", "missing table [device]");
  if (Status s = top.finish(); !s) return s.error();

  {
    TableReader r(*prov_t, "provenance");
    TableProvenance& p = g.provenance_;
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
    if (Status s = r.finish(); !s) return s.error();
  }
  {
    TableReader r(*device_t, "device");
    g.copy_bytes_per_s_ = r.required_number("copy_GBps", 1e-3, 1e7) * kBytesPerGB;
    g.gemm_flops_per_s_ = r.required_number("gemm_TFLOPs", 1e-3, 1e7) * kFlopsPerTFLOP;
    if (Status s = r.finish(); !s) return s.error();
  }
  std::map<GemmShape, std::string> seen_gemm;
  for (const toml::table* row : *gemm_rows) {
    TableReader r(*row, "gemm");
    GemmRow x;
    x.shape.m = r.required_integer("m", 1, kMaxDim);
    x.shape.n = r.required_integer("n", 1, kMaxDim);
    x.shape.k = r.required_integer("k", 1, kMaxDim);
    x.shape.layout = *parse_gemm_layout(r.choice("layout", "forward", {"forward", "dgrad", "wgrad"}));
    if (!r.has("layout") && !r.failed()) r.fail("layout", "missing (required)");
    x.time = read_timing(r);
    if (Status s = r.finish(); !s) return s.error();
    if (auto [it, fresh] = seen_gemm.emplace(x.shape, where(*row)); !fresh) {
      return Error{where(*row) + ": [[gemm]]: the same shape as the row at " + it->second};
    }
    g.gemms_.push_back(x);
  }
  std::map<std::pair<std::string, AttentionShape>, std::string> seen_attention;
  for (const toml::table* row : *attention_rows) {
    TableReader r(*row, "attention");
    AttentionRow x;
    x.implementation = r.choice("implementation", "commbound", {"commbound", "cudnn"});
    if (!r.has("implementation") && !r.failed()) r.fail("implementation", "missing (required)");
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
    x.time = read_timing(r);
    if (Status s = r.finish(); !s) return s.error();
    if (auto [it, fresh] = seen_attention.emplace(std::pair{x.implementation, x.shape}, where(*row)); !fresh) {
      return Error{where(*row) + ": [[attention]]: the same shape as the row at " + it->second};
    }
    g.attentions_.push_back(x);
  }
  std::map<MemoryBoundShape, std::string> seen_memory;
  for (const toml::table* row : *memory_rows) {
    TableReader r(*row, "memory_bound");
    MemoryBoundRow x;
    x.shape.op = r.choice("op", "", memory_bound_ops());
    if (!r.has("op") && !r.failed()) r.fail("op", "missing (required)");
    x.shape.tokens = r.required_integer("tokens", 1, kMaxDim);
    x.shape.width = r.required_integer("width", 1, kMaxDim);
    x.bytes = r.required_number("bytes", 1, 1e18);
    x.time = read_timing(r);
    if (Status s = r.finish(); !s) return s.error();
    if (auto [it, fresh] = seen_memory.emplace(x.shape, where(*row)); !fresh) {
      return Error{where(*row) + ": [[memory_bound]]: the same shape as the row at " + it->second};
    }
    g.memory_bounds_.push_back(x);
  }
  if (power_t != nullptr) {
    TableReader r(*power_t, "power");
    TablePower p;
    p.idle_w = r.required_number("idle_W", 0, 1e5);
    p.gemm_w = r.required_number("gemm_W", 0, 1e5);
    p.memory_bound_w = r.required_number("memory_bound_W", 0, 1e5);
    if (r.has("gemm_sm_clock_MHz")) p.gemm_sm_clock_hz = r.number("gemm_sm_clock_MHz", 0, 1, 1e5) * kHzPerMHz;
    if (r.has("mixed_W")) p.mixed_w = r.number("mixed_W", 0, 0, 1e5);
    if (r.has("mixed_compute_fraction")) p.mixed_compute_fraction = r.number("mixed_compute_fraction", 0, 0, 1);
    if (r.has("power_limit_W")) p.power_limit_w = r.number("power_limit_W", 0, 1, 1e5);
    if (r.has("sample_period_ms")) p.sample_period_s = r.number("sample_period_ms", 0, 1e-3, 1e6) * kSecondsPerMs;
    if (r.has("phase_s")) p.phase_s = r.number("phase_s", 0, 1e-3, 1e6);
    if (Status s = r.finish(); !s) return s.error();
    g.power_ = p;
  }
  if (contention_t != nullptr) {
    TableReader r(*contention_t, "contention");
    TableContention c;
    if (r.has("comm_sms")) c.comm_sms = r.integer("comm_sms", 0, 0, 1 << 20);
    if (r.has("comm_GBps")) c.comm_bytes_per_s = r.number("comm_GBps", 0, 0, 1e7) * kBytesPerGB;
    c.gemm_factor = r.required_number("gemm_factor", 1, 10);
    c.attention_factor = r.required_number("attention_factor", 1, 10);
    if (Status s = r.finish(); !s) return s.error();
    g.contention_ = c;
  }
  return g;
}

std::string GpuTable::describe() const {
  const TableProvenance& p = provenance_;
  if (p.derived) return "derived: " + display_path_ + " (" + p.gpu + ", derived from " + p.derived_from + ")";
  return "measured: " + display_path_ + " (" + p.gpu + ", " + p.date + ", commit " + p.tool_commit + ")";
}

bool GpuTable::has_attention(const std::string& implementation) const {
  for (const auto& r : attentions_) {
    if (r.implementation == implementation) return true;
  }
  return false;
}

Priced GpuTable::roofline(double flops, double bytes) const {
  return {std::max(flops / gemm_flops_per_s_, bytes / copy_bytes_per_s_), Match::roofline};
}

Priced GpuTable::gemm(const GemmShape& s) const {
  const GemmRow* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& r : gemms_) {
    if (r.shape.layout != s.layout) continue;
    if (r.shape == s) return {r.time.p50_s, Match::exact};
    const double d = log_gap(r.shape.m, s.m) + log_gap(r.shape.n, s.n) + log_gap(r.shape.k, s.k);
    if (d < best_d) best_d = d, best = &r;
  }
  if (best == nullptr) return roofline(s.flops(), s.bytes());
  return {best->time.p50_s * s.flops() / best->shape.flops(), Match::nearest};
}

Priced GpuTable::attention(const std::string& implementation, const AttentionShape& s) const {
  const AttentionRow* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& r : attentions_) {
    if (r.implementation != implementation || r.shape.direction != s.direction || r.shape.head_dim != s.head_dim) continue;
    if (r.shape == s) return {r.time.p50_s, Match::exact};
    const double d = log_gap(r.shape.batch, s.batch) + log_gap(r.shape.heads, s.heads) +
                     log_gap(r.shape.kv_heads, s.kv_heads) + log_gap(r.shape.seq, s.seq) +
                     (r.shape.causal != s.causal ? kCausalMismatchPenalty : 0);
    if (d < best_d) best_d = d, best = &r;
  }
  if (best == nullptr) return roofline(s.flops(), s.bytes());
  return {best->time.p50_s * s.flops() / best->shape.flops(), Match::nearest};
}

Priced GpuTable::memory_bound(const MemoryBoundShape& s) const {
  const MemoryBoundRow* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  for (const auto& r : memory_bounds_) {
    if (r.shape.op != s.op) continue;
    if (r.shape == s) return {r.time.p50_s, Match::exact};
    const double d = log_gap(r.shape.tokens, s.tokens) + log_gap(r.shape.width, s.width);
    if (d < best_d) best_d = d, best = &r;
  }
  if (best == nullptr) return roofline(0, s.bytes());
  // The row's achieved bytes/s applied to this shape's bytes, both counted by the same convention.
  return {best->time.p50_s * s.bytes() / best->shape.bytes(), Match::nearest};
}

void GpuTable::write(std::ostream& out) const {
  const TableProvenance& p = provenance_;
  out << "[provenance]\n";
  out << "gpu = " << quoted(p.gpu) << "\n";
  if (p.sm_count) out << "sm_count = " << *p.sm_count << "\n";
  if (p.sm_clock_max_hz) out << "sm_clock_max_MHz = " << fmt(*p.sm_clock_max_hz / kHzPerMHz) << "\n";
  if (p.memory_clock_hz) out << "memory_clock_MHz = " << fmt(*p.memory_clock_hz / kHzPerMHz) << "\n";
  if (p.memory_bytes) out << "memory_GB = " << fmt(*p.memory_bytes / kBytesPerGB) << "\n";
  for (const auto& [key, value] : {std::pair{"driver", &p.driver}, std::pair{"cuda_runtime", &p.cuda_runtime},
                                   std::pair{"cublaslt", &p.cublaslt}, std::pair{"date", &p.date},
                                   std::pair{"tool_commit", &p.tool_commit}}) {
    if (!value->empty() || std::string(key) == "date" || std::string(key) == "tool_commit") {
      out << key << " = " << quoted(*value) << "\n";
    }
  }
  out << "derived = " << (p.derived ? "true" : "false") << "\n";
  if (!p.derived_from.empty()) out << "derived_from = " << quoted(p.derived_from) << "\n";
  if (!p.derivation.empty()) out << "derivation = " << quoted(p.derivation) << "\n";
  if (!p.timed_runs.empty()) out << "timed_runs = " << quoted(p.timed_runs) << "\n";
  if (!p.input_rotation.empty()) out << "input_rotation = " << quoted(p.input_rotation) << "\n";
  if (p.measurement_s) out << "measurement_s = " << fmt(*p.measurement_s) << "\n";
  out << "\n[device]\n"
      << "copy_GBps = " << fmt(copy_bytes_per_s_ / kBytesPerGB) << "\n"
      << "gemm_TFLOPs = " << fmt(gemm_flops_per_s_ / kFlopsPerTFLOP) << "\n";
  for (const auto& r : gemms_) {
    out << "\n[[gemm]]\nm = " << r.shape.m << "\nn = " << r.shape.n << "\nk = " << r.shape.k
        << "\nlayout = " << quoted(to_string(r.shape.layout)) << "\n";
    write_timing(out, r.time);
  }
  for (const auto& r : attentions_) {
    const AttentionShape& s = r.shape;
    out << "\n[[attention]]\nimplementation = " << quoted(r.implementation)
        << "\ndirection = " << quoted(to_string(s.direction)) << "\nbatch = " << s.batch << "\nheads = " << s.heads
        << "\nkv_heads = " << s.kv_heads << "\nseq = " << s.seq << "\nhead_dim = " << s.head_dim
        << "\ncausal = " << (s.causal ? "true" : "false") << "\n";
    write_timing(out, r.time);
  }
  for (const auto& r : memory_bounds_) {
    out << "\n[[memory_bound]]\nop = " << quoted(r.shape.op) << "\ntokens = " << r.shape.tokens
        << "\nwidth = " << r.shape.width << "\nbytes = " << fmt(r.bytes) << "\n";
    write_timing(out, r.time);
  }
  if (power_) {
    const TablePower& w = *power_;
    out << "\n[power]\nidle_W = " << fmt(w.idle_w) << "\ngemm_W = " << fmt(w.gemm_w)
        << "\nmemory_bound_W = " << fmt(w.memory_bound_w) << "\n";
    if (w.gemm_sm_clock_hz) out << "gemm_sm_clock_MHz = " << fmt(*w.gemm_sm_clock_hz / kHzPerMHz) << "\n";
    if (w.mixed_w) out << "mixed_W = " << fmt(*w.mixed_w) << "\n";
    if (w.mixed_compute_fraction) out << "mixed_compute_fraction = " << fmt(*w.mixed_compute_fraction) << "\n";
    if (w.power_limit_w) out << "power_limit_W = " << fmt(*w.power_limit_w) << "\n";
    if (w.sample_period_s) out << "sample_period_ms = " << fmt(*w.sample_period_s / kSecondsPerMs) << "\n";
    if (w.phase_s) out << "phase_s = " << fmt(*w.phase_s) << "\n";
  }
  if (contention_) {
    const TableContention& c = *contention_;
    out << "\n[contention]\n";
    if (c.comm_sms) out << "comm_sms = " << *c.comm_sms << "\n";
    if (c.comm_bytes_per_s) out << "comm_GBps = " << fmt(*c.comm_bytes_per_s / kBytesPerGB) << "\n";
    out << "gemm_factor = " << fmt(c.gemm_factor) << "\nattention_factor = " << fmt(c.attention_factor) << "\n";
  }
}

GpuTable GpuTable::derive(const Datasheet& from, const Datasheet& to, const std::string& source_path,
                          const std::string& date) const {
  const double compute = from.peak_flops_per_s / to.peak_flops_per_s;  // time ratio of compute-bound kernels
  const double memory = from.hbm_bytes_per_s / to.hbm_bytes_per_s;     // time ratio of memory-bound kernels
  const double watts = to.tdp_w / from.tdp_w;
  auto short_fmt = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return std::string(buf);
  };
  auto peak_name = [&](const Datasheet& d) {
    return "dense " + d.peak_dtype + " " + short_fmt(d.peak_flops_per_s / kFlopsPerTFLOP) + " TFLOP/s";
  };
  GpuTable g;
  g.display_path_ = display_path_;
  TableProvenance& p = g.provenance_;
  p.gpu = to.description;
  p.memory_bytes = to.memory_bytes;
  p.date = date;
  p.tool_commit = provenance_.tool_commit;
  p.derived = true;
  p.derived_from = source_path + " (" + provenance_.gpu + ", " + provenance_.date + ")";
  const std::string dtype_note =
      from.peak_dtype == to.peak_dtype ? "" : " (" + to.name + " has no " + from.peak_dtype + ": its " + to.peak_dtype + " tensor peak)";
  p.derivation = "GEMM and attention times x " + short_fmt(compute) + " (" + from.name + " " + peak_name(from) + " / " +
                 to.name + " " + peak_name(to) + dtype_note + "), memory-bound times x " + short_fmt(memory) +
                 " (HBM " + short_fmt(from.hbm_bytes_per_s / kBytesPerGB) + " / " +
                 short_fmt(to.hbm_bytes_per_s / kBytesPerGB) + " GB/s), power x " + short_fmt(watts) + " (TDP " +
                 short_fmt(to.tdp_w) + " / " + short_fmt(from.tdp_w) +
                 " W, crude), contention copied; datasheet figures from calibration/gpus.toml";
  g.copy_bytes_per_s_ = copy_bytes_per_s_ / memory;
  g.gemm_flops_per_s_ = gemm_flops_per_s_ / compute;
  for (GemmRow r : gemms_) {
    r.time = scaled(r.time, compute);
    g.gemms_.push_back(r);
  }
  for (AttentionRow r : attentions_) {
    r.time = scaled(r.time, compute);
    g.attentions_.push_back(r);
  }
  for (MemoryBoundRow r : memory_bounds_) {
    r.time = scaled(r.time, memory);
    g.memory_bounds_.push_back(r);
  }
  if (power_) {
    TablePower w;
    w.idle_w = power_->idle_w * watts;
    w.gemm_w = power_->gemm_w * watts;
    w.memory_bound_w = power_->memory_bound_w * watts;
    if (power_->mixed_w) w.mixed_w = *power_->mixed_w * watts;
    w.mixed_compute_fraction = power_->mixed_compute_fraction;
    w.power_limit_w = to.tdp_w;  // the target's board limit (datasheet TDP)
    g.power_ = w;
  }
  g.contention_ = contention_;
  return g;
}

}  // namespace commbound::sim
