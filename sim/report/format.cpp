#include "sim/report/format.hpp"

#include "core/check.hpp"
#include "core/enum_names.hpp"
#include "sim/report/csv_table.hpp"

#include <algorithm>

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

const std::vector<Format>& sheet_formats() {
  static const std::vector<Format> formats = {Format::csv, Format::json};
  return formats;
}

bool is_sheet_format(Format f) {
  return std::find(sheet_formats().begin(), sheet_formats().end(), f) != sheet_formats().end();
}

void write_sheet(std::ostream& out, const Sheet& sheet, Format format) {
  switch (format) {
    case Format::csv:
      for (std::size_t c = 0; c < sheet.columns.size(); ++c) out << (c > 0 ? "," : "") << csv_field(sheet.columns[c]);
      out << "\n";
      for (const std::vector<std::string>& line : sheet.lines) {
        COMMBOUND_CHECK(line.size() == sheet.columns.size(), "a sheet's line is not as wide as its header");
        for (std::size_t c = 0; c < line.size(); ++c) out << (c > 0 ? "," : "") << csv_field(line[c]);
        out << "\n";
      }
      return;
    case Format::json: {
      nlohmann::json document = sheet.more;
      document["title"] = sheet.title;
      document[sheet.rows_key] = sheet.rows;
      out << document.dump(2) << "\n";
      return;
    }
    default: COMMBOUND_CHECK(false, "not a sheet format");
  }
}

}  // namespace commbound::sim
