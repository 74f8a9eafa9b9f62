// gnuplot scripts (sim/report/plot.hpp) are data, never code: every text a user can reach (titles,
// axis labels, legend entries, bar labels, from --title, CSV column values and file names) is fed
// a hostile value, and the script is then read back the way gnuplot reads it. The expected shape is
// written out by hand: outside datablocks each line is one `set` or `plot` command whose only
// strings are single-quoted and close on that line (gnuplot substitutes nothing inside those), no
// line runs a command (`system`, `!`, a backquote, a macro `@`), and each datablock holds exactly
// the lines of data the plot has (a newline in a label adds none). Then, where gnuplot is
// installed, the hostile figures are drawn and the command they carry must not have run.
#include "sim/report/plot.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace commbound::sim {
namespace {

namespace fs = std::filesystem;

// Where the hostile command would leave its mark if it ran.
fs::path marker() { return fs::path(::testing::TempDir()) / "plot_test_PWNED"; }

// Every way out of a gnuplot string we know of, each with the same payload.
std::vector<std::string> hostile_texts() {
  const std::string touch = "touch " + marker().string();
  return {
      "x'\nsystem \"" + touch + "\"\n#",        // end a single-quoted string and the line
      "x\"\nsystem \"" + touch + "\"\n#",       // the same for a double-quoted one
      "`" + touch + "`",                        // backquote substitution (live in double quotes)
      "a\\'b\\\"c\\\\",                         // backslashes before quotes
      "x\r\nEOD\nsystem \"" + touch + "\"\n",   // end a datablock from a label
      "@macro ! " + touch,                      // a macro, a shell escape
      std::string("nul\0in", 7) + "\x1b[2J\x7f",  // control characters
  };
}

// A single-quoted gnuplot string starting at s[i] == '\'': the index past its closing quote, or
// npos when it does not close on this line. Inside, '' is a quote and nothing else is special.
std::size_t past_single_quoted(const std::string& s, std::size_t i) {
  for (std::size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] != '\'') continue;
    if (j + 1 < s.size() && s[j + 1] == '\'') {
      ++j;
      continue;
    }
    return j + 1;
  }
  return std::string::npos;
}

// A datablock line of a bar plot: a double-quoted label (escapes \" \\ and \n only), then numbers.
bool is_bar_data_line(const std::string& line) {
  if (line.empty() || line[0] != '"') return false;
  std::size_t j = 1;
  for (; j < line.size() && line[j] != '"'; ++j) {
    if (static_cast<unsigned char>(line[j]) < 0x20) return false;
    if (line[j] == '\\') {
      if (j + 1 >= line.size() || std::string("\"\\n").find(line[j + 1]) == std::string::npos) return false;
      ++j;
    }
  }
  if (j >= line.size()) return false;
  std::istringstream rest(line.substr(j + 1));
  double v = 0;
  int numbers = 0;
  while (rest >> v) ++numbers;
  return numbers > 0 && rest.eof();
}

struct ScriptShape {
  std::vector<std::string> commands;  // each command line with its strings removed
  std::vector<std::size_t> block_lines;  // lines of each datablock
};

// Reads `script` as gnuplot would, failing the test where a line could run something.
ScriptShape read_script(const std::string& script) {
  ScriptShape shape;
  std::istringstream in(script);
  bool in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (in_block) {
      if (line == "EOD") {
        in_block = false;
      } else {
        ++shape.block_lines.back();
        const bool numbers = line.find_first_not_of("0123456789.e+- ") == std::string::npos;
        EXPECT_TRUE(numbers || is_bar_data_line(line)) << "datablock line: " << line;
      }
      continue;
    }
    if (line.size() > 1 && line[0] == '$' && line.find(" << EOD") != std::string::npos) {
      in_block = true;
      shape.block_lines.push_back(0);
      continue;
    }
    std::string bare;
    for (std::size_t i = 0; i < line.size();) {
      if (line[i] != '\'') {
        bare += line[i++];
        continue;
      }
      const std::size_t end = past_single_quoted(line, i);
      EXPECT_NE(end, std::string::npos) << "a string left open: " << line;
      if (end == std::string::npos) break;
      i = end;
      bare += "S";
    }
    for (const char* risky : {"system", "`", "\"", "@", "!", "#", ";"}) {
      EXPECT_EQ(bare.find(risky), std::string::npos) << "'" << risky << "' outside a string: " << line;
    }
    const std::string first = bare.substr(0, bare.find(' '));
    EXPECT_TRUE(first == "set" || first == "plot") << "command: " << line;
    shape.commands.push_back(bare);
  }
  EXPECT_FALSE(in_block) << "a datablock left open";
  return shape;
}

LinePlot hostile_line_plot(const std::string& text) {
  return LinePlot{.title = text, .x_label = text, .y_label = text, .series = {{text, {{1, 2}, {2, 3}}}, {text, {{1, 1}}}}};
}

BarPlot hostile_bar_plot(const std::string& text) {
  return BarPlot{.title = text, .y_label = text, .categories = {text, "plain", text}, .stacks = {{text, {1, 2, 3}}, {"b", {4, 5, 6}}}};
}

TEST(GnuplotString, QuotesTwiceAndFlattensControlCharacters) {
  // 'it''s' is gnuplot's spelling of it's; the newline and the tab become spaces.
  EXPECT_EQ(gnuplot_string("it's"), "'it''s'");
  EXPECT_EQ(gnuplot_string("a\nb\tc"), "'a b c'");
  EXPECT_EQ(gnuplot_string("`x` \"y\" \\z"), "'`x` \"y\" \\z'");
}

TEST(GnuplotScript, HostileTextsStayData) {
  for (const std::string& text : hostile_texts()) {
    SCOPED_TRACE(::testing::PrintToString(text));
    for (const char* format : {"png", "svg"}) {
      // A line plot of two series: terminal, title, ylabel, grid, xlabel, key, yrange, offsets,
      // plot; one datablock per series, of 2 and 1 points.
      const ScriptShape line = read_script(gnuplot_script(hostile_line_plot(text), format));
      EXPECT_EQ(line.commands.size(), 9u);
      EXPECT_EQ(line.block_lines, (std::vector<std::size_t>{2, 1}));
      // A bar plot of three bars: one datablock of three lines, whatever the labels hold.
      const ScriptShape bars = read_script(gnuplot_script(hostile_bar_plot(text), format));
      EXPECT_EQ(bars.block_lines, (std::vector<std::size_t>{3}));
    }
  }
}

// A linear axis starts at 0; a share ends at its ceiling (goodput: 100%), not where gnuplot's
// autoscale rounds up to (120 for points at 100).
TEST(GnuplotScript, YAxisFromZeroToTheQuantitysCeiling) {
  LinePlot plot = hostile_line_plot("t");
  EXPECT_NE(gnuplot_script(plot, "png").find("set yrange [0:*]\n"), std::string::npos);
  plot.y_max = 100;
  const std::string capped = gnuplot_script(plot, "png");
  EXPECT_NE(capped.find("set yrange [0:100]\n"), std::string::npos);
  EXPECT_EQ(capped.find("[0:*]"), std::string::npos);
}

// The script names no file: gnuplot draws to its standard output, so no path reaches it.
TEST(GnuplotScript, NamesNoOutputFile) {
  const std::string script = gnuplot_script(hostile_line_plot("t"), "png");
  EXPECT_EQ(script.find("set output"), std::string::npos);
}

TEST(RenderPlot, HostileFiguresDrawWithoutRunningAnything) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot is not installed";
  const fs::path dir = fs::path(::testing::TempDir()) / "plot_test_hostile";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::remove(marker());
  int n = 0;
  for (const std::string& text : hostile_texts()) {
    SCOPED_TRACE(::testing::PrintToString(text));
    const fs::path line = dir / ("line" + std::to_string(n) + ".png");
    const fs::path bars = dir / ("bars" + std::to_string(n++) + ".svg");
    ASSERT_TRUE(render_plot(hostile_line_plot(text), line.string(), false));
    ASSERT_TRUE(render_plot(hostile_bar_plot(text), bars.string(), false));
    EXPECT_GT(fs::file_size(line), 1000u);
    EXPECT_GT(fs::file_size(bars), 1000u);
  }
  EXPECT_FALSE(fs::exists(marker())) << "a title ran a command";
  // Only the figures are there: no temporary was left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2 * n);
}

}  // namespace
}  // namespace commbound::sim
