#include "sim/report/explain_report.hpp"

#include "core/units.hpp"
#include "sim/report/collective_explain.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace commbound::sim {
namespace {

// The operation as NCCL names its kernels.
const char* nccl_name(network::CollectiveOp op) {
  switch (op) {
    case network::CollectiveOp::all_gather: return "AllGather";
    case network::CollectiveOp::reduce_scatter: return "ReduceScatter";
    case network::CollectiveOp::all_reduce: return "AllReduce";
    case network::CollectiveOp::send_recv: return "SendRecv";
    case network::CollectiveOp::all_to_all: return "AllToAll";
  }
  return "?";
}

// "nvls/Simple", or the mix "ring/Simple 24, ring/LL128 8"; SendRecv and AllToAll (NCCL's
// send/recv) have no algorithm, only a protocol ("p2p/Simple"); "-" when no call ran on the fabric (measured in a replayed trace, or a
// group of one).
std::string choices_label(const BreakdownRow& r) {
  auto name = [&r](const ChoiceCount& c) {
    return std::string(network::algorithm_label(r.collective, c.choice.algorithm)) + "/" +
           network::to_string(c.choice.protocol);
  };
  if (r.choices.empty()) return "-";
  if (r.choices.size() == 1 && std::abs(r.choices.front().count - r.count) < 1e-9) return name(r.choices.front());
  std::string s;
  for (const ChoiceCount& c : r.choices) {
    s += (s.empty() ? "" : ", ") + name(c) + " " +
         (c.count == std::round(c.count) ? fmt::format("{:.0f}", c.count) : fmt::format("{:.2f}", c.count));
  }
  return s;
}

std::string count_label(double count) {
  return count == std::round(count) ? fmt::format("{:.0f}", count) : fmt::format("{:.2f}", count);
}

// The parts of a rank's iteration as the table's summary shows them (they add up to the iteration).
struct Parts {
  double compute_s, exposed_s, group_wait_s, bubble_s, host_s, other_s;
};

Parts parts_of(const RankBreakdown& r, bool pipelined) {
  return {r.compute_s,  r.exposed_comm_s, r.wait_s - r.pipeline_wait_s,
          r.bubble_s,   r.host_s,         r.other_s + (pipelined ? 0.0 : r.tail_s)};
}

// Under a row: one call of its mean size alone on an idle fabric, term by term, and what limits it.
void write_alone(std::ostream& out, const BreakdownRow& r, const GroupCallAlone& a) {
  const network::CollectiveResult& res = a.row.result;
  out << fmt::format("    one call alone, idle fabric, {} on {} node(s): {} {:.1f} us (the run: {:.1f} us a call)\n",
                     size_label(a.row.size_bytes), a.row.nodes,
                     std::string(network::algorithm_label(a.collective, res.choice.algorithm)) + "/" +
                         network::to_string(res.choice.protocol),
                     res.time_s * kUsPerS, r.time_s / r.count * kUsPerS);
  for (const network::CostTerm& t : res.terms) {
    out << fmt::format("      {:>5.1f}%  {}\n", res.time_s > 0 ? 100 * t.seconds / res.time_s : 0.0, t.what);
  }
  if (const std::string limit = limiting_term(res); !limit.empty()) out << "      limited by: " << limit << "\n";
  write_loads(out, res, "      ");
}

void write_table(std::ostream& out, const ExplainedPoint& point) {
  if (!point.breakdown) {  // what `run` prints for such a row, as a table: what fills the GPU
    const MemoryUse& m = point.memory;
    out << fmt::format("## {}: not simulated: it does not fit in GPU memory ({:.1f} GB > {:.1f} GB on pipeline stage {})\n",
                       point.name, m.total_bytes / kBytesPerGB, m.capacity_bytes / kBytesPerGB, m.stage);
    out << fmt::format("{:<28} {:>10} {:>7}\n", "memory per GPU", "GB", "share");
    for (const auto& [what, bytes] : m.bytes) {
      out << fmt::format("{:<28} {:>10.1f} {:>6.1f}%\n", what, bytes / kBytesPerGB,
                         m.total_bytes > 0 ? 100 * bytes / m.total_bytes : 0.0);
    }
    out << fmt::format("{:<28} {:>10.1f} {:>6.1f}%\n", "total", m.total_bytes / kBytesPerGB, 100.0);
    return;
  }
  const IterationBreakdown& b = *point.breakdown;
  const bool pipelined = b.pipeline_stages > 1;
  const double it_s = b.iteration_s;
  auto share = [it_s](double s) { return it_s > 0 ? 100 * s / it_s : 0.0; };
  const std::string who = b.ranks.size() == 1 ? "rank " + std::to_string(b.ranks.front().rank)
                                              : "mean of " + std::to_string(b.ranks.size()) + " simulated ranks";
  out << fmt::format("## {}: iteration {:.4f} s, {} micro-batch{}, {} pipeline stage{}, sequence parallelism {}; {}\n",
                     point.name, it_s, b.micro_batches, b.micro_batches > 1 ? "es" : "", b.pipeline_stages, pipelined ? "s" : "",
                     b.sequence_parallel ? "on" : "off", who);
  out << fmt::format("{:<10} {:<13} {:>6} {:>9} {:>11} {:>11} {:<22} {:>9} {:>8} {:>10} {:>6} {:>9}\n", "group",
                     "collective", "ranks", "calls", "bytes/call", "bytes/iter", "NCCL algo/proto", "time(s)",
                     "busGB/s", "exposed(s)", "exp%", "wait(s)");
  for (const BreakdownRow& r : b.mean.rows) {
    out << fmt::format("{:<10} {:<13} {:>6} {:>9} {:>11} {:>11} {:<22} {:>9.4f} {:>8.1f} {:>10.4f} {:>5.1f}% {:>9.4f}\n",
                       to_string(r.group), nccl_name(r.collective), r.group_ranks, count_label(r.count),
                       r.count > 0 ? size_label(r.bytes / r.count) : "-", size_label(r.bytes), choices_label(r),
                       r.time_s, r.bus_bw_bytes_per_s() / kBytesPerGB, r.exposed_s, share(r.exposed_s), r.wait_s);
    const auto alone = std::find_if(point.alone.begin(), point.alone.end(), [&r](const GroupCallAlone& a) {
      return a.group == r.group && a.collective == r.collective;
    });
    if (alone != point.alone.end()) write_alone(out, r, *alone);
  }
  if (b.mean.rows.empty()) out << "(no collectives)\n";
  const Parts p = parts_of(b.mean, pipelined);
  const std::pair<const char*, double> lines[] = {
      {"compute", p.compute_s},
      {"exposed communication (rows' exposed)", p.exposed_s},
      {"waiting for a group (rows' wait, PP aside)", p.group_wait_s},
      {pipelined ? "pipeline bubble (PP wait + tail)" : "pipeline bubble (no pipeline)", p.bubble_s},
      {"host-bound (op not yet issued)", p.host_s},
      {"idle, other", p.other_s},
      {"iteration", it_s},
  };
  for (const auto& [what, s] : lines) out << fmt::format("  {:<44} {:>9.4f} s {:>6.1f}%\n", what, s, share(s));
  if (b.ranks.size() > 1) {
    out << fmt::format("  {:>6} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "rank", "stage", "compute(s)",
                       "exposed(s)", "wait(s)", "bubble(s)", "host(s)", "other(s)");
    for (const RankBreakdown& r : b.ranks) {
      const Parts q = parts_of(r, pipelined);
      out << fmt::format("  {:>6} {:>6} {:>11.4f} {:>11.4f} {:>11.4f} {:>11.4f} {:>11.4f} {:>11.4f}\n", r.rank, r.stage,
                         q.compute_s, q.exposed_s, q.group_wait_s, q.bubble_s, q.host_s, q.other_s);
    }
  }
}

// A rank's lines of the sheet: one per collective row, then its compute, host, tail and other time.
void add_rank_lines(Sheet& sheet, const std::string& name, const std::string& rank, const std::string& stage,
                    const RankBreakdown& r) {
  for (const BreakdownRow& row : r.rows) {
    sheet.lines.push_back({name, rank, stage, "collective", to_string(row.group), network::to_string(row.collective),
                           std::to_string(row.group_ranks), count_label(row.count), fmt::format("{:.0f}", row.bytes),
                           choices_label(row), fmt::format("{:.9f}", row.time_s),
                           fmt::format("{:.3f}", row.bus_bw_bytes_per_s() / kBytesPerGB),
                           fmt::format("{:.9f}", row.exposed_s), fmt::format("{:.9f}", row.wait_s)});
  }
  const std::pair<const char*, double> parts[] = {
      {"compute", r.compute_s}, {"host", r.host_s}, {"tail", r.tail_s}, {"other", r.other_s}};
  for (const auto& [part, s] : parts) {
    sheet.lines.push_back({name, rank, stage, part, "", "", "", "", "", "", fmt::format("{:.9f}", s), "", "", ""});
  }
}

// The points as every sheet format writes them: a line per collective row and part of the mean
// rank and of every simulated rank; in JSON a point each, with its breakdown and its calls alone,
// or its memory when it does not fit.
Sheet explain_sheet(const std::vector<ExplainedPoint>& points, const std::string& title) {
  Sheet sheet;
  sheet.title = title;
  sheet.columns = {"scenario", "rank",  "stage", "part",   "group",     "collective", "group_ranks",
                   "calls",    "bytes", "nccl",  "time_s", "busbw_GBps", "exposed_s", "wait_s"};
  sheet.rows_key = "points";
  for (const ExplainedPoint& p : points) {
    if (!p.breakdown) {  // out of memory: nothing simulated
      nlohmann::json memory = nlohmann::json::object();
      for (const auto& [what, bytes] : p.memory.bytes) memory[what] = bytes;
      sheet.rows.push_back({{"scenario", p.name},
                            {"oom", true},
                            {"memory_bytes_per_gpu", p.memory.total_bytes},
                            {"memory_capacity_bytes", p.memory.capacity_bytes},
                            {"memory_breakdown_bytes", memory}});
      continue;
    }
    add_rank_lines(sheet, p.name, "mean", "", p.breakdown->mean);
    for (const RankBreakdown& r : p.breakdown->ranks) {
      add_rank_lines(sheet, p.name, std::to_string(r.rank), std::to_string(r.stage), r);
    }
    nlohmann::json alone = nlohmann::json::array();
    for (const GroupCallAlone& a : p.alone) {
      const network::CollectiveResult& res = a.row.result;
      nlohmann::json terms = nlohmann::json::array();
      for (const network::CostTerm& t : res.terms) {
        terms.push_back({{"what", t.what}, {"count", t.count}, {"each_s", t.each_s}, {"seconds", t.seconds}});
      }
      alone.push_back({{"group", to_string(a.group)},
                       {"collective", network::to_string(a.collective)},
                       {"ranks", a.row.ranks},
                       {"nodes", a.row.nodes},
                       {"bytes", a.row.size_bytes},
                       {"algorithm", network::algorithm_label(a.collective, res.choice.algorithm)},
                       {"protocol", network::to_string(res.choice.protocol)},
                       {"time_s", res.time_s},
                       {"terms", terms}});
    }
    sheet.rows.push_back({{"scenario", p.name}, {"oom", false}, {"breakdown", *p.breakdown}, {"alone", alone}});
  }
  return sheet;
}

}  // namespace

void write_explain_report(std::ostream& out, const std::vector<ExplainedPoint>& points, Format format,
                          const std::string& title) {
  if (is_sheet_format(format)) return write_sheet(out, explain_sheet(points, title), format);
  out << "# " << title << "\n";
  for (const ExplainedPoint& p : points) write_table(out, p);
}

const char* explain_columns_help() {
  return R"(--explain prints, per point, one line per communication group and collective kind of a
simulated rank (the mean over the simulated ranks, one per pipeline stage, as the metrics):
  group       TP (tensor-parallel all-reduces), SP (the tensor-parallel all-gathers and
              reduce-scatters of sequence parallelism), CP (ring-attention steps), PP (pipeline
              SendRecv, both neighbours and directions), DP (FSDP/DDP), DP-shard / DP-replica
              (HSDP's and DiLoCo's inner and outer groups)
  ranks       members of the group
  calls       collectives per iteration (DiLoCo's outer step counts 1/sync_every)
  bytes/call  mean size (nccl-tests convention: AllGather output, ReduceScatter input, AllReduce
              buffer, SendRecv message); bytes/iter: their sum
  NCCL        the (algorithm/protocol) the tuner chose, or the mix with its counts (SendRecv:
              p2p/protocol)
  time(s)     sum of the calls' durations; busGB/s: nccl-tests bus bandwidth over them
  exposed(s)  the part of the calls' time when the compute stream was idle (shared equally by the
              collectives running together); the rows add up to exposed_comm_s of the metrics
  wait(s)     idle time before a call started, after it was ready: the group's other members
              were late (PP: the neighbour stage had not sent yet; others: the slowest member)
then the iteration split into parts that add up to it: compute; exposed communication; waiting
for a group (the rows' wait, PP aside); the pipeline bubble (the PP rows' wait plus, with
pipeline parallelism, the tail: idle after the stage's last op until the slowest stage ends);
host-bound (idle until the host issued the next op); idle, other. Under each row that ran on
the fabric: one call of its mean size alone on an idle copy of the cluster, over the first
simulated rank's group, with the choice the run used most, and its time term by term (launch,
latency chain, messages, bytes, FIFO window, as `commbound collective --explain`): what the call
costs by itself, against the run's time a call, which adds the links it shared, its size spread
and, for an all-to-all, the routing skew. With several pipeline stages a line per stage follows. --format csv gives every rank's lines and the mean, --format json the
same data (docs/metrics.md). A [sweep] gives one table per point.)";
}

}  // namespace commbound::sim
