#include "sim/report/plot.hpp"

#include "sim/report/output.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
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

}  // namespace

std::string gnuplot_script(const LinePlot& plot, const std::string& output) {
  std::ostringstream s;
  s << "set terminal " << terminal_for(output) << "\n"
    << "set output " << quoted(output) << "\n"
    << "set title " << quoted(plot.title) << " noenhanced\n"
    << "set xlabel " << quoted(plot.x_label) << " noenhanced\n"
    << "set ylabel " << quoted(plot.y_label) << " noenhanced\n"
    << "set grid\nset key top left noenhanced\n";
  if (plot.x_bytes) {
    s << "set logscale x 2\nset format x '%.0b%B'\n";
  } else if (plot.log_x) {
    s << "set logscale x\n";
  }
  if (plot.log_y) s << "set logscale y\n";
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

Status render_plot(const LinePlot& plot, const std::string& path, bool force) {
  namespace fs = std::filesystem;
  if (Status ok = check_writable(path, force); !ok) return ok;
  if (plot.series.empty()) return Error{path + ": nothing to plot"};
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.stem().string() + ".tmp" + std::to_string(getpid()) +
                                               target.extension().string());
  FILE* pipe = popen("gnuplot >/dev/null", "w");
  if (!pipe) return Error{path + ": cannot start gnuplot (install Debian's gnuplot-nox)"};
  const std::string script = gnuplot_script(plot, tmp.string());
  std::fwrite(script.data(), 1, script.size(), pipe);
  const int status = pclose(pipe);
  std::error_code ec;
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(tmp)) {
    fs::remove(tmp, ec);
    const bool missing = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127;
    return Error{path + (missing ? ": gnuplot not found (install Debian's gnuplot-nox)" : ": gnuplot failed")};
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error{path + ": cannot move into place: " + ec.message()};
  }
  return Ok{};
}

}  // namespace commbound::sim
