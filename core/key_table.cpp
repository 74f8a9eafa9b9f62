#include "core/key_table.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace commbound {

double in_file_unit(double si, double si_per_unit) {
  const double guess = si / si_per_unit;
  for (int digits = 1; digits <= 17; ++digits) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text - 1, guess, std::chars_format::general, digits).ptr;
    *end = '\0';
    const double v = std::strtod(text, nullptr);
    if (v * si_per_unit == si) return v;
  }
  double below = guess, above = guess;
  for (int step = 0; step < 4; ++step) {
    below = std::nextafter(below, -HUGE_VAL);
    above = std::nextafter(above, HUGE_VAL);
    if (below * si_per_unit == si) return below;
    if (above * si_per_unit == si) return above;
  }
  return guess;
}

toml::node_view<toml::node> insert_value(toml::table& table, const std::string& key, const KeyValue& value) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, long>) {
          table.insert_or_assign(key, static_cast<int64_t>(v));
        } else {
          table.insert_or_assign(key, v);
        }
      },
      value);
  return table[key];
}

std::string show_value(const KeyValue& value) {
  toml::table t;
  insert_value(t, "v", value);
  std::ostringstream out;
  if (value.index() == 3) {
    out << '"' << std::get<std::string>(value) << '"';
  } else {
    t.get("v")->visit([&](auto&& v) { out << v; });
  }
  return out.str();
}

std::string keys_markdown(const std::vector<KeyRow>& rows) {
  std::string out = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const KeyRow& r : rows) out += "| `" + r.key + "` | " + r.type + " | " + r.fallback + " | " + r.doc + " |\n";
  return out;
}

}  // namespace commbound
