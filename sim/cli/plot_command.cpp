// commbound plot: a `run` results file (CSV) in, its figures (PNG or SVG, through gnuplot) out.
#include "sim/cli/command.hpp"
#include "sim/cli/common.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/csv_table.hpp"
#include "sim/report/output.hpp"
#include "sim/report/plot.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <variant>

namespace commbound::cli {
namespace {

constexpr double kBytesPerGB = 1e9;  // GB/s as nccl-tests prints them

struct PlotArgs {
  std::string results, out_dir, format = "png", title;
  bool force = false;
};

// One simulated point of a results file (out-of-memory rows are not plotted).
struct Point {
  std::string name;
  double gpus, tokens_per_s, tokens_per_s_per_gpu, mfu, power_w, tokens_per_j;
  double iteration_s, compute_s, comm_s, exposed_s;
};

Expected<std::vector<Point>> read_points(const sim::CsvTable& t, int& oom_rows) {
  std::vector<Point> points;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    auto oom = t.number(r, "oom");
    if (!oom) return oom.error();
    if (*oom != 0) {
      ++oom_rows;
      continue;
    }
    Point p;
    p.name = t.rows[r][static_cast<std::size_t>(std::max(0, t.column("scenario")))];
    const std::pair<const char*, double*> fields[] = {
        {"gpus", &p.gpus}, {"tokens_per_s", &p.tokens_per_s}, {"tokens_per_s_per_gpu", &p.tokens_per_s_per_gpu},
        {"mfu", &p.mfu}, {"power_w_per_gpu", &p.power_w}, {"tokens_per_joule", &p.tokens_per_j},
        {"iteration_s", &p.iteration_s}, {"compute_s", &p.compute_s}, {"comm_s", &p.comm_s},
        {"exposed_comm_s", &p.exposed_s}};
    for (const auto& [name, field] : fields) {
      auto v = t.number(r, name);
      if (!v) return v.error();
      *field = *v;
    }
    points.push_back(p);
  }
  return points;
}

// Points grouped into named series (a legend entry and a line each).
using Series = std::vector<std::pair<std::string, std::vector<Point>>>;

// One line per series against GPUs (log2 axis).
sim::LinePlot series_versus_gpus(const std::string& title, const std::string& y_label, const Series& series,
                                 double Point::*field, double scale = 1) {
  sim::LinePlot plot{title, "GPUs", y_label, false, true, false, {}};
  for (const auto& [name, group] : series) {
    sim::PlotSeries s{name, {}, "linespoints"};
    for (const Point& p : group) s.points.emplace_back(p.gpus, p.*field * scale);
    plot.series.push_back(s);
  }
  return plot;
}

// One scaling sweep's line against GPUs.
sim::LinePlot versus_gpus(const std::string& title, const std::string& y_label, const std::vector<Point>& points,
                          double Point::*field, double scale = 1) {
  return series_versus_gpus(title, y_label, Series{{"simulated", points}}, field, scale);
}

// A sweep point's name ("fabric.link=ib-ndr cluster.nodes=32") as a legend reads it: each key
// without its table ("link=ib-ndr nodes=32").
std::string short_name(const std::string& name) {
  std::vector<std::string> parts;
  std::istringstream words(name);
  for (std::string w; words >> w;) {
    const auto eq = w.find('=');
    const auto dot = w.rfind('.', eq);
    parts.push_back(eq == std::string::npos || dot == std::string::npos ? w : w.substr(dot + 1));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

// A bar's label: the point's short name, with its GPU count when the points differ in it.
std::string label(const Point& p, bool one_scale) {
  return one_scale ? short_name(p.name) : fmt::format("{} ({:.0f} GPUs)", short_name(p.name), p.gpus);
}

// A sweep over cluster.nodes and other keys: the points grouped by their name without the node
// count, one series per group in the order of the file, or nothing when the points are not such a
// grid (a single group, no group with two GPU counts, or one holding a GPU count twice).
Series series_by_nodes(const std::vector<Point>& points) {
  Series groups;
  for (const Point& p : points) {
    std::istringstream words(p.name);
    std::vector<std::string> kept;
    for (std::string w; words >> w;) {
      if (w.rfind("cluster.nodes=", 0) != 0) kept.push_back(w);
    }
    const std::string name = short_name(fmt::format("{}", fmt::join(kept, " ")));
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
    if (group == groups.end()) group = groups.insert(groups.end(), {name, {}});
    group->second.push_back(p);
  }
  for (auto& [name, group] : groups) {
    std::sort(group.begin(), group.end(), [](const Point& x, const Point& y) { return x.gpus < y.gpus; });
    for (std::size_t i = 1; i < group.size(); ++i) {
      if (group[i].gpus == group[i - 1].gpus) return {};
    }
  }
  const bool scaling = std::any_of(groups.begin(), groups.end(), [](const auto& g) { return g.second.size() > 1; });
  if (groups.size() < 2 || !scaling) return {};
  return groups;
}

bool one_scale(const std::vector<Point>& points) {
  return std::all_of(points.begin(), points.end(), [&](const Point& p) { return p.gpus == points.front().gpus; });
}

// Where the iteration went, per point: compute alone, communication hidden under compute,
// communication exposed (compute idle, waiting), and the rest (pipeline bubble, waits).
sim::BarPlot breakdown(const std::string& title, const std::vector<Point>& points) {
  sim::BarPlot plot{title + ": where the iteration goes", "seconds per iteration", {}, {}};
  sim::BarStack compute{"compute", {}}, hidden{"communication overlapped with compute", {}},
      exposed{"communication exposed", {}}, idle{"idle (bubble, waits)", {}};
  for (const Point& p : points) {
    const double overlapped = std::max(0.0, p.comm_s - p.exposed_s);
    plot.categories.push_back(label(p, one_scale(points)));
    compute.values.push_back(std::max(0.0, p.compute_s - overlapped));
    hidden.values.push_back(overlapped);
    exposed.values.push_back(p.exposed_s);
    idle.values.push_back(std::max(0.0, p.iteration_s - p.compute_s - p.exposed_s));
  }
  plot.stacks = {compute, hidden, exposed, idle};
  return plot;
}

using Figures = std::vector<std::pair<std::string, std::variant<sim::LinePlot, sim::BarPlot>>>;

// The lines of a collective figure: one per key, in the order the keys first appear, each point
// sorted by x, each titled by its key and the algorithms NCCL ran along it ("allgather, 1 GiB (ring)").
struct CollectiveLines {
  std::vector<std::string> keys;
  std::map<std::string, sim::PlotSeries> series;
  std::map<std::string, std::vector<std::string>> algorithms;

  void add(const std::string& key, const sim::CollectiveCsvRow& row, double x) {
    auto [it, fresh] = series.try_emplace(key, sim::PlotSeries{key, {}, "linespoints"});
    if (fresh) keys.push_back(key);
    it->second.points.emplace_back(x, row.busbw_bytes_per_s / kBytesPerGB);
    auto& algos = algorithms[key];
    if (std::find(algos.begin(), algos.end(), row.algorithm) == algos.end()) algos.push_back(row.algorithm);
  }
  std::vector<sim::PlotSeries> sorted() const {
    std::vector<sim::PlotSeries> out;
    for (const std::string& k : keys) {
      out.push_back(series.at(k));
      out.back().title = fmt::format("{} ({})", k, fmt::join(algorithms.at(k), ", "));
      std::sort(out.back().points.begin(), out.back().points.end());
    }
    return out;
  }
};

// A collective CSV's figures (what `commbound collective --format csv` writes), in nccl-tests'
// bus bandwidth: busbw_vs_nodes (log2 node axis), one line per op and size, when the file holds
// several node counts; busbw_vs_size (log2 size axis), one line per op and node count, when it
// holds several sizes.
Figures collective_figures(const std::vector<sim::CollectiveCsvRow>& rows, const std::string& title) {
  std::set<std::string> ops;
  std::set<int> node_counts;
  std::set<double> sizes;
  std::set<int> gpus_per_node;
  for (const auto& r : rows) {
    ops.insert(r.op);
    node_counts.insert(r.nodes);
    sizes.insert(r.size_bytes);
    gpus_per_node.insert(r.ranks / r.nodes);
  }
  const std::string y_label = "busbw (GB/s, as nccl-tests)";
  auto op_prefix = [&](const sim::CollectiveCsvRow& r) { return ops.size() > 1 ? r.op + ", " : std::string(); };
  Figures figures;
  if (node_counts.size() > 1) {
    CollectiveLines lines;
    for (const auto& r : rows) lines.add(op_prefix(r) + sim::size_label(r.size_bytes), r, r.nodes);
    const std::string x_label =
        gpus_per_node.size() == 1 ? fmt::format("nodes ({} GPUs each)", *gpus_per_node.begin()) : "nodes";
    figures.emplace_back("busbw_vs_nodes", sim::LinePlot{title + ": bus bandwidth by node count", x_label, y_label,
                                                         false, true, false, lines.sorted()});
  }
  if (sizes.size() > 1) {
    CollectiveLines lines;
    for (const auto& r : rows) {
      lines.add(op_prefix(r) + fmt::format("{} node{} ({} GPUs)", r.nodes, r.nodes == 1 ? "" : "s", r.ranks), r,
                r.size_bytes);
    }
    figures.emplace_back("busbw_vs_size", sim::LinePlot{title + ": bus bandwidth by size", "size (bytes, as nccl-tests)",
                                                        y_label, true, false, false, lines.sorted()});
  }
  return figures;
}

// Draws `figures` into a.out_dir as NAME.FORMAT: every target is checked before the first is drawn.
int draw(const PlotArgs& a, const Figures& figures) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.out_dir, ec);
  if (ec || !fs::is_directory(a.out_dir, ec)) {
    return fail(a.out_dir + ": cannot create the folder" + (ec ? " (" + ec.message() + ")" : ""));
  }
  auto path = [&](const std::string& name) { return (fs::path(a.out_dir) / (name + "." + a.format)).string(); };
  for (const auto& [name, figure] : figures) {
    if (Status ok = sim::check_writable(path(name), a.force); !ok) return fail(ok.error().message);
  }
  for (const auto& [name, figure] : figures) {
    const std::string file = path(name);  // a lambda may not capture a structured binding before clang 16
    const Status drawn = std::visit([&](const auto& f) { return sim::render_plot(f, file, a.force); }, figure);
    if (!drawn) return fail(drawn.error().message);
    fmt::print("wrote {}\n", file);
  }
  return 0;
}

int run_collective_plot(const PlotArgs& a, const sim::CsvTable& table, const std::string& title) {
  auto rows = sim::read_collective_csv(table);
  if (!rows) return fail(rows.error().message);
  const Figures figures = collective_figures(*rows, title);
  if (figures.empty()) {
    return fail(a.results + ": one node count and one size: nothing to draw a line through (give --nodes or " +
                "--bytes several values)");
  }
  return draw(a, figures);
}

int run_plot(const PlotArgs& a) {
  auto table = sim::read_csv_table(a.results);
  if (!table) return fail(table.error().message);
  namespace fs = std::filesystem;
  const std::string title = a.title.empty() ? fs::path(a.results).stem().string() : a.title;
  if (sim::is_collective_csv(*table)) return run_collective_plot(a, *table, title);
  for (const char* needed : {"scenario", "gpus", "oom", "tokens_per_s", "compute_s", "exposed_comm_s"}) {
    if (table->column(needed) < 0) {
      return fail(a.results + ": no column " + needed + " (plot reads what `commbound run --format csv` writes)");
    }
  }
  int oom_rows = 0;
  auto points = read_points(*table, oom_rows);
  if (!points) return fail(points.error().message);
  if (points->empty()) return fail(a.results + ": no simulated point to plot (every row is out of memory)");

  Figures figures;
  std::set<double> gpu_counts;
  for (const Point& p : *points) gpu_counts.insert(p.gpus);
  const auto series = series_by_nodes(*points);
  if (!series.empty()) {  // several scaling sweeps (a fabric, a node type... each over cluster.nodes): a line each
    figures.emplace_back("per_gpu", series_versus_gpus(title + ": throughput per GPU", "tokens/s per GPU", series,
                                                       &Point::tokens_per_s_per_gpu));
    figures.emplace_back("mfu", series_versus_gpus(title + ": model FLOPs utilisation", "MFU (%)", series, &Point::mfu, 100));
    figures.emplace_back("exposed", series_versus_gpus(title + ": exposed communication", "seconds per iteration",
                                                       series, &Point::exposed_s));
    // Where the iteration goes at the largest scale: one bar per series.
    std::vector<Point> largest;
    for (const auto& [name, group] : series) {
      largest.push_back(group.back());
      largest.back().name = name;
    }
    const std::string at = one_scale(largest) ? fmt::format(" ({:.0f} GPUs)", largest.front().gpus) : "";
    figures.emplace_back("breakdown", breakdown(title + " at the largest scale" + at, largest));
  } else if (gpu_counts.size() == points->size() && points->size() > 1) {  // a scaling sweep: one point per GPU count
    std::vector<Point> by_gpus = *points;
    std::sort(by_gpus.begin(), by_gpus.end(), [](const Point& x, const Point& y) { return x.gpus < y.gpus; });
    sim::LinePlot throughput = versus_gpus(title + ": global throughput", "tokens/s", by_gpus, &Point::tokens_per_s);
    sim::PlotSeries ideal{"ideal (linear from the smallest run)", {}, "lines dt 2"};
    for (const Point& p : by_gpus) ideal.points.emplace_back(p.gpus, by_gpus.front().tokens_per_s_per_gpu * p.gpus);
    throughput.series.push_back(ideal);
    throughput.log_y = true;
    figures.emplace_back("throughput", throughput);
    figures.emplace_back("per_gpu", versus_gpus(title + ": throughput per GPU", "tokens/s per GPU", by_gpus,
                                                &Point::tokens_per_s_per_gpu));
    figures.emplace_back("mfu", versus_gpus(title + ": model FLOPs utilisation", "MFU (%)", by_gpus, &Point::mfu, 100));
    figures.emplace_back("power", versus_gpus(title + ": board power per GPU", "W per GPU", by_gpus, &Point::power_w));
    figures.emplace_back("energy", versus_gpus(title + ": energy efficiency", "tokens per joule", by_gpus,
                                               &Point::tokens_per_j));
  } else {  // points of one scale (layouts, models, sizes): bars per point
    const std::string scale = one_scale(*points) ? fmt::format(" ({:.0f} GPUs)", points->front().gpus) : "";
    sim::BarPlot per_gpu{title + ": throughput per GPU" + scale, "tokens/s per GPU", {}, {{"tokens/s per GPU", {}}}};
    for (const Point& p : *points) {
      per_gpu.categories.push_back(label(p, one_scale(*points)));
      per_gpu.stacks[0].values.push_back(p.tokens_per_s_per_gpu);
    }
    figures.emplace_back("per_gpu", per_gpu);
  }
  if (series.empty()) figures.emplace_back("breakdown", breakdown(title, *points));
  if (int status = draw(a, figures); status != 0) return status;
  if (oom_rows > 0) fmt::print("{} out-of-memory row(s) not plotted\n", oom_rows);
  return 0;
}

}  // namespace

void add_plot_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand("plot", "figures of a run's or a collective's results (PNG or SVG through gnuplot)");
  cmd->footer(R"(Reads what `commbound run SCENARIO --format csv --out RESULTS.csv` wrote and draws, into --out-dir:
  a scaling sweep (one point per GPU count): throughput (global tokens/s against GPUs, beside the
    ideal line linear from the smallest run), per_gpu (tokens/s per GPU), mfu, power (W per GPU),
    energy (tokens per joule), all against GPUs on a log2 axis;
  several scaling sweeps (cluster.nodes beside other keys, e.g. a fabric per series): per_gpu, mfu
    and exposed (exposed communication per iteration), one line per series against GPUs, and the
    breakdown at each series' largest scale;
  points of one scale (layouts, models, sequence lengths): per_gpu, one bar per point;
  otherwise breakdown, stacked bars of each point's iteration: compute alone, communication
    overlapped with compute, communication exposed, idle (pipeline bubble, waits).
Out-of-memory rows are left out and counted.
A collective CSV (`commbound collective ... --format csv`, recognised by its header) gets nccl-tests'
bus bandwidth (GB/s): busbw_vs_nodes, one line per op and size, against nodes on a log2 axis (when it
holds several node counts); busbw_vs_size, one line per op and node count, against the size on a
log2 axis (when it holds several sizes). Rows of several runs may be concatenated under one header.
Existing figures are not replaced without --force.

Example:
  commbound run scenarios/paper/weak_scaling_7b.toml --format csv --out weak.csv
  commbound plot weak.csv --out-dir figures/weak --format svg
  commbound collective scenarios/examples/dgx-h100-ib-ndr.toml --op allgather --nodes 1:64 --bytes 1M:1G \
    --format csv --out ag.csv && commbound plot ag.csv --out-dir figures/ag
docs/figures/ holds every paper and study scenario's figures (docs/figures/update.sh).
)");
  cmd->add_option("results", a->results, "a results CSV of `commbound run --format csv` or `commbound collective --format csv`")->required()->type_name("CSV");
  cmd->add_option("--out-dir", a->out_dir, "the folder for the figures (created when missing)")->required()->type_name("DIR");
  cmd->add_option("--format", a->format, "png (default) | svg")->check(CLI::IsMember({"png", "svg"}));
  cmd->add_option("--title", a->title, "the figures' title (default: the results file's name)");
  cmd->add_flag("--force", a->force, "allow replacing existing figures");
  cmd->callback([a, &exit_code] { exit_code = run_plot(*a); });
}

}  // namespace commbound::cli
