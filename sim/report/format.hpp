// Output formats: every report's --format, named once, and the one writer of the formats any report
// can write from its rows (sheet formats).
//   table       aligned text for a reader (the default); each report lays its own out
//   csv         a sheet: one header line, then a line per row (RFC 4180 quoting; csv_table.hpp
//               reads it back)
//   json        a sheet: one document, {"title": ..., "<rows key>": [one object per row], ...}
//   markdown    validate's accuracy document
//   nccl-tests  collective: nccl-tests' own columns and footer
// A report gives write_sheet its Sheet: its columns with a row of texts per line, and its rows as
// JSON objects (which may hold more than the columns, nested). A format written from those two
// views is one enumerator here, one name, one case in write_sheet (format.cpp), and every command
// offers it through sheet_formats().
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace commbound::sim {

enum class Format { table, csv, json, markdown, nccl_tests };

const char* to_string(Format f);
std::optional<Format> parse_format(std::string_view name);

// What a report writes in every sheet format.
struct Sheet {
  std::string title;
  std::vector<std::string> columns;               // the header
  std::vector<std::vector<std::string>> lines;    // a row's fields as text, one per column
  nlohmann::json rows = nlohmann::json::array();  // a row as a JSON object
  std::string rows_key = "rows";                  // the JSON document's key for `rows`
  nlohmann::json more = nlohmann::json::object(); // the JSON document's further keys
};

// The formats write_sheet writes, in the order commands list them.
const std::vector<Format>& sheet_formats();
bool is_sheet_format(Format f);
// `sheet` in `format` (one of sheet_formats()).
void write_sheet(std::ostream& out, const Sheet& sheet, Format format);

}  // namespace commbound::sim
