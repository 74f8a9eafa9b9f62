#include "sim/report/format.hpp"

#include "core/enum_names.hpp"

namespace commbound::sim {

const char* to_string(Format f) {
  switch (f) {
    case Format::table: return "table";
    case Format::csv: return "csv";
    case Format::json: return "json";
    case Format::markdown: return "markdown";
    case Format::nccl_tests: return "nccl-tests";
  }
  return "?";
}

std::optional<Format> parse_format(std::string_view name) {
  return parse_named(name, {Format::table, Format::csv, Format::json, Format::markdown, Format::nccl_tests});
}

}  // namespace commbound::sim
