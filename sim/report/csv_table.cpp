#include "sim/report/csv_table.hpp"

#include "core/file_type.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"

#include <algorithm>
#include <fstream>

namespace commbound::sim {

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::optional<std::vector<std::string>> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return std::nullopt;
  return fields;
}

int CsvTable::column(const std::string& name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

Expected<double> CsvTable::number(std::size_t row, const std::string& name) const {
  const int c = column(name);
  if (c < 0) return Error{path + ": no column " + name};
  const std::string& v = rows[row][static_cast<std::size_t>(c)];
  auto x = parse_number<double>(v);
  if (!x) return one_line(Error{path + ":" + std::to_string(lines[row]) + ": " + name + " = \"" + v + "\": " + x.error().message});
  return *x;
}

Expected<CsvTable> read_csv_table(const std::string& path) {
  if (Status ok = check_readable_file(path); !ok) return ok.error();
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot be read"};
  CsvTable table;
  table.path = path;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto fields = csv_fields(line);
    if (!fields) return Error{path + ":" + std::to_string(number) + ": a quoted field does not close"};
    if (table.header.empty()) {
      table.header = std::move(*fields);
      table.header_line = number;
      continue;
    }
    if (fields->size() != table.header.size()) {
      return Error{path + ":" + std::to_string(number) + ": " + std::to_string(fields->size()) + " fields, the header has " +
                   std::to_string(table.header.size())};
    }
    table.rows.push_back(std::move(*fields));
    table.lines.push_back(number);
  }
  if (table.header.empty()) return Error{path + ": empty (no header line)"};
  return table;
}

}  // namespace commbound::sim
