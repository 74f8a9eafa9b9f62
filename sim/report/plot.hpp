// Figures through gnuplot (Debian's gnuplot-nox): a line plot described as data, rendered to PNG
// or SVG by the file's extension. The data travels in the script as gnuplot datablocks, so no
// temporary data files are left behind; the figure is written beside its target and moved into
// place only when gnuplot succeeded, so a failed plot never leaves a partial file.
//
// A gnuplot script is a program: gnuplot runs `system "..."` and the backquotes of a double-quoted
// string, and a newline ends a command. Every text that reaches a script (titles, labels, legend
// entries, which come from files, scenario keys and --title) goes through gnuplot_string, which
// makes it one single-quoted string on one line; no path is ever written into a script (gnuplot
// draws to its standard output, which is the figure's temporary file).
#pragma once

#include "core/expected.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace commbound::sim {

struct PlotSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  std::string style = "linespoints";              // gnuplot's "with" clause: points, lines, linespoints
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool x_bytes = false;  // x is a size in bytes: log2 axis labelled with binary prefixes (1Mi, 1Gi)
  bool log_x = false;    // log2 axis (GPU counts double)
  bool log_y = false;
  std::vector<PlotSeries> series;
  std::optional<double> y_max;  // linear y only: the most the quantity can be (a share: 100), the axis' top
};

// Stacked bars: one bar per category, each the sum of its stacks' values (in stack order, bottom up).
struct BarStack {
  std::string title;
  std::vector<double> values;  // one per category
};
struct BarPlot {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;  // the bars' labels, left to right
  std::vector<BarStack> stacks;
};

// `text` as a gnuplot single-quoted string: inside one, gnuplot substitutes nothing (no
// backquotes, no macros), and only a quote needs escaping (written twice). A control character
// (a newline would end the command; the others have no place in a label) becomes a space.
std::string gnuplot_string(const std::string& text);

// The gnuplot script that draws `plot` as `format` ("png" or "svg") on gnuplot's standard output.
std::string gnuplot_script(const LinePlot& plot, const std::string& format);
std::string gnuplot_script(const BarPlot& plot, const std::string& format);

// Draws `plot` into `path` (.png or .svg). Refuses an existing file unless `force`; gnuplot's
// failure (or its absence) is an error naming the file.
Status render_plot(const LinePlot& plot, const std::string& path, bool force);
Status render_plot(const BarPlot& plot, const std::string& path, bool force);

// A figure as a set of them is drawn: NAME.FORMAT in a folder.
struct Figure {
  std::string name;  // the file's name without its extension ("per_gpu")
  std::variant<LinePlot, BarPlot> plot;
};

// Draws every figure into `dir` (created when missing) as NAME.`format` ("png" or "svg"), calling
// `drawn(path)` after each. Every target is checked (check_writable) before the first is drawn, so
// a refusal draws nothing. Errors name the path: a folder that cannot be created, an existing
// figure without `force`, gnuplot's failure.
Status draw_figures(const std::vector<Figure>& figures, const std::string& dir, const std::string& format, bool force,
                    const std::function<void(const std::string& path)>& drawn);

}  // namespace commbound::sim
