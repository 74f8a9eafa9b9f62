// commbound-calibrate's command line, without a GPU: help, bad arguments and bad input files exit
// 2 with one line naming the problem, and nothing the user gave is overwritten without --force.
#include "tests/support/run_command.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Result = commbound::testing::CommandRun;

Result run(const std::string& args) { return commbound::testing::run_command(std::string(COMMBOUND_CALIBRATE_BIN) + " --models calibration/models.toml " + args); }

std::filesystem::path temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

TEST(CalibrateCli, HelpTeachesBothModes) {
  const Result r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--replay MODEL"), std::string::npos);
  EXPECT_NE(r.out.find("--shapes FILE"), std::string::npos);
}

TEST(CalibrateCli, UnknownOptionIsAnError) {
  const Result r = run("--frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown option --frobnicate"), std::string::npos) << r.out;
}

TEST(CalibrateCli, ExistingOutputIsNotOverwrittenWithoutForce) {
  const auto out = temp("commbound_calibrate_existing.toml", "# mine\n");
  const Result r = run("--quick --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(out.string() + " exists; pass --force"), std::string::npos) << r.out;
  EXPECT_EQ(commbound::testing::file_text(out), "# mine\n");
  std::filesystem::remove(out);
}

TEST(CalibrateCli, BadShapesFileNamesFileLineKeyAndValue) {
  const auto shapes = temp("commbound_calibrate_bad_shapes.toml",
                           "[[attention]]\ndirection = \"forward\"\nbatch = 1\nheads = 32\nkv_heads = 5\nseq = 128\n"
                           "head_dim = 128\ncausal = true\n");
  const auto out = std::filesystem::temp_directory_path() / "commbound_calibrate_never_written.toml";
  std::filesystem::remove(out);
  const Result r = run("--no-grid --shapes " + shapes.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  // 32 heads cannot share 5 KV heads evenly.
  EXPECT_NE(r.out.find(shapes.string() + ":5: attention.kv_heads = 5: must divide heads"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(shapes);
}

TEST(CalibrateCli, QuickGridListsItsShapes) {
  // Llama-2 1B and 7B at tp 1 and 8, seq 2048 and 4096, micro-batch 1 and 2, plus 11 AdamW and 11
  // gradient-norm sizes: at least one forward GEMM of the 7B's QKV projection at 2 x 4096 tokens.
  const Result r = run("--quick --list-shapes");
  EXPECT_EQ(r.exit_code, 0);
  // (toml++ writes a row's keys in sorted order.)
  EXPECT_NE(r.out.find("[[gemm]]\nk = 4096\nlayout = \"forward\"\nm = 8192\nn = 12288\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("op = \"adamw\"\ntokens = 1\nwidth = 1073741824"), std::string::npos);
}

}  // namespace
