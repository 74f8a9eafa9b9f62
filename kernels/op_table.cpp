#include "kernels/op_table.hpp"

#include "kernels/memory_bound_op.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace commbound::kernels {
namespace {

// A value as the user wrote it: strings quoted, numbers and booleans as TOML prints them.
std::string show(const toml::node& node) {
  std::ostringstream out;
  if (const auto s = node.value<std::string>(); s && node.is_string()) return toml_string(*s);
  node.visit([&](auto&& v) {
    if constexpr (toml::is_value<decltype(v)>) out << v;
    else out << "{...}";
  });
  return out.str();
}

// The error text for `key` of the row table `row` in `path`: "file:line: key = value: why" (the
// row's line and no value when the key is missing).
std::string row_error(const std::filesystem::path& path, const toml::table& row, const std::string& key,
                      const std::string& why) {
  std::ostringstream out;
  if (const toml::node* v = row.get(key); v != nullptr) {
    out << path.string() << ':' << v->source().begin.line << ": " << key << " = " << show(*v);
  } else {
    out << path.string() << ':' << row.source().begin.line << ": " << key;
  }
  out << ": " << why;
  return out.str();
}

// Reads one row table's keys, refusing unknown ones and wrong types.
class RowReader {
public:
  RowReader(const std::filesystem::path& path, const toml::table& row) : path_(path), row_(row) {}

  Expected<std::int64_t> integer(const std::string& key, std::int64_t min_value) {
    seen_.push_back(key);
    const toml::node* v = row_.get(key);
    if (v == nullptr) return Error{row_error(path_, row_, key, "missing")};
    const auto value = v->value<std::int64_t>();
    if (!value || !v->is_integer()) return Error{row_error(path_, row_, key, "must be an integer")};
    if (*value < min_value) return Error{row_error(path_, row_, key, "must be >= " + std::to_string(min_value))};
    return *value;
  }
  Expected<std::string> string(const std::string& key, const std::vector<std::string>& allowed) {
    seen_.push_back(key);
    const toml::node* v = row_.get(key);
    if (v == nullptr) return Error{row_error(path_, row_, key, "missing")};
    const auto value = v->value<std::string>();
    if (!value) return Error{row_error(path_, row_, key, "must be a string")};
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Error{row_error(path_, row_, key, "must be one of " + list)};
    }
    return *value;
  }
  Expected<bool> boolean(const std::string& key) {
    seen_.push_back(key);
    const toml::node* v = row_.get(key);
    if (v == nullptr) return Error{row_error(path_, row_, key, "missing")};
    if (!v->is_boolean()) return Error{row_error(path_, row_, key, "must be true or false")};
    return *v->value<bool>();
  }
  // An optional non-negative number (times, bytes); 0 when absent.
  Expected<double> optional_number(const std::string& key) {
    seen_.push_back(key);
    const toml::node* v = row_.get(key);
    if (v == nullptr) return 0.0;
    const auto value = v->value<double>();
    if (!value || !(v->is_floating_point() || v->is_integer())) {
      return Error{row_error(path_, row_, key, "must be a number")};
    }
    if (*value < 0) return Error{row_error(path_, row_, key, "must be >= 0")};
    return *value;
  }
  Expected<Timing> timing() {
    Timing t;
    for (auto [key, field] : {std::pair{"p10_ms", &t.p10_ms}, std::pair{"p50_ms", &t.p50_ms},
                              std::pair{"p90_ms", &t.p90_ms}}) {
      auto v = optional_number(key);
      if (!v) return v.error();
      *field = *v;
    }
    return t;
  }
  Status no_unknown_keys() const {
    for (const auto& [key, value] : row_) {
      if (std::find(seen_.begin(), seen_.end(), std::string(key.str())) == seen_.end()) {
        std::ostringstream out;
        out << path_.string() << ':' << value.source().begin.line << ": " << key.str() << " = " << show(value)
            << ": unknown key";
        return Error{out.str()};
      }
    }
    return Ok{};
  }

private:
  const std::filesystem::path& path_;
  const toml::table& row_;
  std::vector<std::string> seen_;
};

Expected<GemmRow> read_gemm(const std::filesystem::path& path, const toml::table& t) {
  RowReader r(path, t);
  GemmRow row;
  auto m = r.integer("m", 1), n = r.integer("n", 1), k = r.integer("k", 1);
  if (!m) return m.error();
  if (!n) return n.error();
  if (!k) return k.error();
  auto layout = r.string("layout", {"forward", "dgrad", "wgrad"});
  if (!layout) return layout.error();
  auto timing = r.timing();
  if (!timing) return timing.error();
  if (Status s = r.no_unknown_keys(); !s) return s.error();
  row.m = *m;
  row.n = *n;
  row.k = *k;
  row.layout = *layout == "forward" ? GemmLayout::forward : *layout == "dgrad" ? GemmLayout::dgrad : GemmLayout::wgrad;
  row.timing = *timing;
  return row;
}

Expected<AttentionRow> read_attention(const std::filesystem::path& path, const toml::table& t) {
  RowReader r(path, t);
  AttentionRow row;
  // `implementation` may be left out of a shapes file: the calibration tool measures its own kernel.
  if (t.get("implementation") != nullptr) {
    auto impl = r.string("implementation", {"commbound", "cudnn"});
    if (!impl) return impl.error();
    row.implementation = *impl;
  }
  auto direction = r.string("direction", {"forward", "backward"});
  if (!direction) return direction.error();
  row.backward = *direction == "backward";
  for (auto [key, field] : {std::pair{"batch", &row.batch}, std::pair{"heads", &row.heads},
                            std::pair{"kv_heads", &row.kv_heads}, std::pair{"seq", &row.seq},
                            std::pair{"head_dim", &row.head_dim}}) {
    auto v = r.integer(key, 1);
    if (!v) return v.error();
    *field = static_cast<int>(*v);
  }
  auto causal = r.boolean("causal");
  if (!causal) return causal.error();
  row.causal = *causal;
  auto timing = r.timing();
  if (!timing) return timing.error();
  if (Status s = r.no_unknown_keys(); !s) return s.error();
  row.timing = *timing;
  if (row.heads % row.kv_heads != 0) return Error{row_error(path, t, "kv_heads", "must divide heads")};
  return row;
}

Expected<MemoryBoundRow> read_memory_bound(const std::filesystem::path& path, const toml::table& t) {
  RowReader r(path, t);
  MemoryBoundRow row;
  auto op = r.string("op", memory_bound_op_names());
  if (!op) return op.error();
  auto tokens = r.integer("tokens", 1), width = r.integer("width", 1);
  if (!tokens) return tokens.error();
  if (!width) return width.error();
  auto bytes = r.optional_number("bytes");
  if (!bytes) return bytes.error();
  auto timing = r.timing();
  if (!timing) return timing.error();
  if (Status s = r.no_unknown_keys(); !s) return s.error();
  row.op = *op;
  row.tokens = *tokens;
  row.width = *width;
  row.bytes = *bytes;
  row.timing = *timing;
  return row;
}

bool same_shape(const GemmRow& a, const GemmRow& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.layout == b.layout;
}
bool same_shape(const AttentionRow& a, const AttentionRow& b) {
  return a.implementation == b.implementation && a.backward == b.backward && a.batch == b.batch &&
         a.heads == b.heads && a.kv_heads == b.kv_heads && a.seq == b.seq && a.head_dim == b.head_dim &&
         a.causal == b.causal;
}
bool same_shape(const MemoryBoundRow& a, const MemoryBoundRow& b) {
  return a.op == b.op && a.tokens == b.tokens && a.width == b.width;
}

template <class Row>
void merge_rows(std::vector<Row>& into, const std::vector<Row>& from) {
  for (const Row& row : from) {
    const bool held = std::any_of(into.begin(), into.end(), [&](const Row& r) { return same_shape(r, row); });
    if (!held) into.push_back(row);
  }
}

// Shortest text that reads back as the same double ("%.17g" trimmed by trying fewer digits).
std::string number(double x) {
  char buf[64];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";  // TOML float, not integer
  return s;
}

void append_timing(std::ostringstream& out, const Timing& t) {
  out << "p10_ms = " << number(t.p10_ms) << "\np50_ms = " << number(t.p50_ms) << "\np90_ms = " << number(t.p90_ms)
      << '\n';
}

}  // namespace

const char* to_string(GemmLayout layout) {
  switch (layout) {
    case GemmLayout::forward: return "forward";
    case GemmLayout::dgrad: return "dgrad";
    case GemmLayout::wgrad: return "wgrad";
  }
  return "?";
}

double AttentionRow::flops() const {
  const double forward = 4.0 * batch * heads * static_cast<double>(seq) * seq * head_dim * (causal ? 0.5 : 1.0);
  return backward ? 2.5 * forward : forward;
}

std::string describe(const GemmRow& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "gemm %s %lldx%lldx%lld", to_string(r.layout), static_cast<long long>(r.m),
                static_cast<long long>(r.n), static_cast<long long>(r.k));
  return buf;
}

std::string describe(const AttentionRow& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "attention %s b%d h%d/%d s%d d%d%s", r.backward ? "backward" : "forward", r.batch,
                r.heads, r.kv_heads, r.seq, r.head_dim, r.causal ? "" : " full");
  return buf;
}

std::string describe(const MemoryBoundRow& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s %lldx%lld", r.op.c_str(), static_cast<long long>(r.tokens),
                static_cast<long long>(r.width));
  return buf;
}

void OpTable::merge(const OpTable& other) {
  merge_rows(gemm, other.gemm);
  merge_rows(attention, other.attention);
  merge_rows(memory_bound, other.memory_bound);
}

Expected<OpTable> read_op_table(const std::filesystem::path& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    return Error{path.string() + ':' + std::to_string(e.source().begin.line) + ": " + std::string(e.description())};
  }
  OpTable table;
  auto rows = [&](const char* name, auto read, auto& into) -> Status {
    const toml::node* node = doc.get(name);
    if (node == nullptr) return Ok{};
    const toml::array* array = node->as_array();
    if (array == nullptr) {
      return Error{path.string() + ':' + std::to_string(node->source().begin.line) + ": " + name +
                   ": must be an array of tables ([[" + name + "]])"};
    }
    for (const toml::node& element : *array) {
      const toml::table* t = element.as_table();
      if (t == nullptr) {
        return Error{path.string() + ':' + std::to_string(element.source().begin.line) + ": " + name +
                     ": must be an array of tables ([[" + name + "]])"};
      }
      auto row = read(path, *t);
      if (!row) return row.error();
      into.push_back(*row);
    }
    return Ok{};
  };
  if (Status s = rows("gemm", read_gemm, table.gemm); !s) return s.error();
  if (Status s = rows("attention", read_attention, table.attention); !s) return s.error();
  if (Status s = rows("memory_bound", read_memory_bound, table.memory_bound); !s) return s.error();
  for (const auto& [key, value] : doc) {
    static const char* const known[] = {"gemm", "attention", "memory_bound", "provenance", "device", "power",
                                        "contention"};
    if (std::find(std::begin(known), std::end(known), key.str()) == std::end(known)) {
      std::ostringstream out;
      out << path.string() << ':' << value.source().begin.line << ": " << key.str() << ": unknown table";
      return Error{out.str()};
    }
  }
  return table;
}

std::string format_op_rows(const OpTable& table, bool with_timing) {
  std::ostringstream out;
  for (const GemmRow& r : table.gemm) {
    out << "\n[[gemm]]\nm = " << r.m << "\nn = " << r.n << "\nk = " << r.k << "\nlayout = \"" << to_string(r.layout)
        << "\"\n";
    if (with_timing) append_timing(out, r.timing);
  }
  for (const AttentionRow& r : table.attention) {
    out << "\n[[attention]]\n";
    if (with_timing) out << "implementation = " << toml_string(r.implementation) << '\n';
    out << "direction = \"" << (r.backward ? "backward" : "forward") << "\"\nbatch = " << r.batch
        << "\nheads = " << r.heads << "\nkv_heads = " << r.kv_heads << "\nseq = " << r.seq
        << "\nhead_dim = " << r.head_dim << "\ncausal = " << (r.causal ? "true" : "false") << '\n';
    if (with_timing) append_timing(out, r.timing);
  }
  for (const MemoryBoundRow& r : table.memory_bound) {
    out << "\n[[memory_bound]]\nop = " << toml_string(r.op) << "\ntokens = " << r.tokens << "\nwidth = " << r.width
        << '\n';
    if (with_timing) {
      out << "bytes = " << number(r.bytes) << '\n';
      append_timing(out, r.timing);
    }
  }
  return out.str();
}

std::string table_name_for_device(const std::filesystem::path& gpus_toml, const std::string& device_name) {
  try {
    const toml::table gpus = toml::parse_file(gpus_toml.string());
    for (const auto& [name, node] : gpus) {
      const toml::table* t = node.as_table();
      if (t != nullptr && (*t)["device_name"].value_or(std::string()) == device_name) return std::string(name.str());
    }
  } catch (const toml::parse_error&) {
    // No presets to match against: the device's own name names the table.
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

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace commbound::kernels
