#include "sim/report/validation.hpp"

#include "core/file_type.hpp"
#include "core/number_text.hpp"
#include "core/one_line.hpp"
#include "core/units.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/csv_table.hpp"
#include "sim/report/output.hpp"

#include <fmt/format.h>
#include <gsl/gsl_statistics_double.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>

namespace commbound::sim {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The GPU a platform description names ("HGX H100 (Dell XE9680) ..." -> "H100").
std::string gpu_in(const std::string& platform) {
  for (const char* gpu : {"H100", "H200", "B200", "A100", "V100"}) {
    if (platform.find(gpu) != std::string::npos) return gpu;
  }
  return "";
}

enum class Layout { published, collected };

// Field `name` of a row read whole as a T (spaces around it allowed). The error names the row
// (`at`: "file:line: "), the field and its text.
template <class T>
Expected<T> field_number(const std::string& at, const char* name, const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  const std::string_view trimmed =
      first == std::string::npos ? std::string_view() : std::string_view(text).substr(first, text.find_last_not_of(' ') - first + 1);
  auto v = parse_number<T>(trimmed);
  if (!v) return Error{at + name + " = \"" + text + "\": " + v.error().message};
  return *v;
}

// A published point's numbers: its nodes and size (read by the caller, which knows their special
// words), its GPUs per node and busbw (GB/s) from their fields; the first bad one is the error.
Status set_numbers(PublishedPoint& p, const std::string& at, const Expected<int>& nodes,
                   const std::string& gpus_per_node_text, const Expected<double>& size_bytes,
                   const std::string& busbw_GBps_text) {
  auto gpus_per_node = field_number<int>(at, "gpus_per_node", gpus_per_node_text);
  auto busbw_GBps = field_number<double>(at, "busbw_GBps", busbw_GBps_text);
  for (const Status& s : {nodes.status(), gpus_per_node.status(), size_bytes.status(), busbw_GBps.status()}) {
    if (!s) return s;
  }
  p.point.nodes = *nodes;
  p.gpus_per_node = *gpus_per_node;
  p.point.size_bytes = *size_bytes;
  p.busbw_bytes_per_s = *busbw_GBps * kBytesPerGB;
  return Ok{};
}

Expected<PublishedPoint> published_row(const std::vector<std::string>& f, const std::string& at) {
  // gpu,nodes,gpus_per_node,collective,algorithm,bytes,busbw_GBps,source
  if (f.size() < 8) return Error{at + "expected 8 comma-separated fields, found " + std::to_string(f.size())};
  PublishedPoint p;
  p.gpu = f[0];
  p.nodes_text = f[1];
  p.bytes_text = f[5];
  p.published_algorithm = f[4];
  p.source = f[7];
  auto op = network::parse_collective_op(f[3]);
  if (!op) return Error{at + "collective = \"" + f[3] + "\": unknown"};
  p.point.op = *op;
  const Status numbers =
      set_numbers(p, at, f[1] == "multi" ? Expected<int>(kMultiNodes) : field_number<int>(at, "nodes", f[1]), f[2],
                  f[5] == "large" ? Expected<double>(kLargeBytes) : field_number<double>(at, "bytes", f[5]), f[6]);
  if (!numbers) return numbers.error();
  if (f[4] != "any" && f[4] != "default") {  // nccl-tests' own word for the tuner's choice
    auto a = network::parse_algorithm(f[4]);
    if (!a) return Error{at + "algorithm = \"" + f[4] + "\": unknown"};
    p.point.algorithm = a;
  }
  p.platform = p.gpu;
  p.series = fmt::format("{} {} {} node(s) x {} GPUs {} ({})", p.gpu, f[3], p.nodes_text, f[2], p.published_algorithm, p.source);
  return p;
}

Expected<PublishedPoint> collected_row(const std::vector<std::string>& f, const std::string& at) {
  // source_url,platform,nccl_version,nodes,gpus_per_node,op,bytes,busbw_GBps,algo_if_known,notes
  if (f.size() < 9) return Error{at + "expected 10 comma-separated fields, found " + std::to_string(f.size())};
  PublishedPoint p;
  p.source = f[0];
  p.platform = f[1];
  p.nccl_version = f[2];
  p.gpu = gpu_in(f[1]);
  p.nodes_text = f[3];
  p.bytes_text = f[6];
  p.published_algorithm = f[8];
  auto op = network::op_from_name(f[5]);
  if (!op) return Error{at + "op = \"" + f[5] + "\": unknown"};
  p.point.op = *op;
  const Status numbers = set_numbers(p, at, field_number<int>(at, "nodes", f[3]), f[4],
                                     field_number<double>(at, "bytes", f[6]), f[7]);
  if (!numbers) return numbers.error();
  // "Ring (forced); NCCL_MIN_CTAS=24": NCCL_ALGO was set; "default ..." lets the tuner choose.
  if (lower(f[8]).find("forced") != std::string::npos) {
    const std::string name = lower(f[8].substr(0, f[8].find_first_of(" ;(")));
    auto a = network::parse_algorithm(name);
    if (!a) return Error{at + "algo_if_known = \"" + f[8] + "\": unknown algorithm"};
    p.point.algorithm = a;
  }
  p.series = fmt::format("{}: {}, {} node(s) x {}, {}, {}", p.source, p.platform, p.nodes_text, f[4], f[5], f[8]);
  return p;
}

double median(std::vector<double> v) { return v.empty() ? 0 : gsl_stats_median(v.data(), 1, v.size()); }

BandSummary summary_of(const std::string& nodes, const std::string& family, const std::string& size,
                       const std::vector<double>& errors) {
  std::vector<double> abs_errors;
  for (double e : errors) abs_errors.push_back(std::fabs(e));
  return {nodes, family, size, static_cast<int>(errors.size()), median(abs_errors),
          *std::max_element(abs_errors.begin(), abs_errors.end()), median(errors)};
}

int band_order(const std::string& band) {
  static const std::vector<std::string> order = {"1", "2-4", "8-32", "64+", "AllReduce", "AllGather/ReduceScatter",
                                                 "SendRecv", "< 32 MiB", "32 MiB - 1 GiB", "> 1 GiB"};
  return static_cast<int>(std::find(order.begin(), order.end(), band) - order.begin());
}

}  // namespace

Expected<std::vector<PublishedPoint>> read_reference(const std::string& path) {
  auto table = read_csv_table(path);
  if (!table) return table.error();
  auto header_starts = [&](const std::vector<std::string>& names) {
    return table->header.size() >= names.size() && std::equal(names.begin(), names.end(), table->header.begin());
  };
  std::optional<Layout> layout;
  if (header_starts({"gpu", "nodes", "gpus_per_node", "collective", "algorithm", "bytes", "busbw_GBps", "source"})) {
    layout = Layout::published;
  } else if (header_starts({"source_url", "platform", "nccl_version", "nodes", "gpus_per_node", "op", "bytes",
                            "busbw_GBps", "algo_if_known"})) {
    layout = Layout::collected;
  } else {
    return Error{path + ":" + std::to_string(table->header_line) +
                 ": header: expected gpu,nodes,gpus_per_node,collective,... or source_url,platform,nccl_version,..."};
  }
  // The optional columns: where the header has them, and a row's field there unless it is empty.
  auto column = [&](const char* name) -> std::optional<std::size_t> {
    const auto it = std::find(table->header.begin(), table->header.end(), name);
    if (it == table->header.end()) return std::nullopt;
    return static_cast<std::size_t>(it - table->header.begin());
  };
  auto field = [](const std::vector<std::string>& fields, std::optional<std::size_t> at) -> const std::string* {
    return at && *at < fields.size() && !fields[*at].empty() ? &fields[*at] : nullptr;
  };
  const std::optional<std::size_t> net_at = column("nccl_net");
  const std::optional<std::size_t> node_gpus_at = column("node_gpus");
  const std::optional<std::size_t> version_at = column("nccl_version");
  std::vector<PublishedPoint> out;
  for (std::size_t r = 0; r < table->rows.size(); ++r) {
    const std::string at = path + ":" + std::to_string(table->lines[r]) + ": ";
    const auto& fields = table->rows[r];
    auto p = *layout == Layout::published ? published_row(fields, at) : collected_row(fields, at);
    if (!p) return one_line(p.error());  // the error quotes a field as written
    if (const std::string* text = field(fields, version_at)) p->nccl_version = *text;
    if (const std::string* text = field(fields, net_at)) {
      auto net = network::parse_nccl_net(*text);
      if (!net) return one_line(Error{at + "nccl_net = \"" + *text + "\": expected IB or Libfabric"});
      p->nccl_net = *net;
    }
    if (const std::string* text = field(fields, node_gpus_at)) {
      auto node_gpus = field_number<int>(at, "node_gpus", *text);
      if (!node_gpus) return one_line(node_gpus.error());
      if (*node_gpus < p->gpus_per_node || *node_gpus > 1024) {
        return one_line(Error{at + "node_gpus = " + *text + ": expected gpus_per_node (" +
                              std::to_string(p->gpus_per_node) + ") to 1024"});
      }
      if (*node_gpus > p->gpus_per_node) {
        p->node_gpus = *node_gpus;
        p->point.gpus_per_node = p->gpus_per_node;  // the first GPUs of each node, as nccl-tests' -g K
      }
    }
    if (!(p->busbw_bytes_per_s > 0) || !(p->point.size_bytes > 0) || p->point.nodes < 1) {
      return Error{at + "nodes, bytes and busbw_GBps must be positive"};
    }
    p->file = path;
    p->line = table->lines[r];
    out.push_back(std::move(*p));
  }
  return out;
}

std::vector<PublishedPoint> points_from_logs(const std::vector<network::NcclTestsLog>& logs) {
  std::vector<PublishedPoint> out;
  for (const network::NcclTestsLog& log : logs) {
    if (!log.op) continue;  // broadcast and others: not modelled
    for (const network::NcclTestsRow& row : log.rows) {
      PublishedPoint p;
      p.gpu = gpu_in(log.gpu_name);
      p.gpus_per_node = log.gpus_per_node();
      p.nodes_text = std::to_string(log.nodes);
      p.bytes_text = fmt::format("{:.0f}", row.size_bytes);
      p.point = {*log.op, log.nodes, row.size_bytes, log.algorithm, std::nullopt};
      p.busbw_bytes_per_s = row.out_of_place.bus_bw_bytes_per_s;
      p.published_algorithm = log.algorithm ? std::string(network::to_string(*log.algorithm)) + " (forced)" : "default";
      p.platform = log.gpu_name.empty() ? "nccl-tests log" : log.gpu_name;
      p.source = log.path;
      p.series = log.path + (log.nccl_version.empty() ? "" : " (NCCL " + log.nccl_version + ")");
      p.file = log.path;
      p.line = row.line;
      if (p.busbw_bytes_per_s > 0) out.push_back(std::move(p));
    }
  }
  return out;
}

Expected<std::vector<network::NcclTestsLog>> logs_from_points(const std::vector<PublishedPoint>& points,
                                                              network::NcclNet nccl_net) {
  std::vector<network::NcclTestsLog> logs;
  std::map<std::string, std::size_t> log_of_series;
  for (const PublishedPoint& p : points) {
    const std::string at = p.file + ":" + std::to_string(p.line) + ": ";
    if (p.gpus_per_node < 1) return Error{at + "gpus_per_node is not given; a fit needs the ranks"};
    if (p.point.nodes > 1 && p.nccl_net != nccl_net) {
      return Error{at + "nccl_net = \"" + network::to_string(p.nccl_net) + "\": measured over another transport than " +
                   "the scenario's link (" + network::to_string(nccl_net) + ")"};
    }
    auto [it, added] = log_of_series.emplace(p.series, logs.size());
    if (added) {
      network::NcclTestsLog log;
      log.path = p.file;
      log.op_name = network::to_string(p.point.op);
      log.op = p.point.op;
      log.nodes = p.point.nodes;
      log.ranks = p.point.nodes * p.gpus_per_node;
      log.gpu_name = p.gpu;
      log.nccl_version = p.nccl_version;
      log.algorithm = p.point.algorithm;
      logs.push_back(std::move(log));
    }
    network::NcclTestsLog& log = logs[it->second];
    const double alg_bw = p.busbw_bytes_per_s / network::bus_bw_factor(p.point.op, log.ranks);
    network::NcclTestsRow row;
    row.size_bytes = p.point.size_bytes;
    row.out_of_place = {p.point.size_bytes / alg_bw, alg_bw, p.busbw_bytes_per_s, 0};
    row.line = p.line;
    log.rows.push_back(row);
  }
  return logs;
}

std::vector<PublishedPoint> matching(const std::vector<PublishedPoint>& all, const Scenario& scenario) {
  std::vector<PublishedPoint> out;
  const std::string gpu = lower(scenario.cluster.node.gpu);
  for (const auto& p : all) {
    const bool same_gpu = p.gpu.empty() || gpu.rfind(lower(p.gpu), 0) == 0;
    const int node_gpus = p.node_gpus > 0 ? p.node_gpus : p.gpus_per_node;
    const bool same_node = node_gpus == 0 || node_gpus == scenario.cluster.node.gpus;
    const bool same_net = p.point.nodes <= 1 || p.nccl_net == scenario.cluster.fabric.link.nccl_net;
    if (same_gpu && same_node && same_net) out.push_back(p);
  }
  return out;
}

void exclude_unhealthy(std::vector<ValidationRow>& rows, const network::ClusterSpec& cluster) {
  std::map<std::string, std::string> unhealthy;  // series -> why
  for (const ValidationRow& r : rows) {
    const auto& p = r.published.point;
    const int ranks = p.nodes * (r.published.gpus_per_node > 0 ? r.published.gpus_per_node : cluster.node.gpus);
    if (auto issue = network::measurement_issue(cluster, p.op, p.nodes, ranks, p.size_bytes,
                                                r.published.busbw_bytes_per_s)) {
      unhealthy.emplace(r.published.series, *issue);
    }
  }
  for (ValidationRow& r : rows) {
    if (auto it = unhealthy.find(r.published.series); it != unhealthy.end()) r.excluded = it->second;
  }
}

std::string nodes_band(int nodes) {
  if (nodes <= 1) return "1";
  if (nodes <= 4) return "2-4";
  if (nodes <= 32) return "8-32";
  return "64+";
}

std::string size_band(double size_bytes) {
  constexpr double kMiB = 1 << 20;
  if (size_bytes < 32 * kMiB) return "< 32 MiB";
  if (size_bytes <= 1024 * kMiB) return "32 MiB - 1 GiB";
  return "> 1 GiB";
}

std::string op_family(network::CollectiveOp op) {
  switch (op) {
    case network::CollectiveOp::all_reduce: return "AllReduce";
    case network::CollectiveOp::all_gather:
    case network::CollectiveOp::reduce_scatter: return "AllGather/ReduceScatter";
    case network::CollectiveOp::all_to_all: return "AllToAll";
    default: return "SendRecv";
  }
}

std::vector<BandSummary> summarise(const std::vector<ValidationRow>& rows) {
  using Key = std::tuple<int, int, int>;
  std::map<Key, std::pair<std::vector<std::string>, std::vector<double>>> bands;
  std::map<std::string, std::vector<double>> by_nodes;
  std::vector<double> all;
  for (const ValidationRow& r : rows) {
    if (!r.excluded.empty()) continue;
    const std::string n = nodes_band(r.published.point.nodes);
    const std::string f = op_family(r.published.point.op);
    const std::string s = size_band(r.published.point.size_bytes);
    auto& band = bands[{band_order(n), band_order(f), band_order(s)}];
    band.first = {n, f, s};
    band.second.push_back(r.error());
    by_nodes[n].push_back(r.error());
    all.push_back(r.error());
  }
  std::vector<BandSummary> out;
  for (const auto& [key, band] : bands) out.push_back(summary_of(band.first[0], band.first[1], band.first[2], band.second));
  std::vector<std::pair<int, std::string>> node_bands;
  for (const auto& [n, errors] : by_nodes) node_bands.emplace_back(band_order(n), n);
  std::sort(node_bands.begin(), node_bands.end());
  for (const auto& [order, n] : node_bands) out.push_back(summary_of(n, "all", "all", by_nodes[n]));
  if (!all.empty()) out.push_back(summary_of("all", "all", "all", all));
  return out;
}

void write_validation(std::ostream& out, const std::vector<ValidationRow>& rows) {
  out << fmt::format("{:<5} {:>5} {:<13} {:<5} {:>11} {:>10} {:>10} {:>6}  {:<12} {}\n", "gpu", "nodes", "collective",
                     "algo", "bytes", "published", "simulated", "ratio", "simulated", "source");
  for (const auto& r : rows) {
    const auto& p = r.published;
    const std::string algorithm = p.point.algorithm ? std::string(network::to_string(*p.point.algorithm)) : "any";
    out << fmt::format("{:<5} {:>5} {:<13} {:<5} {:>11} {:>10.1f} {:>10.1f} {:>6.2f}  {:<5} {:<6} {}{}\n", p.gpu,
                       p.nodes_text, network::to_string(p.point.op), algorithm, p.bytes_text,
                       p.busbw_bytes_per_s / kBytesPerGB, r.simulated.bus_bw_bytes_per_s / kBytesPerGB, r.ratio(),
                       network::to_string(r.simulated.result.choice.algorithm),
                       network::to_string(r.simulated.result.choice.protocol), r.excluded.empty() ? "" : "[unhealthy] ",
                       p.source);
  }
}

Sheet validation_sheet(const std::vector<ValidationRow>& rows, const std::string& title) {
  Sheet sheet;
  sheet.title = title;
  sheet.columns = {"gpu",    "nodes", "collective", "algorithm", "bytes", "published_busbw_GBps", "simulated_busbw_GBps",
                   "ratio",  "simulated_algorithm", "simulated_protocol", "source", "error", "series", "excluded"};
  for (const auto& r : rows) {
    const auto& p = r.published;
    const std::string algorithm = p.point.algorithm ? std::string(network::to_string(*p.point.algorithm)) : "any";
    const double published_gbps = p.busbw_bytes_per_s / kBytesPerGB;
    const double simulated_gbps = r.simulated.bus_bw_bytes_per_s / kBytesPerGB;
    const std::string sim_algorithm(network::to_string(r.simulated.result.choice.algorithm));
    const std::string sim_protocol(network::to_string(r.simulated.result.choice.protocol));
    sheet.lines.push_back({p.gpu, p.nodes_text, network::to_string(p.point.op), algorithm, p.bytes_text,
                           fmt::format("{:.2f}", published_gbps), fmt::format("{:.2f}", simulated_gbps),
                           fmt::format("{:.3f}", r.ratio()), sim_algorithm, sim_protocol, p.source,
                           fmt::format("{:.4f}", r.error()), p.series, r.excluded});
    sheet.rows.push_back({{"gpu", p.gpu},
                          {"nodes", p.nodes_text},
                          {"collective", network::to_string(p.point.op)},
                          {"algorithm", algorithm},
                          {"bytes", p.bytes_text},
                          {"published_busbw_GBps", published_gbps},
                          {"simulated_busbw_GBps", simulated_gbps},
                          {"ratio", r.ratio()},
                          {"simulated_algorithm", sim_algorithm},
                          {"simulated_protocol", sim_protocol},
                          {"source", p.source},
                          {"error", r.error()},
                          {"series", p.series},
                          {"excluded", r.excluded}});
  }
  return sheet;
}

void write_summary(std::ostream& out, const std::vector<BandSummary>& bands) {
  out << fmt::format("{:<6} {:<24} {:<15} {:>6} {:>14} {:>11} {:>14}\n", "nodes", "collective", "size", "points",
                     "median |err|", "max |err|", "median error");
  for (const BandSummary& b : bands) {
    out << fmt::format("{:<6} {:<24} {:<15} {:>6} {:>13.1f}% {:>10.1f}% {:>+13.1f}%\n", b.nodes, b.family, b.size,
                       b.points, 100 * b.median_abs_error, 100 * b.max_abs_error, 100 * b.median_error);
  }
}

void write_accuracy_markdown(std::ostream& out, const std::vector<ValidationRow>& rows, const Scenario& scenario,
                             const std::string& command, const std::vector<SeriesFigure>& figures) {
  const auto& cl = scenario.cluster;
  out << "# Accuracy of the collective model against real nccl-tests runs\n\n"
      << "Generated by `commbound validate`; regenerate with:\n\n```\n" << command << "\n```\n\n"
      << fmt::format("Simulated on `{}`: {} ({}), {} {} ({}), NCCL {} model, fabric fit `{}`.\n", scenario.path,
                     cl.node.name, cl.node.gpu, network::to_string(cl.fabric.topology), cl.fabric.link.name,
                     network::to_string(cl.fabric.routing), scenario.nccl.release,
                     cl.fabric.fit ? cl.fabric.fit->name : std::string("none (NCCL's tuner latencies)"))
      << "Every measured point on this GPU with this node shape is simulated on this one cluster; across\n"
         "nodes only those measured over the transport NCCL runs on this link (" << network::to_string(cl.fabric.link.nccl_net)
      << "), whatever\nelse their fabric was: read each point's source. Error = simulated busbw / measured busbw - 1\n"
         "(positive: the model is optimistic). The fit, if any, was made from 1-4-node logs of >= 32 MiB\n"
         "(its provenance names them): the points at 8 nodes and more and the sizes below 32 MiB were not fitted.\n\n"
      << "## Error by band\n\n"
      << "| nodes | collective | size | points | median \\|err\\| | max \\|err\\| | median error |\n"
      << "|---|---|---|---:|---:|---:|---:|\n";
  for (const BandSummary& b : summarise(rows)) {
    out << fmt::format("| {} | {} | {} | {} | {:.1f}% | {:.1f}% | {:+.1f}% |\n", b.nodes, b.family, b.size, b.points,
                       100 * b.median_abs_error, 100 * b.max_abs_error, 100 * b.median_error);
  }
  std::map<std::string, std::string> excluded;
  for (const ValidationRow& r : rows) {
    if (!r.excluded.empty()) excluded.emplace(r.published.series, r.excluded);
  }
  if (!excluded.empty()) {
    out << "\nKept out of the summary (listed below), as `commbound fit-fabric` would refuse them:\n\n";
    for (const auto& [series, why] : excluded) out << "* " << series << ": " << why << "\n";
  }
  out << "\n## Measured vs simulated busbw, per measured sweep\n\n";
  for (const SeriesFigure& f : figures) {
    if (!f.path.empty()) out << "**" << f.series << "**\n\n![" << f.series << "](" << f.path << ")\n\n";
  }
  out << "## Every point\n\n"
      << "| nodes | collective | algorithm | size | measured GB/s | simulated GB/s | error | simulated as | source |\n"
      << "|---:|---|---|---:|---:|---:|---:|---|---|\n";
  for (const ValidationRow& r : rows) {
    const auto& p = r.published;
    out << fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} | {:+.1f}% | {}/{} | {}{} ({}:{}) |\n", p.nodes_text,
                       network::to_string(p.point.op), p.published_algorithm, size_label(p.point.size_bytes),
                       p.busbw_bytes_per_s / kBytesPerGB, r.simulated.bus_bw_bytes_per_s / kBytesPerGB, 100 * r.error(),
                       network::to_string(r.simulated.result.choice.algorithm),
                       network::to_string(r.simulated.result.choice.protocol), r.excluded.empty() ? "" : "**excluded** ",
                       p.platform, p.file.substr(p.file.rfind('/') + 1), p.line);
  }
}

std::vector<SeriesFigure> series_figures(const std::vector<PublishedPoint>& points, const std::string& dir) {
  std::vector<SeriesFigure> figures;
  if (dir.empty()) return figures;
  std::vector<std::string> order;
  std::map<std::string, int> count;
  for (const auto& p : points) {
    if (count[p.series]++ == 0) order.push_back(p.series);
  }
  for (const std::string& series : order) {
    if (count[series] < 3) continue;
    const auto& first = *std::find_if(points.begin(), points.end(), [&](const auto& p) { return p.series == series; });
    const std::string name = fmt::format("{:02d}-{}-{}n.png", figures.size() + 1, network::to_string(first.point.op),
                                         first.point.nodes);
    figures.push_back({series, (std::filesystem::path(dir) / name).string()});
  }
  return figures;
}

Status check_series_figures(const std::string& dir, const std::vector<SeriesFigure>& figures, bool force) {
  if (!dir.empty()) {
    auto type = file_type_at(dir);
    if (!type) return type.error();
    if (*type != std::filesystem::file_type::directory) return Error{dir + ": not a directory"};
  }
  for (const auto& f : figures) {
    if (Status ok = check_writable(f.path, force); !ok) return ok;
  }
  return Ok{};
}

LinePlot series_plot(const std::vector<ValidationRow>& rows, const std::string& series) {
  LinePlot plot;
  plot.title = series.size() > 110 ? series.substr(0, 107) + "..." : series;
  plot.x_label = "size (bytes, as nccl-tests)";
  plot.y_label = "busbw (GB/s)";
  plot.x_bytes = true;
  PlotSeries measured{"measured", {}, "linespoints"}, simulated{"simulated (commbound)", {}, "linespoints"};
  for (const auto& r : rows) {
    if (r.published.series != series) continue;
    measured.points.emplace_back(r.published.point.size_bytes, r.published.busbw_bytes_per_s / kBytesPerGB);
    simulated.points.emplace_back(r.published.point.size_bytes, r.simulated.bus_bw_bytes_per_s / kBytesPerGB);
  }
  plot.series = {measured, simulated};
  return plot;
}

Expected<std::vector<SeriesFigure>> draw_series_figures(const std::vector<ValidationRow>& rows,
                                                        std::vector<SeriesFigure> figures,
                                                        const std::string& document, bool force) {
  for (auto& f : figures) {
    if (Status drawn = render_plot(series_plot(rows, f.series), f.path, force); !drawn) return drawn.error();
    if (!document.empty()) {  // the document links its figures relative to itself
      // absolute() fails only without a working directory: then the link stays as given.
      std::error_code doc_ec, figure_ec;
      const auto doc_dir = std::filesystem::absolute(document, doc_ec).parent_path();
      const auto figure = std::filesystem::absolute(f.path, figure_ec);
      if (!doc_ec && !figure_ec) f.path = figure.lexically_relative(doc_dir).string();
    }
  }
  return figures;
}

void write_validation_report(std::ostream& out, const std::vector<ValidationRow>& rows, const Scenario& scenario,
                             Format format, const std::string& command,
                             const std::vector<SeriesFigure>& figures) {
  if (format == Format::markdown) {
    write_accuracy_markdown(out, rows, scenario, command, figures);
    return;
  }
  const std::string title = "commbound validate: " + scenario.path + ", " + std::to_string(rows.size()) + " measured points";
  if (is_sheet_format(format)) return write_sheet(out, validation_sheet(rows, title), format);
  out << "# " << title << "\n";
  write_validation(out, rows);
  out << "\n# error = simulated busbw / measured - 1 (positive: optimistic), by band\n";
  write_summary(out, summarise(rows));
}

}  // namespace commbound::sim
