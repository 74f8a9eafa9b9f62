#include "core/table_reader.hpp"

#include "core/file_type.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace commbound {
namespace {

// The longest value an error shows: enough to recognise it, short enough to stay a line.
constexpr std::size_t kShownChars = 120;

// A value as an error shows it, on one line: toml++ writes a long array over several lines (its
// line breaks and their indentation become one space), and a long value is cut to kShownChars.
// (Control characters inside a string are escaped where the error leaves its reader: one_line.)
std::string show(const toml::node& node) {
  std::ostringstream out;
  if (node.is_string()) {
    out << '"' << node.value_or<std::string>("") << '"';
  } else if (node.is_table()) {
    out << "(a table)";
  } else if (node.is_array()) {
    out << *node.as_array();
  } else {
    node.visit([&](auto&& v) { out << v; });
  }
  std::string shown = out.str();
  if (node.is_array()) {
    std::string joined;
    bool line_break = false;
    for (const char c : shown) {
      if (c == '\n') {
        line_break = true;
      } else if (!(line_break && c == ' ')) {
        if (line_break && !joined.empty() && joined.back() != ' ') joined += ' ';
        line_break = false;
        joined += c;
      }
    }
    shown = joined;
  }
  if (shown.size() > kShownChars) shown = shown.substr(0, kShownChars - 3) + "...";
  return shown;
}

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date or time";
  }
}

// A bound as a plain decimal, the shortest that reads back exactly: 1048576, 0.001, 1000000 (not
// 1.04858e+06 or 1e+06, which a reader has to decode and which may not even be the bound).
std::string fmt(double v) {
  std::array<char, 400> text{};
  const auto end = std::to_chars(text.data(), text.data() + text.size(), v, std::chars_format::fixed).ptr;
  return std::string(text.data(), end);
}

}  // namespace

std::string where(const toml::node& node, const std::string& fallback) {
  const auto& src = node.source();
  if (!src.path) return fallback;
  return *src.path + ":" + std::to_string(src.begin.line);
}

Expected<toml::table> parse_toml_file(const std::filesystem::path& path) {
  // A folder opens as an empty stream on Linux and would read as an empty document.
  auto type = file_type_at(path);
  if (!type) return type.error();
  if (*type == std::filesystem::file_type::directory) return Error{path.string() + ": is a directory, not a TOML file"};
  std::ifstream in(path);
  if (!in) return Error{path.string() + ": cannot be read"};
  try {
    return toml::parse(in, path.string());
  } catch (const toml::parse_error& e) {
    return Error{path.string() + ":" + std::to_string(e.source().begin.line) + ": invalid TOML: " +
                 std::string(e.description())};
  }
}

TableReader::TableReader(const toml::table& table, std::string prefix, const Overrides* overrides, std::string file)
    : table_(table), prefix_(std::move(prefix)), file_(std::move(file)), overrides_(overrides) {}

std::string TableReader::where_is(const toml::node& node, const std::string& key) const {
  if (node.source().path || overrides_ == nullptr) return where(node);
  return set_origin(dotted(key)).value_or(where(node));
}

std::optional<std::string> TableReader::set_origin(const std::string& dotted_key) const {
  // A value from --set has no place in a file: name the --set (of the key, or of a table it made).
  for (std::string k = dotted_key;; k.erase(k.rfind('.'))) {
    if (auto it = overrides_->find(k); it != overrides_->end()) return it->second;
    if (k.find('.') == std::string::npos) break;
  }
  // A table a --set made on its way to a key inside it ("--set workload.trace=x" makes [workload]).
  const std::string inside = dotted_key + ".";
  for (const auto& [k, origin] : *overrides_) {
    if (k.rfind(inside, 0) == 0) return origin;
  }
  return std::nullopt;
}

void TableReader::fail_at(const toml::node* node, const std::string& key, const std::string& reason) {
  if (error_) return;
  if (node != nullptr) {
    error_ = Error{where_is(*node, key) + ": " + dotted(key) + " = " + show(*node) + ": " + reason};
  } else {
    // The table's place: in its file, or the --set that made it.
    const bool from_file = table_.source().path || overrides_ == nullptr || prefix_.empty();
    const std::string table_at = where(table_, file_.empty() ? "<input>" : file_);
    const std::string at = from_file ? table_at : set_origin(prefix_).value_or(table_at);
    error_ = Error{at + ": [" + prefix_ + "] " + dotted(key) + ": " + reason};
  }
}

void TableReader::fail(const std::string& key, const std::string& reason) { fail_at(table_.get(key), key, reason); }

const toml::node* TableReader::get(const std::string& key, bool required) {
  read_.insert(key);
  const toml::node* node = table_.get(key);
  if (node == nullptr && required) fail_at(nullptr, key, "missing (required)");
  return node;
}

std::string TableReader::string(const std::string& key, const std::string& fallback) {
  const toml::node* node = get(key, false);
  if (node == nullptr) return fallback;
  if (!node->is_string()) {
    fail_at(node, key, "expected a string, got " + type_name(*node));
    return fallback;
  }
  return node->value_or<std::string>("");
}

std::string TableReader::required_string(const std::string& key) {
  if (get(key, true) == nullptr) return "";
  return string(key, "");
}

std::string TableReader::choice(const std::string& key, const std::string& fallback,
                                const std::vector<std::string>& allowed) {
  std::string v = string(key, fallback);
  for (const auto& a : allowed) {
    if (v == a) return v;
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "must be one of: " + list);
  return fallback;
}

double TableReader::number(const std::string& key, double fallback, double min, double max) {
  const toml::node* node = get(key, false);
  if (node == nullptr) return fallback;
  if (!node->is_number()) {
    fail_at(node, key, "expected a number, got " + type_name(*node));
    return fallback;
  }
  const double v = node->value_or<double>(0.0);
  if (!std::isfinite(v) || v < min || v > max) {
    fail_at(node, key, "must be between " + fmt(min) + " and " + fmt(max));
    return fallback;
  }
  return v;
}

double TableReader::required_number(const std::string& key, double min, double max) {
  if (get(key, true) == nullptr) return 0;
  return number(key, 0, min, max);
}

long TableReader::integer(const std::string& key, long fallback, long min, long max) {
  const toml::node* node = get(key, false);
  if (node == nullptr) return fallback;
  if (!node->is_integer()) {
    fail_at(node, key, "expected an integer, got " + type_name(*node));
    return fallback;
  }
  const long v = static_cast<long>(node->value_or<int64_t>(0));
  if (v < min || v > max) {
    fail_at(node, key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    return fallback;
  }
  return v;
}

long TableReader::required_integer(const std::string& key, long min, long max) {
  if (get(key, true) == nullptr) return 0;
  return integer(key, 0, min, max);
}

bool TableReader::boolean(const std::string& key, bool fallback) {
  const toml::node* node = get(key, false);
  if (node == nullptr) return fallback;
  if (!node->is_boolean()) {
    fail_at(node, key, "expected true or false, got " + type_name(*node));
    return fallback;
  }
  return node->value_or<bool>(false);
}

std::vector<double> TableReader::numbers(const std::string& key, std::size_t count, double min, double max) {
  std::vector<double> out(count, 0.0);
  const toml::node* node = get(key, true);
  if (node == nullptr) return out;
  const toml::array* arr = node->as_array();
  if (arr == nullptr || arr->size() != count) {
    fail_at(node, key, "expected an array of " + std::to_string(count) + " numbers");
    return out;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const toml::node& e = *arr->get(i);
    const double v = e.value_or<double>(NAN);
    if (!e.is_number() || !(v >= min && v <= max)) {
      fail_at(node, key, "element " + std::to_string(i) + " must be a number between " + fmt(min) + " and " + fmt(max));
      return out;
    }
    out[i] = v;
  }
  return out;
}

const toml::table* TableReader::table(const std::string& key) {
  const toml::node* node = get(key, false);
  if (node == nullptr) return nullptr;
  if (!node->is_table()) {
    fail_at(node, key, "expected a table, got " + type_name(*node));
    return nullptr;
  }
  return node->as_table();
}

const toml::array* TableReader::array(const std::string& key) {
  const toml::node* node = get(key, false);
  if (node == nullptr) return nullptr;
  if (!node->is_array()) {
    fail_at(node, key, "expected an array, got " + type_name(*node));
    return nullptr;
  }
  return node->as_array();
}

const toml::array* TableReader::required_array(const std::string& key) {
  const toml::node* node = get(key, true);
  if (node == nullptr) return nullptr;
  if (!node->is_array() || node->as_array()->empty()) {
    fail_at(node, key, "expected a non-empty array");
    return nullptr;
  }
  return node->as_array();
}

Status TableReader::finish() {
  if (!error_) {
    for (const auto& [key, node] : table_) {
      const std::string k(key.str());
      if (!read_.count(k)) {
        std::string known;
        for (const auto& r : read_) known += (known.empty() ? "" : ", ") + r;
        error_ = Error{where_is(node, k) + ": " + dotted(k) + " = " + show(node) + ": unknown key" +
                       (prefix_.empty() ? "" : " in [" + prefix_ + "]") + " (known: " + known + ")"};
        break;
      }
    }
  }
  if (error_) return *error_;
  return Ok{};
}

}  // namespace commbound
