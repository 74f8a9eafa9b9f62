// A kernel table's file: reading it (every key checked, each row's place named in errors) and
// writing it (toml++'s formatter), and the name a measured GPU's table takes.
#include "calibration/table/kernel_table.hpp"

#include "core/check.hpp"
#include "core/table_reader.hpp"
#include "core/units.hpp"

#include <toml++/toml.h>

#include <cctype>
#include <map>
#include <tuple>

namespace commbound::calibration {

// The kernel shapes this table prices are model/'s.
using namespace commbound::model;
namespace {

constexpr long kMaxDim = 1L << 40;

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

// An optional section ([provenance], [device], [power], [contention]): read by `read` into `into`
// when the file has it, left empty otherwise.
template <class Section>
Status read_section(const toml::table* table, Status (*read)(const toml::table&, Section&),
                    std::optional<Section>& into) {
  if (table == nullptr) return Ok{};
  Section section;
  if (Status s = read(*table, section); !s) return s;
  into = section;
  return Ok{};
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

  if (Status s = read_section(prov_t, read_provenance, g.provenance_); !s) return s.error();
  if (Status s = read_section(device_t, read_device, g.device_); !s) return s.error();
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
  if (Status s = read_section(power_t, read_power, g.power_); !s) return s.error();
  if (Status s = read_section(contention_t, read_contention, g.contention_); !s) return s.error();
  return g;
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
