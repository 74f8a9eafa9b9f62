// Formats: every name reads back, and the one sheet writer writes a report's two views as each
// format spells them.
#include "sim/report/format.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace commbound::sim {
namespace {

TEST(Format, NamesReadBack) {
  for (Format f : {Format::table, Format::csv, Format::json, Format::markdown, Format::nccl_tests}) {
    EXPECT_EQ(parse_format(to_string(f)), f) << to_string(f);
  }
  EXPECT_FALSE(parse_format("xml").has_value());
  EXPECT_FALSE(is_sheet_format(Format::table));
  for (Format f : sheet_formats()) EXPECT_TRUE(is_sheet_format(f));
}

Sheet two_rows() {
  Sheet s;
  s.title = "t";
  s.columns = {"name", "value"};
  s.lines = {{"a,b", "1.50"}, {"say \"hi\"", ""}};
  s.rows = nlohmann::json::array({{{"name", "a,b"}, {"value", 1.5}}, {{"name", "say \"hi\""}}});
  s.more["count"] = 2;
  return s;
}

// CSV: the header, then each line; a field with a comma is quoted, a quote doubled (RFC 4180).
TEST(Format, CsvWritesTheLinesQuotedAsRfc4180Asks) {
  std::ostringstream out;
  write_sheet(out, two_rows(), Format::csv);
  EXPECT_EQ(out.str(), "name,value\n\"a,b\",1.50\n\"say \"\"hi\"\"\",\n");
}

// JSON: one document of the title, the rows under their key, and the further keys.
TEST(Format, JsonWritesTheRowsUnderTheirKeyWithTheTitle) {
  Sheet s = two_rows();
  s.rows_key = "points";
  std::ostringstream out;
  write_sheet(out, s, Format::json);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["title"], "t");
  EXPECT_EQ(doc["count"], 2);
  ASSERT_EQ(doc["points"].size(), 2u);
  EXPECT_EQ(doc["points"][0]["value"], 1.5);
  EXPECT_FALSE(doc.contains("rows"));
}

}  // namespace
}  // namespace commbound::sim
