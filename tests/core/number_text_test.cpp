// parse_number: the whole text or an error saying why, for every number commbound reads from text.
#include "core/number_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace commbound {
namespace {

struct Refused {
  const char* text;
  const char* says;
};

TEST(ParseNumber, ReadsTheWholeText) {
  EXPECT_EQ(*parse_number<int>("42"), 42);
  EXPECT_EQ(*parse_number<int>("-7"), -7);
  EXPECT_EQ(*parse_number<long>("9223372036854775807"), 9223372036854775807L);
  EXPECT_EQ(*parse_number<std::size_t>("18446744073709551615"), 18446744073709551615UL);
  EXPECT_EQ(*parse_number<double>("1.5e3"), 1500.0);
  EXPECT_EQ(*parse_number<double>("-0.25"), -0.25);
}

TEST(ParseNumber, IntegersSayWhyNot) {
  for (const Refused& c : {Refused{"", "not an integer"}, Refused{"8abc", "not an integer"},
                           Refused{" 8", "not an integer"}, Refused{"1.5", "not an integer"},
                           Refused{"99999999999", "out of range (from -2147483648 to 2147483647)"},
                           Refused{"-99999999999", "out of range (from -2147483648 to 2147483647)"}}) {
    auto v = parse_number<int>(c.text);
    ASSERT_FALSE(v) << c.text;
    EXPECT_EQ(v.error().message, c.says) << c.text;
  }
  EXPECT_EQ(parse_number<long>("99999999999999999999").error().message,
            "out of range (from -9223372036854775808 to 9223372036854775807)");
}

TEST(ParseNumber, DoublesSayWhyNot) {
  for (const Refused& c : {Refused{"", "not a number"}, Refused{"1e", "not a number"}, Refused{"2x", "not a number"},
                           Refused{"nan", "not a number"}, Refused{"inf", "not a number"},
                           Refused{"1e400", "out of range of a double"}}) {
    auto v = parse_number<double>(c.text);
    ASSERT_FALSE(v) << c.text;
    EXPECT_EQ(v.error().message, c.says) << c.text;
  }
}

}  // namespace
}  // namespace commbound
