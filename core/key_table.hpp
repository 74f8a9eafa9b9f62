// KeyTable: the keys of one kind of TOML table described once, as data. Each KeySpec names a key
// (its unit in the name), its type, the factor from the file's unit to SI, its bounds, its default,
// one line of documentation, the names it allows when it is an enum, and how it lands in a C++
// struct (a setter/getter pair, usually made from a pointer-to-member path by KeyField).
//
// Why: a key described once is read, validated, written back and documented by walking the same
// table (read_keys, write_keys, keys_markdown), so a new key is one entry, never a reader, a writer
// and a doc row kept in step by hand. network/fabric_fit.cpp is the same shape for fit parameters.
//
// Reading goes through TableReader, so every error names file, line, key and value exactly as
// TableReader words it. A key whose default depends on other keys (derived) or that picks a
// preset has no setter: the reader's cross-key rules set it, from read_keys' values.
#pragma once

#include "core/table_reader.hpp"

#include <toml++/toml.h>

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace commbound {

// table: a sub-table with its own key table (read by the code that owns it; listed for unknown-key
// checks and docs).
enum class KeyType { boolean, integer, number, string, choice, table };

// A key's value as a file writes it, in the key's unit: integers as long, numbers as double.
using KeyValue = std::variant<bool, long, double, std::string>;

template <class T>
struct KeySpec {
  const char* key;                    // its name in the table, unit in the name ("latency_us")
  KeyType type = KeyType::string;
  double si_per_unit = 1;             // number keys: the file's unit in SI (1e-6 for _us)
  double lower = 0, upper = 0;        // integer and number keys: the allowed range, file units
  std::optional<KeyValue> fallback;   // the default; none: required, or derived (see `derived`)
  const char* derived = nullptr;      // when the default comes from other keys: from what (docs)
  bool required = false;
  bool or_table = false;              // string keys: may instead be a sub-table (read by its owner)
  std::vector<std::string> names;     // choice keys: the allowed names, in the order errors list them
  // Choice keys that once were booleans: the names `false` and `true` still read as (else empty).
  std::vector<std::string> boolean_names;
  const char* doc = "";               // one line for docs/scenarios.md
  // How the value lands in `T` (null: a cross-key rule sets it) and how a writer gets it back
  // (null, or nullopt: not written).
  void (*set)(T&, const KeyValue&, double si_per_unit) = nullptr;
  std::optional<KeyValue> (*get)(const T&, double si_per_unit) = nullptr;
};

// The value a file writes in a unit of `si_per_unit` for a reader's `value * si_per_unit` to give
// `si` back exactly: the shortest decimal that does (1.7 us, not 1.6999999999999997), else the
// nearest double that does. Dividing alone can miss by an ulp, which a second round trip doubles.
double in_file_unit(double si, double si_per_unit);

// `value` as a TOML node of its type (for a document a writer builds, or a typed edit).
toml::node_view<toml::node> insert_value(toml::table& table, const std::string& key, const KeyValue& value);
std::string show_value(const KeyValue& value);  // as toml++ writes it: strings quoted

// Values read by read_keys: every key given, or defaulted by its fallback (derived keys that are
// absent have none), and which were given.
struct KeyValues {
  std::map<std::string, KeyValue> values;
  std::map<std::string, bool> given;

  bool has(const std::string& key) const { return given.count(key) > 0 && given.at(key); }
  long integer(const std::string& key) const { return std::get<long>(values.at(key)); }
  double number(const std::string& key) const { return std::get<double>(values.at(key)); }
  bool boolean(const std::string& key) const { return std::get<bool>(values.at(key)); }
  const std::string& text(const std::string& key) const { return std::get<std::string>(values.at(key)); }
};

// Reads one key through `r` (type, bounds, names; "missing (required)"); nullopt when absent and
// without a fallback, or on an error (then r.failed()).
template <class T>
std::optional<KeyValue> read_key(TableReader& r, const KeySpec<T>& k) {
  const bool given = r.has(k.key);
  if (k.type == KeyType::table || (k.or_table && r.is_table(k.key))) {
    r.table(k.key);
    return std::nullopt;
  }
  if (!given && k.required) {
    if (k.type == KeyType::integer) r.required_integer(k.key, static_cast<long>(k.lower), static_cast<long>(k.upper));
    else if (k.type == KeyType::number) r.required_number(k.key, k.lower, k.upper);
    else r.required_string(k.key);
    return std::nullopt;
  }
  KeyValue v;
  switch (k.type) {
    case KeyType::boolean: v = r.boolean(k.key, false); break;
    case KeyType::integer: v = r.integer(k.key, 0, static_cast<long>(k.lower), static_cast<long>(k.upper)); break;
    case KeyType::number: v = r.number(k.key, 0, k.lower, k.upper); break;
    case KeyType::string: v = r.string(k.key, ""); break;
    case KeyType::table: break;
    case KeyType::choice: {
      if (!k.boolean_names.empty() && r.is_boolean(k.key)) {
        v = k.boolean_names[r.boolean(k.key, false) ? 1 : 0];
      } else {
        const std::string fallback = k.fallback ? std::get<std::string>(*k.fallback) : k.names.front();
        v = r.choice(k.key, fallback, k.names);
      }
      break;
    }
  }
  if (r.failed()) return std::nullopt;
  if (!given) return k.fallback;
  return v;
}

// Reads every key of `keys` through `r` into `target` (setters) and the returned values; stops at
// the first error (r.failed(); r.finish() gives it). Unknown keys are r.finish()'s.
template <class T>
KeyValues read_keys(TableReader& r, const std::vector<KeySpec<T>>& keys, T& target) {
  KeyValues out;
  for (const KeySpec<T>& k : keys) {
    out.given[k.key] = r.has(k.key);
    std::optional<KeyValue> v = read_key(r, k);
    if (r.failed()) return out;
    if (!v) continue;
    if (k.set != nullptr) k.set(target, *v, k.si_per_unit);
    out.values[k.key] = std::move(*v);
  }
  return out;
}

// Every key of `keys` that `source` has a value for, into `table`.
template <class T>
void write_keys(const T& source, const std::vector<KeySpec<T>>& keys, toml::table& table) {
  for (const KeySpec<T>& k : keys) {
    if (k.get == nullptr) continue;
    if (std::optional<KeyValue> v = k.get(source, k.si_per_unit)) insert_value(table, k.key, *v);
  }
}

// One row per key of `keys`, `prefix` before each name: | key | type | default | meaning |.
struct KeyRow {
  std::string key, type, fallback, doc;
};
template <class T>
std::vector<KeyRow> key_rows(const std::vector<KeySpec<T>>& keys, const std::string& prefix);
std::string keys_markdown(const std::vector<KeyRow>& rows);

// Setter/getter pairs from a path of pointers to members (an std::optional on the path is
// dereferenced): KeyField<&Scenario::cluster, &ClusterSpec::nodes>. Integers, numbers (scaled by
// the key's si_per_unit), booleans and strings.
namespace key_field_internal {
template <class X> X& step(X& x) { return x; }
template <class X> const X& step(const X& x) { return x; }
template <class X> X& step(std::optional<X>& x) { return *x; }
template <class X> const X& step(const std::optional<X>& x) { return *x; }
template <auto First, auto... Rest, class Object>
auto& reach(Object& o) {
  auto& next = step(o.*First);
  if constexpr (sizeof...(Rest) == 0) {
    return next;
  } else {
    return reach<Rest...>(next);
  }
}
// The member `First, Rest...` names, the optionals on the way stepped through, the last kept.
template <auto First, auto... Rest, class Object>
auto& member(Object& o) {
  if constexpr (sizeof...(Rest) == 0) {
    return o.*First;
  } else {
    return member<Rest...>(step(o.*First));
  }
}
template <class M> struct owner;
template <class C, class M> struct owner<M C::*> { using type = C; };
}  // namespace key_field_internal

template <auto First, auto... Rest>
struct KeyField {
  using Owner = typename key_field_internal::owner<decltype(First)>::type;
  static void set(Owner& o, const KeyValue& v, double si_per_unit) {
    auto& x = key_field_internal::reach<First, Rest...>(o);
    using X = std::remove_cvref_t<decltype(x)>;
    if constexpr (std::is_same_v<X, bool>) {
      x = std::get<bool>(v);
    } else if constexpr (std::is_same_v<X, std::string>) {
      x = std::get<std::string>(v);
    } else if constexpr (std::is_floating_point_v<X>) {
      x = std::get<double>(v) * si_per_unit;
    } else {
      x = static_cast<X>(std::get<long>(v));
    }
  }
  static std::optional<KeyValue> get(const Owner& o, double si_per_unit) {
    const auto& x = key_field_internal::reach<First, Rest...>(o);
    using X = std::remove_cvref_t<decltype(x)>;
    if constexpr (std::is_same_v<X, bool> || std::is_same_v<X, std::string>) {
      return KeyValue{x};
    } else if constexpr (std::is_floating_point_v<X>) {
      return KeyValue{in_file_unit(x, si_per_unit)};
    } else {
      return KeyValue{static_cast<long>(x)};
    }
  }
};

// The same for an enum member, named by its one to_string (found by ADL) and read back by `Parse`
// (std::optional<E>(std::string_view)).
template <auto Parse, auto First, auto... Rest>
struct KeyEnum {
  using Owner = typename key_field_internal::owner<decltype(First)>::type;
  static void set(Owner& o, const KeyValue& v, double) {
    key_field_internal::reach<First, Rest...>(o) = *Parse(std::get<std::string>(v));
  }
  static std::optional<KeyValue> get(const Owner& o, double) {
    return KeyValue{std::string(to_string(key_field_internal::reach<First, Rest...>(o)))};
  }
};

// The same for a std::optional enum member that the file may leave to a default it does not name,
// spelled "auto" (unset).
template <auto Parse, auto First, auto... Rest>
struct KeyAutoEnum {
  using Owner = typename key_field_internal::owner<decltype(First)>::type;
  static void set(Owner& o, const KeyValue& v, double) {
    const std::string& name = std::get<std::string>(v);
    auto& x = key_field_internal::member<First, Rest...>(o);
    x = name == "auto" ? std::nullopt : Parse(name);
  }
  static std::optional<KeyValue> get(const Owner& o, double) {
    const auto& x = key_field_internal::member<First, Rest...>(o);
    return KeyValue{std::string(x ? to_string(*x) : "auto")};
  }
};

// The allowed names of an enum key, in the order given, each as its to_string writes it.
template <class E>
std::vector<std::string> names_of(std::initializer_list<E> values) {
  std::vector<std::string> out;
  for (E e : values) out.emplace_back(to_string(e));
  return out;
}

template <class T>
std::vector<KeyRow> key_rows(const std::vector<KeySpec<T>>& keys, const std::string& prefix) {
  std::vector<KeyRow> rows;
  for (const KeySpec<T>& k : keys) {
    KeyRow row;
    row.key = prefix + k.key;
    row.doc = k.doc;
    auto bounds = [&](const char* what) {
      std::ostringstream text;
      if (k.type == KeyType::integer) {
        text << what << " in [" << static_cast<long>(k.lower) << ", " << static_cast<long>(k.upper) << "]";
      } else {
        text << what << " in [" << k.lower << ", " << k.upper << "]";
      }
      return text.str();
    };
    switch (k.type) {
      case KeyType::boolean: row.type = "boolean"; break;
      case KeyType::integer: row.type = bounds("integer"); break;
      case KeyType::number: row.type = bounds("number"); break;
      case KeyType::string: row.type = k.or_table ? "string or table" : "string"; break;
      case KeyType::table: row.type = "table"; break;
      case KeyType::choice: {
        for (const auto& n : k.names) row.type += (row.type.empty() ? "`" : " \\| `") + n + "`";
        if (!k.boolean_names.empty()) row.type += " (or a boolean)";
        break;
      }
    }
    if (k.required) row.fallback = "required";
    else if (k.derived != nullptr) row.fallback = k.derived;
    else if (k.fallback && std::holds_alternative<std::string>(*k.fallback) && std::get<std::string>(*k.fallback).empty()) row.fallback = "\"\"";
    else if (k.fallback) row.fallback = "`" + (std::holds_alternative<std::string>(*k.fallback) ? std::get<std::string>(*k.fallback) : show_value(*k.fallback)) + "`";
    else row.fallback = "-";
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace commbound
