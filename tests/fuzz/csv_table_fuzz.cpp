// Fuzzes the CSV reader (sim/report/csv_table.hpp) and the reference-measurement reader built on it
// (sim/report/validation.hpp, read_reference) on any text. Contract: an error names the file; a
// table has a header, rows as wide as it on increasing lines after it, numbers that are finite or
// an error naming the file; every row written back with csv_field reads back the same (one format,
// one reader and one writer); a reference point has positive nodes, bytes and busbw and its line.
#include "sim/report/csv_table.hpp"
#include "sim/report/validation.hpp"
#include "tests/fuzz/fuzz_input.hpp"

#include <cmath>

namespace commbound::fuzz {
namespace {

void check_table(const std::string& path) {
  auto table = sim::read_csv_table(path);
  if (!table) {
    require_error_names(table.error(), {path + ":"});
    return;
  }
  require(!table->header.empty() && table->header_line >= 1, "a table without a header line");
  require(table->rows.size() == table->lines.size(), "rows and their lines differ in number");
  int previous = table->header_line;
  for (std::size_t r = 0; r < table->rows.size(); ++r) {
    const auto& fields = table->rows[r];
    require(fields.size() == table->header.size(), "a row not as wide as the header");
    require(table->lines[r] > previous, "rows not on increasing lines after the header");
    previous = table->lines[r];
    std::string written;
    for (std::size_t i = 0; i < fields.size(); ++i) written += (i == 0 ? "" : ",") + sim::csv_field(fields[i]);
    const auto read_back = sim::csv_fields(written);
    require(read_back && *read_back == fields, "a row written with csv_field does not read back: " + written);
    for (const std::string& column : table->header) {
      auto x = table->number(r, column);
      if (x) {
        require(std::isfinite(*x), "a number that is not finite");
      } else {
        require_error_names(x.error(), {path + ":"});
      }
    }
  }
}

void check_reference(const std::string& path) {
  auto points = sim::read_reference(path);
  if (!points) {
    require_error_names(points.error(), {path + ":"});
    return;
  }
  for (const sim::PublishedPoint& p : *points) {
    require(p.file == path && p.line >= 1, "a point without its file and line");
    require(p.point.nodes >= 1, "a point with nodes < 1");
    require(std::isfinite(p.point.size_bytes) && p.point.size_bytes > 0, "a point without a positive size");
    require(std::isfinite(p.busbw_bytes_per_s) && p.busbw_bytes_per_s > 0, "a point without a positive busbw");
  }
}

}  // namespace
}  // namespace commbound::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace commbound::fuzz;
  const std::string path = scratch_file("table.csv", text_of(data, size));
  check_table(path);
  check_reference(path);
  return 0;
}
