// The model zoo's one reader: the shipped calibration/models.toml, parameter counts against the
// published ones, and errors that name the file, line, key and value.
#include "calibration/table/model_zoo.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

namespace commbound::calibration {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ModelZoo, ReadsTheShippedZoo) {
  auto zoo = read_model_zoo("calibration/models.toml");
  ASSERT_TRUE(zoo) << zoo.error().message;
  std::vector<std::string> names;
  for (const ModelSpec& m : *zoo) names.push_back(m.name);
  for (const char* want : {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  // Llama-2 7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096
  // = 6,738,415,616 parameters (its published count).
  auto m = load_model("calibration/models.toml", "llama2-7b");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_DOUBLE_EQ(m->params(), 6738415616.0);
  EXPECT_EQ(m->head_dim(), 128);
}

TEST(ModelZoo, ErrorsNameTheFileLineKeyAndValue) {
  auto unknown = load_model("calibration/models.toml", "llama2-9b");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("no model named \"llama2-9b\" (known: "), std::string::npos);
  const std::string path = temp_file("bad_zoo.toml",
                                     "[tiny]\nlayers = 2\nhidden = 64\nheads = 3\nkv_heads = 1\nffn = 128\nvocab = 10\n");
  auto bad = read_model_zoo(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, path + ":4: tiny.heads = 3: must divide hidden (64)");
  const std::string typo = temp_file("typo_zoo.toml",
                                     "[tiny]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 1\nffn = 128\nvocab = 10\nvocabs = 1\n");
  auto t = read_model_zoo(typo);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find(typo + ":8: tiny.vocabs = 1: unknown key in [tiny]"), std::string::npos)
      << t.error().message;
}

}  // namespace
}  // namespace commbound::calibration
