#include "sim/report/plot.hpp"

#include "core/atomic_write.hpp"
#include "core/one_line.hpp"
#include "sim/report/output.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <sstream>

namespace commbound::sim {

std::string gnuplot_string(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else {
      out += is_control_character(c) ? ' ' : c;
    }
  }
  return out + "'";
}

namespace {

std::string terminal_for(const std::string& format) {
  // 1200x750 px reads in a README at half width and in a slide at full width.
  if (format == "svg") return "svg size 1200,750 dynamic font 'sans,14'";
  return "pngcairo size 1200,750 font 'sans,12'";
}

// Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008), yellow last (it
// reads poorly on white): every series and every stack takes its colour from here in order.
constexpr std::array<const char*, 8> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                 "#E69F00", "#56B4E9", "#000000", "#F0E442"};
// gnuplot's filled circle, square, triangle, inverted triangle and diamond, then their outlines.
constexpr std::array<int, 10> kPointTypes = {7, 5, 9, 11, 13, 6, 4, 8, 10, 12};
constexpr int kDashTypes = 5;  // gnuplot's solid, dashed, dotted, dash-dot, dash-dot-dot

// Terminal, title and y label: what every figure starts with. No `set output`: the figure goes to
// gnuplot's standard output.
std::string preamble(const std::string& format, const std::string& title, const std::string& y_label) {
  return "set terminal " + terminal_for(format) + "\nset title " + gnuplot_string(title) + " noenhanced\nset ylabel " +
         gnuplot_string(y_label) + " noenhanced\nset grid\n";
}

}  // namespace

std::string gnuplot_script(const LinePlot& plot, const std::string& format) {
  std::ostringstream s;
  s << preamble(format, plot.title, plot.y_label) << "set xlabel " << gnuplot_string(plot.x_label) << " noenhanced\n"
    << "set key above noenhanced\n";
  if (plot.x_bytes) {
    s << "set logscale x 2\nset format x '%.0b%B'\n";
  } else if (plot.log_x) {
    s << "set logscale x 2\n";
  }
  // Linear axes start at 0 (no exaggerated drops) and end at the quantity's own ceiling where it has one.
  if (plot.log_y) {
    s << "set logscale y\n";
  } else if (plot.y_max) {
    s << "set yrange [0:" << *plot.y_max << "]\n";
  } else {
    s << "set yrange [0:*]\n";
  }
  // Room around the data: no line runs along the top border, no point is cut in half at the sides.
  s << "set offsets graph 0.03, graph 0.03, graph 0.08, 0\n";
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    s << "$d" << i << " << EOD\n";
    for (const auto& [x, y] : plot.series[i].points) s << fmt::format("{:.9g} {:.9g}\n", x, y);
    s << "EOD\n";
  }
  s << "plot ";
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const std::string& style = plot.series[i].style;
    s << (i ? ", " : "") << "$d" << i << " using 1:2 with " << style << " lw 2 lc rgb '" << kPalette[i % kPalette.size()] << "'";
    // Lines that lie on each other stay told apart by their points and dashes: each series its own
    // point type, and points shrinking series by series, so an earlier one shows around a later
    // one drawn over it. gnuplot warns of a point type on a style that draws none ("lines dt 2"),
    // and a style that names its own dashes keeps them.
    if (style.find("points") != std::string::npos) {
      s << fmt::format(" pt {} ps {:.2f}", kPointTypes[i % kPointTypes.size()], std::max(0.8, 2.0 - 0.2 * static_cast<double>(i)));
    }
    if (style.find(" dt ") == std::string::npos) s << " dt " << i % kDashTypes + 1;
    s << " title " << gnuplot_string(plot.series[i].title);
  }
  s << "\n";
  return s.str();
}

std::string gnuplot_script(const BarPlot& plot, const std::string& format) {
  std::ostringstream s;
  s << preamble(format, plot.title, plot.y_label)
    << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
    << "set boxwidth 0.7\nset yrange [0:*]\nset offsets 0, 0, graph 0.05, 0\nset key above noenhanced\nset xtics rotate by -30 noenhanced\n";
  // A bar's label as a double-quoted gnuplot data string. With few bars, a long label is wrapped
  // at spaces into lines of at most 32 characters ("\n" between them; a longer word keeps its own
  // line); with more than 6 bars a slanted label's second line runs into its right neighbour's
  // first on a 1200-pixel figure (seen on rendered figures), so those labels stay on one line.
  const std::size_t label_line = plot.categories.size() <= 6 ? 32 : std::string::npos;
  std::size_t longest = 0, most_lines = 0;
  std::vector<std::string> labels;
  for (const std::string& category : plot.categories) {
    std::vector<std::string> lines(1);
    std::istringstream words(category);
    for (std::string w; words >> w;) {
      if (!lines.back().empty() && lines.back().size() + 1 + w.size() > label_line) lines.emplace_back();
      lines.back() += (lines.back().empty() ? "" : " ") + w;
    }
    std::string label = "\"";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      longest = std::max(longest, lines[i].size());
      // A datablock's lines are data (gnuplot substitutes nothing there); a control character,
      // which would end the line or the block, becomes a space as in gnuplot_string.
      for (char ch : lines[i]) {
        label += ch == '"' || ch == '\\' ? std::string{'\\', ch} : std::string(1, is_control_character(ch) ? ' ' : ch);
      }
      if (i + 1 < lines.size()) label += "\\n";
    }
    labels.push_back(label + "\"");
    most_lines = std::max(most_lines, lines.size());
  }
  // Labels slant down to the right at 30 degrees: a line of n characters reaches about 0.25 n
  // lines down and 0.7 n character widths right of its bar (read off rendered figures), and each
  // further line one more down; the margins leave that room (at least 9 lines and 14 characters).
  s << fmt::format("set rmargin {}\nset bmargin {}\n", std::max(14, static_cast<int>(0.7 * longest)),
                   std::max(9, static_cast<int>(0.25 * longest + most_lines) + 1))
    << "$bars << EOD\n";
  for (std::size_t c = 0; c < plot.categories.size(); ++c) {
    s << labels[c];
    for (const BarStack& stack : plot.stacks) s << fmt::format(" {:.9g}", stack.values[c]);
    s << "\n";
  }
  s << "EOD\nplot ";
  for (std::size_t k = 0; k < plot.stacks.size(); ++k) {
    s << (k ? ", '' " : "$bars ") << "using " << k + 2 << (k ? "" : ":xtic(1)") << " lc rgb '" << kPalette[k % kPalette.size()]
      << "' title " << gnuplot_string(plot.stacks[k].title);
  }
  s << "\n";
  return s.str();
}

namespace {

// Runs gnuplot on `script` with its standard output in the new file `figure`: what it draws goes
// there. The script reaches gnuplot through an anonymous memory file (nothing on disk, no pipe to
// break), gnuplot is started without a shell, and its messages go to /dev/null. Errors name `shown`.
Status run_gnuplot(const std::string& script, const std::filesystem::path& figure, const std::string& shown) {
  const int script_fd = ::memfd_create("commbound-plot", MFD_CLOEXEC);
  if (script_fd < 0) return Error{shown + ": cannot hand gnuplot its script (" + std::strerror(errno) + ")"};
  const bool written = ::write(script_fd, script.data(), script.size()) == static_cast<ssize_t>(script.size()) &&
                       ::lseek(script_fd, 0, SEEK_SET) == 0;
  const int figure_fd = ::open(figure.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (!written || figure_fd < 0) {
    ::close(script_fd);
    if (figure_fd >= 0) ::close(figure_fd);
    return Error{shown + ": cannot write (" + std::strerror(errno) + ")"};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, script_fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, figure_fd, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  char name[] = "gnuplot";
  char* argv[] = {name, nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(script_fd);
  ::close(figure_fd);
  if (spawned == ENOENT) return Error{shown + ": gnuplot not found (install Debian's gnuplot-nox)"};
  if (spawned != 0) return Error{shown + ": cannot start gnuplot (" + std::strerror(spawned) + ")"};
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::error_code ec;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || std::filesystem::file_size(figure, ec) == 0) {
    return Error{shown + ": gnuplot failed"};
  }
  return Ok{};
}

// Draws `plot` into `path` through a temporary beside it, in the format its extension names.
template <typename Plot>
Status draw(const Plot& plot, const std::string& path) {
  const std::string format = std::filesystem::path(path).extension() == ".svg" ? "svg" : "png";
  const std::string script = gnuplot_script(plot, format);
  return replace_atomically(path, [&](const std::filesystem::path& tmp) { return run_gnuplot(script, tmp, path); });
}

}  // namespace

Status render_plot(const BarPlot& plot, const std::string& path, bool force) {
  if (Status ok = check_writable(path, force); !ok) return ok;
  if (plot.categories.empty() || plot.stacks.empty()) return Error{path + ": nothing to plot"};
  return draw(plot, path);
}

Status render_plot(const LinePlot& plot, const std::string& path, bool force) {
  if (Status ok = check_writable(path, force); !ok) return ok;
  if (plot.series.empty()) return Error{path + ": nothing to plot"};
  return draw(plot, path);
}

Status draw_figures(const std::vector<Figure>& figures, const std::string& dir, const std::string& format, bool force,
                    const std::function<void(const std::string& path)>& drawn) {
  namespace fs = std::filesystem;
  if (Status ok = check_folder_writable(dir); !ok) return ok;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return Error{dir + ": cannot create the folder" + (ec ? " (" + ec.message() + ")" : "")};
  }
  auto path = [&](const std::string& name) { return (fs::path(dir) / (name + "." + format)).string(); };
  for (const Figure& figure : figures) {
    if (Status ok = check_writable(path(figure.name), force); !ok) return ok;
  }
  for (const Figure& figure : figures) {
    const std::string file = path(figure.name);
    const Status ok = std::visit([&](const auto& plot) { return render_plot(plot, file, force); }, figure.plot);
    if (!ok) return ok;
    drawn(file);
  }
  return Ok{};
}

}  // namespace commbound::sim
