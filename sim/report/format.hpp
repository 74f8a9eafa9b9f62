// Output formats: every report's --format, named once. A command offers the subset its report
// writes (cli/common.hpp's add_format_option); each report takes a Format.
//   table       aligned text for a reader (the default)
//   csv         one header line, then rows (RFC 4180 quoting; csv_table.hpp reads it back)
//   json        one document
//   markdown    a page (validate's accuracy document)
//   nccl-tests  nccl-tests' own columns and footer (collective)
#pragma once

#include <optional>
#include <string_view>

namespace commbound::sim {

enum class Format { table, csv, json, markdown, nccl_tests };

const char* to_string(Format f);
std::optional<Format> parse_format(std::string_view name);

}  // namespace commbound::sim
