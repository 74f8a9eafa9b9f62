#include "sim/report/plot.hpp"

#include "sim/report/output.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace commbound::sim {
namespace {

// A gnuplot single-quoted string: no escapes inside, a quote is written twice.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string terminal_for(const std::string& output) {
  const std::string ext = std::filesystem::path(output).extension().string();
  // 1200x750 px reads in a README at half width and in a slide at full width.
  if (ext == ".svg") return "svg size 1200,750 dynamic font 'sans,14'";
  return "pngcairo size 1200,750 font 'sans,12'";
}

// Terminal, output, title and y label: what every figure starts with.
std::string preamble(const std::string& output, const std::string& title, const std::string& y_label) {
  return "set terminal " + terminal_for(output) + "\nset output " + quoted(output) + "\nset title " + quoted(title) +
         " noenhanced\nset ylabel " + quoted(y_label) + " noenhanced\nset grid\n";
}

}  // namespace

std::string gnuplot_script(const LinePlot& plot, const std::string& output) {
  std::ostringstream s;
  s << preamble(output, plot.title, plot.y_label) << "set xlabel " << quoted(plot.x_label) << " noenhanced\n"
    << "set key above noenhanced\n";
  if (plot.x_bytes) {
    s << "set logscale x 2\nset format x '%.0b%B'\n";
  } else if (plot.log_x) {
    s << "set logscale x 2\n";
  }
  s << (plot.log_y ? "set logscale y\n" : "set yrange [0:*]\n");  // linear axes start at 0: no exaggerated drops
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    s << "$d" << i << " << EOD\n";
    for (const auto& [x, y] : plot.series[i].points) s << fmt::format("{:.9g} {:.9g}\n", x, y);
    s << "EOD\n";
  }
  s << "plot ";
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    s << (i ? ", " : "") << "$d" << i << " using 1:2 with " << plot.series[i].style << " lw 2 pt 7 title "
      << quoted(plot.series[i].title);
  }
  s << "\n";
  return s.str();
}

std::string gnuplot_script(const BarPlot& plot, const std::string& output) {
  std::ostringstream s;
  s << preamble(output, plot.title, plot.y_label)
    << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
    << "set boxwidth 0.7\nset yrange [0:*]\nset key above noenhanced\nset xtics rotate by -30 noenhanced\n"
    << "set rmargin 14\nset bmargin 9\n"
    << "$bars << EOD\n";
  for (std::size_t c = 0; c < plot.categories.size(); ++c) {
    s << std::quoted(plot.categories[c]);
    for (const BarStack& stack : plot.stacks) s << fmt::format(" {:.9g}", stack.values[c]);
    s << "\n";
  }
  s << "EOD\nplot ";
  for (std::size_t k = 0; k < plot.stacks.size(); ++k) {
    s << (k ? ", '' " : "$bars ") << "using " << k + 2 << (k ? "" : ":xtic(1)") << " title " << quoted(plot.stacks[k].title);
  }
  s << "\n";
  return s.str();
}

namespace {

// Runs `script` (which writes `tmp`) through gnuplot and moves `tmp` to `path`.
Status run_gnuplot(const std::string& script, const std::filesystem::path& tmp, const std::string& path) {
  namespace fs = std::filesystem;
  FILE* pipe = popen("gnuplot >/dev/null", "w");
  if (!pipe) return Error{path + ": cannot start gnuplot (install Debian's gnuplot-nox)"};
  std::fwrite(script.data(), 1, script.size(), pipe);
  const int status = pclose(pipe);
  std::error_code ec;
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(tmp)) {
    fs::remove(tmp, ec);
    const bool missing = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127;
    return Error{path + (missing ? ": gnuplot not found (install Debian's gnuplot-nox)" : ": gnuplot failed")};
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error{path + ": cannot move into place: " + ec.message()};
  }
  return Ok{};
}

// The file gnuplot writes before it is moved to `path`: beside it, hidden, same extension.
std::filesystem::path temporary_beside(const std::string& path) {
  const std::filesystem::path target(path);
  return target.parent_path() /
         ("." + target.stem().string() + ".tmp" + std::to_string(getpid()) + target.extension().string());
}

}  // namespace

Status render_plot(const BarPlot& plot, const std::string& path, bool force) {
  if (Status ok = check_writable(path, force); !ok) return ok;
  if (plot.categories.empty() || plot.stacks.empty()) return Error{path + ": nothing to plot"};
  const auto tmp = temporary_beside(path);
  return run_gnuplot(gnuplot_script(plot, tmp.string()), tmp, path);
}

Status render_plot(const LinePlot& plot, const std::string& path, bool force) {
  if (Status ok = check_writable(path, force); !ok) return ok;
  if (plot.series.empty()) return Error{path + ": nothing to plot"};
  const auto tmp = temporary_beside(path);
  return run_gnuplot(gnuplot_script(plot, tmp.string()), tmp, path);
}

}  // namespace commbound::sim
