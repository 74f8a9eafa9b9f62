// TableReader: typed, validated reads of one TOML table, with errors that name the file, the line,
// the dotted key and the offending value. Every key a table holds must be read: finish() reports
// the first unknown key, so a typo never silently keeps a default. The one
// validated reader of commbound's TOML: calibration tables, the model zoo, presets and scenarios.
//
// The first error wins; later reads return their fallback and are ignored. Typical use:
//   TableReader r(table, "cluster");
//   int nodes = r.integer("nodes", 1, 1, 1 << 20);
//   if (Status s = r.finish(); !s) return s.error();
#pragma once

#include "core/expected.hpp"

#include <toml++/toml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace commbound {

// Values given on the command line: dotted key -> the "--set key=value" that set it.
using Overrides = std::map<std::string, std::string>;

// "file:line" of a TOML node (its source), or `fallback` when it has none.
std::string where(const toml::node& node, const std::string& fallback = "<input>");

// Parses a TOML file; the error names the file and line ("file:line: invalid TOML: why") or says
// that it cannot be read, or is a directory.
Expected<toml::table> parse_toml_file(const std::filesystem::path& path);

class TableReader {
public:
  // `table` must outlive the reader; `prefix` is the table's dotted path ("" at the top level);
  // `overrides` (may be null) names the --set behind a value that has no place in a file; `file`
  // (may be empty) is the document the table belongs to, named by an error about a table the
  // document lacks (an absent section read as empty).
  TableReader(const toml::table& table, std::string prefix, const Overrides* overrides = nullptr, std::string file = {});

  bool has(const std::string& key) const { return table_.contains(key); }
  bool is_table(const std::string& key) const { return table_.contains(key) && table_.get(key)->is_table(); }
  bool is_boolean(const std::string& key) const { return table_.contains(key) && table_.get(key)->is_boolean(); }
  std::string string(const std::string& key, const std::string& fallback);
  std::string required_string(const std::string& key);
  // A string that must be one of `allowed`.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);
  double number(const std::string& key, double fallback, double min, double max);
  double required_number(const std::string& key, double min, double max);
  long integer(const std::string& key, long fallback, long min, long max);
  long required_integer(const std::string& key, long min, long max);
  bool boolean(const std::string& key, bool fallback);
  // A fixed-length array of numbers, each within [min, max].
  std::vector<double> numbers(const std::string& key, std::size_t count, double min, double max);
  // A sub-table, or null when absent; reading marks it as consumed.
  const toml::table* table(const std::string& key);
  // An array (possibly empty), or null when absent (no error) or not an array (an error).
  const toml::array* array(const std::string& key);
  // A non-empty array, or null (and an error) when absent, empty or not an array.
  const toml::array* required_array(const std::string& key);

  // Records an error about `key` (for checks that span several keys).
  void fail(const std::string& key, const std::string& reason);
  bool failed() const { return error_.has_value(); }
  // The first error, or the first key nobody read.
  Status finish();
  std::string dotted(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

private:
  const toml::node* get(const std::string& key, bool required);
  void fail_at(const toml::node* node, const std::string& key, const std::string& reason);
  std::string where_is(const toml::node& node, const std::string& key) const;
  // The --set behind `dotted_key` (its own, a table's above it, or one inside the table it names,
  // which made that table); nullopt without one.
  std::optional<std::string> set_origin(const std::string& dotted_key) const;

  const toml::table& table_;
  std::string prefix_;
  std::string file_;
  const Overrides* overrides_;
  std::set<std::string> read_;
  std::optional<Error> error_;
};

}  // namespace commbound
