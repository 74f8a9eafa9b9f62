#include "sim/report/collective_report.hpp"

#include "core/nccl_tests_text.hpp"
#include "core/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

namespace commbound::sim {
namespace {

constexpr std::size_t kFloatBytes = 4;  // nccl-tests' default type, float

// `rows` as nccl-tests prints them, one run per (op, node count) in their order: its header lines
// with the run's shape, the column heads, the rows (simulated: in-place timed as out-of-place,
// #wrong N/A), its footer. count and redop as nccl-tests prints them for float data: AllGather and
// ReduceScatter pass each rank's share, the others the whole buffer; AllGather and AllToAll reduce
// nothing ("none", src/all_gather.cu, src/alltoall.cu).
void write_nccl_tests(std::ostream& out, const std::vector<network::SweepRow>& rows, const std::string& title) {
  for (std::size_t first = 0; first < rows.size();) {
    std::size_t end = first;
    while (end < rows.size() && rows[end].op == rows[first].op && rows[end].nodes == rows[first].nodes) ++end;
    const network::CollectiveOp op = rows[first].op;
    const char* binary = nccl_tests_binary(network::nccl_tests_op(op));
    out << "# " << title << "\n# simulated, not measured, in nccl-tests' format\n"
        << "# Collective test starting: " << binary << "\n"
        << fmt::format("# nodes {} ranks {}\n#\n", rows[first].nodes, rows[first].ranks) << nccl_tests_column_heads();
    std::vector<NcclTestsRow> run;
    for (std::size_t i = first; i < end; ++i) {
      const network::SweepRow& r = rows[i];
      const bool per_rank = op == network::CollectiveOp::all_gather || op == network::CollectiveOp::reduce_scatter;
      const auto size = static_cast<std::size_t>(r.size_bytes);
      const NcclTestsTiming timing{r.result.time_s, r.alg_bw_bytes_per_s, r.bus_bw_bytes_per_s, -1};
      run.push_back({size, size / kFloatBytes / (per_rank ? static_cast<std::size_t>(r.ranks) : 1), "float",
                     op == network::CollectiveOp::all_gather || op == network::CollectiveOp::all_to_all ? "none" : "sum",
                     timing, timing});
      out << nccl_tests_row(run.back());
    }
    out << nccl_tests_footer(run) << "# Collective test concluded: " << binary << "\n";
    first = end;
  }
}

// The rows as every sheet format writes them: collective_csv_columns(), and in JSON each row's
// latency and bandwidth parts and its flows too.
Sheet collective_sheet(const std::vector<network::SweepRow>& rows, const std::string& title) {
  using network::to_string;
  Sheet sheet;
  sheet.title = title;
  sheet.columns = collective_csv_columns();
  for (const auto& r : rows) {
    const std::string algorithm = network::algorithm_label(r.op, r.result.choice.algorithm);
    sheet.lines.push_back({to_string(r.op), std::to_string(r.nodes), std::to_string(r.ranks),
                           fmt::format("{:.0f}", r.size_bytes), fmt::format("{:.3f}", r.result.time_s * kUsPerS),
                           fmt::format("{:.3f}", r.alg_bw_bytes_per_s / kBytesPerGB),
                           fmt::format("{:.3f}", r.bus_bw_bytes_per_s / kBytesPerGB), algorithm,
                           to_string(r.result.choice.protocol), to_string(r.result.fidelity)});
    sheet.rows.push_back({{"op", to_string(r.op)},
                          {"nodes", r.nodes},
                          {"ranks", r.ranks},
                          {"bytes", r.size_bytes},
                          {"time_us", r.result.time_s * kUsPerS},
                          {"algbw_GBps", r.alg_bw_bytes_per_s / kBytesPerGB},
                          {"busbw_GBps", r.bus_bw_bytes_per_s / kBytesPerGB},
                          {"algorithm", algorithm},
                          {"protocol", to_string(r.result.choice.protocol)},
                          {"fidelity", to_string(r.result.fidelity)},
                          {"latency_us", r.result.latency_s * kUsPerS},
                          {"bandwidth_time_us", r.result.bandwidth_s * kUsPerS},
                          {"flows", r.result.flows}});
  }
  return sheet;
}

}  // namespace

void write_collective_report(std::ostream& out, const std::vector<network::SweepRow>& rows, Format format,
                             const std::string& title) {
  using network::to_string;
  if (is_sheet_format(format)) return write_sheet(out, collective_sheet(rows, title), format);
  if (format == Format::nccl_tests) {
    write_nccl_tests(out, rows, title);
    return;
  }
  out << "# " << title << "\n";
  out << fmt::format("{:<14} {:>6} {:>6} {:>12} {:>12} {:>10} {:>10}  {:<5} {:<7} {}\n", "op", "nodes", "ranks", "size",
                     "time(us)", "algbw", "busbw", "algo", "proto", "fidelity");
  out << fmt::format("{:<14} {:>6} {:>6} {:>12} {:>12} {:>10} {:>10}\n", "", "", "", "", "", "(GB/s)", "(GB/s)");
  for (const auto& r : rows) {
    out << fmt::format("{:<14} {:>6} {:>6} {:>12} {:>12.1f} {:>10.2f} {:>10.2f}  {:<5} {:<7} {}\n", to_string(r.op), r.nodes,
                       r.ranks, size_label(r.size_bytes), r.result.time_s * kUsPerS,
                       r.alg_bw_bytes_per_s / kBytesPerGB, r.bus_bw_bytes_per_s / kBytesPerGB,
                       network::algorithm_label(r.op, r.result.choice.algorithm),
                       to_string(r.result.choice.protocol), to_string(r.result.fidelity));
  }
}

const std::vector<std::string>& collective_csv_columns() {
  static const std::vector<std::string> columns = {"op",         "nodes",      "ranks",     "bytes",    "time_us",
                                                   "algbw_GBps", "busbw_GBps", "algorithm", "protocol", "fidelity"};
  return columns;
}

bool is_collective_csv(const CsvTable& table) { return table.header == collective_csv_columns(); }

Expected<std::vector<CollectiveCsvRow>> read_collective_csv(const CsvTable& table) {
  std::vector<CollectiveCsvRow> rows;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    double nodes = 0, ranks = 0, bytes = 0, busbw_gbps = 0;
    struct Field {
      const char* name;
      double* value;
      bool zero_allowed;  // busbw of one rank is 0: (n-1)/n of the algorithm bandwidth
    };
    const Field fields[] = {
        {"nodes", &nodes, false}, {"ranks", &ranks, false}, {"bytes", &bytes, false}, {"busbw_GBps", &busbw_gbps, true}};
    for (const auto& [name, field, zero_allowed] : fields) {
      auto v = table.number(r, name);
      if (!v) return v.error();
      if (!std::isfinite(*v) || *v < 0 || (*v == 0 && !zero_allowed)) {
        return Error{table.path + ":" + std::to_string(table.lines[r]) + ": " + name + " = \"" +
                     table.rows[r][static_cast<std::size_t>(table.column(name))] + "\": must be a " +
                     (zero_allowed ? "non-negative" : "positive") + " number"};
      }
      *field = *v;
    }
    rows.push_back({table.rows[r][0], static_cast<int>(nodes), static_cast<int>(ranks), bytes,
                    busbw_gbps * kBytesPerGB, table.rows[r][static_cast<std::size_t>(table.column("algorithm"))]});
  }
  return rows;
}

std::string collective_title(const network::CollectiveSweep& sweep, const network::ClusterSpec& cluster,
                             const std::string& nccl_release) {
  using network::to_string;
  const int max_nodes = sweep.nodes.empty() ? 0 : *std::max_element(sweep.nodes.begin(), sweep.nodes.end());
  std::ostringstream title;
  title << "commbound collective: " << to_string(sweep.op) << " on "
        << (sweep.gpus_per_node > 0 && sweep.op != network::CollectiveOp::send_recv
                ? fmt::format("{} of the {} GPUs of ", sweep.gpus_per_node, cluster.node.gpus)
                : std::string())
        << cluster.node.name << " x up to " << max_nodes << " nodes, " << to_string(cluster.fabric.topology) << " "
        << cluster.fabric.link.name << " (" << to_string(cluster.fabric.routing) << ", "
        << cluster.fabric.oversubscription << ":1), NCCL " << nccl_release << " model";
  if (cluster.fabric.spread) {
    title << ", link spread " << cluster.fabric.spread->name << " (seed " << cluster.fabric.link_spread_seed << ")";
  }
  return title.str();
}

}  // namespace commbound::sim
