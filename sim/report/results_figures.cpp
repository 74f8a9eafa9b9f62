#include "sim/report/results_figures.hpp"

#include "core/units.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace commbound::sim {
namespace {


// Points grouped into named series (a legend entry and a line each).
using Series = std::vector<std::pair<std::string, std::vector<RunPoint>>>;

// One line per series against GPUs (log2 axis).
LinePlot series_versus_gpus(const std::string& title, const std::string& y_label, const Series& series,
                            double RunPoint::*field, double scale = 1) {
  LinePlot plot{title, "GPUs", y_label, false, true, false, {}};
  for (const auto& [name, group] : series) {
    PlotSeries s{name, {}, "linespoints"};
    for (const RunPoint& p : group) s.points.emplace_back(p.gpus, p.*field * scale);
    plot.series.push_back(s);
  }
  return plot;
}

// One scaling sweep's line against GPUs.
LinePlot versus_gpus(const std::string& title, const std::string& y_label, const std::vector<RunPoint>& points,
                     double RunPoint::*field, double scale = 1) {
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
std::string label(const RunPoint& p, bool one_scale) {
  return one_scale ? short_name(p.name) : fmt::format("{} ({:.0f} GPUs)", short_name(p.name), p.gpus);
}

// A sweep over cluster.nodes and other keys: the points grouped by their name without the node
// count, one series per group in the order of the file, or nothing when the points are not such a
// grid (a single group, no group with two GPU counts, or one holding a GPU count twice).
Series series_by_nodes(const std::vector<RunPoint>& points) {
  Series groups;
  for (const RunPoint& p : points) {
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
    std::sort(group.begin(), group.end(), [](const RunPoint& x, const RunPoint& y) { return x.gpus < y.gpus; });
    for (std::size_t i = 1; i < group.size(); ++i) {
      if (group[i].gpus == group[i - 1].gpus) return {};
    }
  }
  const bool scaling = std::any_of(groups.begin(), groups.end(), [](const auto& g) { return g.second.size() > 1; });
  if (groups.size() < 2 || !scaling) return {};
  return groups;
}

bool one_scale(const std::vector<RunPoint>& points) {
  return std::all_of(points.begin(), points.end(), [&](const RunPoint& p) { return p.gpus == points.front().gpus; });
}

// Where the iteration went, per point: compute alone, communication hidden under compute,
// communication exposed (compute idle, waiting), and the rest (pipeline bubble, waits).
// `scale` ("at 2048 GPUs", or "") goes under the y axis, keeping the title short enough to fit.
BarPlot breakdown(const std::string& title, const std::vector<RunPoint>& points, const std::string& scale = "") {
  BarPlot plot{title + ": where the iteration goes", "seconds per iteration" + (scale.empty() ? "" : ", " + scale), {}, {}};
  BarStack compute{"compute, no communication beside it", {}}, hidden{"communication overlapped with compute", {}},
      exposed{"communication exposed", {}}, idle{"idle (bubble, waits)", {}};
  for (const RunPoint& p : points) {
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

// The lines of a collective figure: one per key, in the order the keys first appear, each point
// sorted by x, each titled by its key and the algorithms NCCL ran along it ("allgather, 1 GiB (ring)").
struct CollectiveLines {
  std::vector<std::string> keys;
  std::map<std::string, PlotSeries> series;
  std::map<std::string, std::vector<std::string>> algorithms;

  void add(const std::string& key, const CollectiveCsvRow& row, double x) {
    auto [it, fresh] = series.try_emplace(key, PlotSeries{key, {}, "linespoints"});
    if (fresh) keys.push_back(key);
    it->second.points.emplace_back(x, row.busbw_bytes_per_s / kBytesPerGB);
    auto& algos = algorithms[key];
    if (std::find(algos.begin(), algos.end(), row.algorithm) == algos.end()) algos.push_back(row.algorithm);
  }
  std::vector<PlotSeries> sorted() const {
    std::vector<PlotSeries> out;
    for (const std::string& k : keys) {
      out.push_back(series.at(k));
      out.back().title = fmt::format("{} ({})", k, fmt::join(algorithms.at(k), ", "));
      std::sort(out.back().points.begin(), out.back().points.end());
    }
    return out;
  }
};

}  // namespace

Expected<RunPoints> read_run_points(const CsvTable& table) {
  RunPoints out;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    auto oom = table.number(r, "oom");
    if (!oom) return oom.error();
    if (*oom != 0) {
      ++out.oom_rows;
      continue;
    }
    RunPoint p;
    p.name = table.rows[r][static_cast<std::size_t>(std::max(0, table.column("scenario")))];
    const std::pair<const char*, double*> fields[] = {
        {"gpus", &p.gpus}, {"tokens_per_s", &p.tokens_per_s}, {"tokens_per_s_per_gpu", &p.tokens_per_s_per_gpu},
        {"mfu", &p.mfu}, {"power_w_per_gpu", &p.power_w}, {"tokens_per_joule", &p.tokens_per_j},
        {"iteration_s", &p.iteration_s}, {"compute_s", &p.compute_s}, {"comm_s", &p.comm_s},
        {"exposed_comm_s", &p.exposed_s}};
    for (const auto& [name, field] : fields) {
      auto v = table.number(r, name);
      if (!v) return v.error();
      *field = *v;
    }
    out.points.push_back(p);
  }
  return out;
}

std::vector<Figure> run_figures(const std::vector<RunPoint>& points, const std::string& title) {
  std::vector<Figure> figures;
  std::set<double> gpu_counts;
  for (const RunPoint& p : points) gpu_counts.insert(p.gpus);
  const auto series = series_by_nodes(points);
  if (!series.empty()) {  // several scaling sweeps (a fabric, a node type... each over cluster.nodes): a line each
    figures.push_back({"per_gpu", series_versus_gpus(title + ": throughput per GPU", "tokens/s per GPU", series,
                                                     &RunPoint::tokens_per_s_per_gpu)});
    figures.push_back(
        {"mfu", series_versus_gpus(title + ": model FLOPs utilisation", "MFU (%)", series, &RunPoint::mfu, 100)});
    figures.push_back({"exposed", series_versus_gpus(title + ": exposed communication", "seconds per iteration",
                                                     series, &RunPoint::exposed_s)});
    // Where the iteration goes at the largest scale: one bar per series.
    std::vector<RunPoint> largest;
    for (const auto& [name, group] : series) {
      largest.push_back(group.back());
      largest.back().name = name;
    }
    const std::string at = one_scale(largest) ? fmt::format("at {:.0f} GPUs", largest.front().gpus) : "at the largest scale";
    figures.push_back({"breakdown", breakdown(title, largest, at)});
  } else if (gpu_counts.size() == points.size() && points.size() > 1) {  // a scaling sweep: one point per GPU count
    std::vector<RunPoint> by_gpus = points;
    std::sort(by_gpus.begin(), by_gpus.end(), [](const RunPoint& x, const RunPoint& y) { return x.gpus < y.gpus; });
    LinePlot throughput = versus_gpus(title + ": global throughput", "tokens/s", by_gpus, &RunPoint::tokens_per_s);
    PlotSeries ideal{"ideal (linear from the smallest run)", {}, "lines dt 2"};
    for (const RunPoint& p : by_gpus) ideal.points.emplace_back(p.gpus, by_gpus.front().tokens_per_s_per_gpu * p.gpus);
    throughput.series.push_back(ideal);
    throughput.log_y = true;
    figures.push_back({"throughput", throughput});
    figures.push_back({"per_gpu", versus_gpus(title + ": throughput per GPU", "tokens/s per GPU", by_gpus,
                                              &RunPoint::tokens_per_s_per_gpu)});
    figures.push_back(
        {"mfu", versus_gpus(title + ": model FLOPs utilisation", "MFU (%)", by_gpus, &RunPoint::mfu, 100)});
    figures.push_back(
        {"power", versus_gpus(title + ": board power per GPU", "W per GPU", by_gpus, &RunPoint::power_w)});
    figures.push_back({"energy", versus_gpus(title + ": energy efficiency", "tokens per joule", by_gpus,
                                             &RunPoint::tokens_per_j)});
  } else {  // points of one scale (layouts, models, sizes): bars per point
    const std::string scale = one_scale(points) ? fmt::format(" ({:.0f} GPUs)", points.front().gpus) : "";
    BarPlot per_gpu{title + ": throughput per GPU" + scale, "tokens/s per GPU", {}, {{"tokens/s per GPU", {}}}};
    for (const RunPoint& p : points) {
      per_gpu.categories.push_back(label(p, one_scale(points)));
      per_gpu.stacks[0].values.push_back(p.tokens_per_s_per_gpu);
    }
    figures.push_back({"per_gpu", per_gpu});
  }
  if (series.empty()) figures.push_back({"breakdown", breakdown(title, points)});
  return figures;
}

std::vector<Figure> collective_figures(const std::vector<CollectiveCsvRow>& rows, const std::string& title) {
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
  auto op_prefix = [&](const CollectiveCsvRow& r) { return ops.size() > 1 ? r.op + ", " : std::string(); };
  std::vector<Figure> figures;
  if (node_counts.size() > 1) {
    CollectiveLines lines;
    for (const auto& r : rows) lines.add(op_prefix(r) + size_label(r.size_bytes), r, r.nodes);
    const std::string x_label =
        gpus_per_node.size() == 1 ? fmt::format("nodes ({} GPUs each)", *gpus_per_node.begin()) : "nodes";
    figures.push_back({"busbw_vs_nodes", LinePlot{title + ": bus bandwidth by node count", x_label, y_label, false,
                                                  true, false, lines.sorted()}});
  }
  if (sizes.size() > 1) {
    CollectiveLines lines;
    for (const auto& r : rows) {
      lines.add(op_prefix(r) + fmt::format("{} node{} ({} GPUs)", r.nodes, r.nodes == 1 ? "" : "s", r.ranks), r,
                r.size_bytes);
    }
    figures.push_back({"busbw_vs_size", LinePlot{title + ": bus bandwidth by size", "size (bytes, as nccl-tests)",
                                                 y_label, true, false, false, lines.sorted()}});
  }
  return figures;
}

Expected<std::vector<Figure>> train_figures(const CsvTable& table, const std::string& title) {
  constexpr double kSPerDay = 86400;
  PlotSeries goodput{"goodput (closed form)", {}}, monte_carlo{"goodput (Monte Carlo)", {}, "points"};
  PlotSeries ideal{"ideal", {}}, expected{"with failures", {}};
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    double v[5] = {};
    const char* columns[] = {"gpus", "goodput", "ideal_s", "expected_s", "monte_carlo_s"};
    for (int k = 0; k < 5; ++k) {
      auto x = table.number(r, columns[k]);
      if (!x) return x.error();
      v[k] = *x;
    }
    goodput.points.emplace_back(v[0], 100 * v[1]);
    monte_carlo.points.emplace_back(v[0], 100 * v[2] / v[4]);
    ideal.points.emplace_back(v[0], v[2] / kSPerDay);
    expected.points.emplace_back(v[0], v[3] / kSPerDay);
  }
  LinePlot share{title + ": goodput", "GPUs", "goodput (%): ideal / expected time", false, true, false,
                 {goodput, monte_carlo}, 100.0};
  LinePlot days{title + ": time to train", "GPUs", "days", false, true, true, {ideal, expected}};
  return std::vector<Figure>{{"goodput", share}, {"time_to_train", days}};
}

Expected<ResultsFigures> results_figures(const CsvTable& table, const std::string& title) {
  if (table.column("goodput") >= 0) {  // commbound train --format csv
    auto figures = train_figures(table, title);
    if (!figures) return figures.error();
    if (table.rows.size() < 2) return Error{table.path + ": one cluster size: nothing to draw a line through (give --nodes several)"};
    return ResultsFigures{std::move(*figures), 0};
  }
  if (is_collective_csv(table)) {
    auto rows = read_collective_csv(table);
    if (!rows) return rows.error();
    std::vector<Figure> figures = collective_figures(*rows, title);
    if (figures.empty()) {
      return Error{table.path + ": one node count and one size: nothing to draw a line through (give --nodes or " +
                   "--bytes several values)"};
    }
    return ResultsFigures{std::move(figures), 0};
  }
  for (const char* needed : {"scenario", "gpus", "oom", "tokens_per_s", "compute_s", "exposed_comm_s"}) {
    if (table.column(needed) < 0) {
      return Error{table.path + ": no column " + needed + " (plot reads what `commbound run --format csv` writes)"};
    }
  }
  auto run = read_run_points(table);
  if (!run) return run.error();
  if (run->points.empty()) return Error{table.path + ": no simulated point to plot (every row is out of memory)"};
  return ResultsFigures{run_figures(run->points, title), run->oom_rows};
}

}  // namespace commbound::sim
