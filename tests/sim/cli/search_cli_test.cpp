// commbound search as a user meets it: a bad flag or a bad scenario is one line and exit 2, a file
// that fixes the local batch instead of the global one is refused, --out never overwrites without
// --force, and a search ranks and explains (label golden).
#include "tests/support/run_command.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using commbound::testing::CommandRun;

CommandRun run(const std::string& args) { return commbound::testing::run_command(std::string(COMMBOUND_BIN) + " " + args); }

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kScenario = "tests/sim/data/search_16gpu.toml";
// A space small enough to search in about a second.
const std::string kSmall = " --max-tp 2 --max-cp 1 --max-pp 2 --max-virtual-stages 1 --max-micro-batch 2 --strategies zero2 -j 2";

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(SearchCli, BadFlagIsOneLineAndExitTwo) {
  const CommandRun r = run("search " + kScenario + " --strategies zero4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("--strategies"), std::string::npos) << r.out;
}

TEST(SearchCli, BadScenarioIsOneLineAndExitTwo) {
  const std::string bad = temp_file("search_bad.toml", "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 0\n[model]\nname = \"llama2-1b\"\n");
  const CommandRun r = run("search " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "commbound: " + bad + ":3: cluster.nodes = 0: must be between 1 and 1048576\n");
  const std::string local = temp_file("search_local.toml",
                                      "[cluster]\nnode_type = \"dgx-h100\"\nnodes = 1\n[model]\nname = \"llama2-1b\"\n"
                                      "[training]\nlocal_batch = 2\n");
  const CommandRun l = run("search " + local);
  EXPECT_EQ(l.exit_code, 2);
  EXPECT_EQ(lines(l.out), 1) << l.out;
  EXPECT_NE(l.out.find(local + ":7: training.local_batch"), std::string::npos) << l.out;
}

TEST(SearchCli, RanksExplainsAndNeverOverwritesWithoutForce) {
  const std::string out = ::testing::TempDir() + "search_out.txt";
  std::remove(out.c_str());
  const CommandRun r = run("search " + kScenario + kSmall + " --top 2 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string table = commbound::testing::file_text(out);
  EXPECT_NE(table.find("   1  tp1 cp1 pp1 v1 dp16 mb2 zero2"), std::string::npos) << table;
  EXPECT_NE(table.find("pruned by bound"), std::string::npos) << table;
  const CommandRun again = run("search " + kScenario + kSmall + " --out " + out);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(commbound::testing::file_text(out), table);
  const CommandRun help = run("help search");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("cannot enter the top N"), std::string::npos);
}

}  // namespace
