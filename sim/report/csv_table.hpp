// A CSV file read back as a table: its header names the columns, fields may be double-quoted
// (RFC 4180: a comma or a doubled quote inside quotes). Lines starting with '#' and blank lines are
// skipped. What commbound itself writes (run --format csv, validate --format csv) reads back, as
// do the reference tables.
#pragma once

#include "core/expected.hpp"

#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// `v` as one CSV field: double-quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& v);

// The fields of one CSV line; nullopt when its quotes do not close.
std::optional<std::vector<std::string>> csv_fields(const std::string& line);

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  int header_line = 0;                         // its 1-based line in the file
  std::vector<std::vector<std::string>> rows;  // each as wide as the header
  std::vector<int> lines;                      // each row's 1-based line in the file

  // The column named `name`, or -1.
  int column(const std::string& name) const;
  // Row `row`'s value of column `name` as a number; errors name the file, line, column and value.
  Expected<double> number(std::size_t row, const std::string& name) const;
};

// Reads `path`; every row must have the header's width. Errors name the file and line.
Expected<CsvTable> read_csv_table(const std::string& path);

}  // namespace commbound::sim
