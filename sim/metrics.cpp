#include "sim/metrics.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <cstdio>

namespace commbound::sim {
namespace {

using Interval = std::pair<double, double>;

// Merges overlapping intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& i : v) s += i.second - i.first;
  return s;
}

// Length of `a` not covered by `b` (both merged).
double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double s = 0;
  for (const auto& i : a) {
    double covered = 0;
    for (const auto& j : b) covered += std::max(0.0, std::min(i.second, j.second) - std::max(i.first, j.first));
    s += (i.second - i.first) - covered;
  }
  return s;
}

// A CSV field, quoted when it holds a comma, a quote or a newline (RFC 4180).
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string cost_csv(const Metrics& m) {
  return "," + csv_field(m.cost_model_source) + "," + csv_field(m.cost_model_table) + "," +
         std::to_string(m.cost_summary.exact_ops) + "," + std::to_string(m.cost_summary.fallback_ops);
}

// "1200 compute ops exact from the table, 90 by fallback (gemm_nearest 60, memory_bound_roofline 30)".
std::string cost_note(const Metrics& m) {
  const CostSummary& c = m.cost_summary;
  if (m.cost_model_source == "roofline") return "every compute op by the datasheet roofline (no kernel table)";
  std::string note = std::to_string(c.exact_ops) + " compute ops exact from " + m.cost_model_table + ", " +
                     std::to_string(c.fallback_ops) + " by fallback";
  std::string kinds;
  for (const auto& [how, n] : c.fallbacks) kinds += (kinds.empty() ? "" : ", ") + how + " " + std::to_string(n);
  return note + (kinds.empty() ? "" : " (" + kinds + ")");
}

}  // namespace

void describe_cost_model(Metrics& m, const CostModel& cost, const std::vector<Program>& stages) {
  m.cost_model_source = cost.source();
  m.cost_model_table = cost.table_path();
  m.cost_model_description = cost.describe();
  m.cost_summary = cost.summarize(stages);
  m.power_model_description = cost.describe_power();
}

Metrics compute_metrics(const TrainingSpec& t, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                        const IterationTimeline& timeline, const MemoryUse& memory, const CostModel& cost) {
  std::map<int, std::pair<std::vector<Interval>, std::vector<Interval>>> per_rank;  // compute, comm
  double compute_bound_s = 0, memory_bound_s = 0;  // compute-stream time by kind of kernel, all ranks
  for (const Span& s : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(s.rank)])];
    const Op& op = program.ops[static_cast<std::size_t>(s.op)];
    const bool collective = op.kind == OpKind::collective;
    auto& [compute, comm] = per_rank[s.rank];
    (collective ? comm : compute).emplace_back(s.start_s, s.end_s);
    if (std::holds_alternative<MemoryBoundShape>(op.kernel)) {
      memory_bound_s += s.end_s - s.start_s;
    } else if (!collective) {
      compute_bound_s += s.end_s - s.start_s;
    }
  }
  double compute_s = 0, comm_s = 0, exposed_s = 0;
  for (auto& [rank, intervals] : per_rank) {
    const auto compute_m = merged(intervals.first);
    const auto comm_m = merged(intervals.second);
    compute_s += length(compute_m);
    comm_s += length(comm_m);
    exposed_s += uncovered(comm_m, compute_m);
  }
  const double ranks = std::max<std::size_t>(1, per_rank.size());
  Metrics m;
  m.gpus = t.world();
  m.iteration_s = timeline.iteration_s();
  m.tokens_per_s = t.tokens_per_iteration() / m.iteration_s;
  m.tokens_per_s_per_gpu = m.tokens_per_s / m.gpus;
  m.model_tflops_per_gpu = t.model.flops_per_token(t.seq_len) * m.tokens_per_s_per_gpu / 1e12;
  m.mfu = m.model_tflops_per_gpu * 1e12 / t.gpu.peak_flops_per_s;
  m.compute_s = compute_s / ranks;
  m.comm_s = comm_s / ranks;
  m.exposed_comm_s = exposed_s / ranks;
  m.exposed_comm_fraction = m.exposed_comm_s / m.iteration_s;
  // The compute-busy fraction of the iteration, split by the kinds of kernel that filled it.
  const double busy_s = compute_bound_s + memory_bound_s;
  const double busy_fraction = m.compute_s / m.iteration_s;
  const double compute_bound_fraction = busy_s > 0 ? busy_fraction * compute_bound_s / busy_s : 0;
  const double memory_bound_fraction = busy_s > 0 ? busy_fraction * memory_bound_s / busy_s : 0;
  m.power_w_per_gpu = cost.power_w(compute_bound_fraction, memory_bound_fraction);
  m.tokens_per_joule = m.tokens_per_s / (m.power_w_per_gpu * m.gpus);
  m.memory = memory;
  m.memory_bytes_per_gpu = memory.total_bytes;
  m.oom = !memory.fits();
  describe_cost_model(m, cost, stages);
  return m;
}

void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, const std::string& format,
                   const std::string& title) {
  if (format == "csv") {
    out << "scenario,gpus,iteration_s,tokens_per_s,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,compute_s,comm_s,"
           "exposed_comm_s,exposed_comm_fraction,power_w_per_gpu,tokens_per_joule,memory_bytes_per_gpu,oom,"
           "cost_model_source,cost_model_table,cost_model_exact_ops,cost_model_fallback_ops\n";
    for (const auto& [name, m] : rows) {
      if (m.oom) {  // not simulated: no timing to report
        out << fmt::format("{},{},,,,,,,,,,,,{:.0f},1", name, m.gpus, m.memory_bytes_per_gpu) << cost_csv(m) << "\n";
        continue;
      }
      out << fmt::format("{},{},{:.6f},{:.1f},{:.2f},{:.2f},{:.4f},{:.6f},{:.6f},{:.6f},{:.4f},{:.1f},{:.4f},{:.0f},{}", name,
                         m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu, m.mfu,
                         m.compute_s, m.comm_s, m.exposed_comm_s, m.exposed_comm_fraction, m.power_w_per_gpu,
                         m.tokens_per_joule, m.memory_bytes_per_gpu, m.oom ? 1 : 0)
          << cost_csv(m) << "\n";
    }
    return;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& [name, m] : rows) {
      nlohmann::json mem = nlohmann::json::object();
      for (const auto& [what, bytes] : m.memory.bytes) mem[what] = bytes;
      nlohmann::json fallbacks = nlohmann::json::object();
      for (const auto& [how, n] : m.cost_summary.fallbacks) fallbacks[how] = n;
      const nlohmann::json cost{{"cost_model_source", m.cost_model_source},
                                {"cost_model_table", m.cost_model_table},
                                {"cost_model_description", m.cost_model_description},
                                {"cost_model_exact_ops", m.cost_summary.exact_ops},
                                {"cost_model_fallback_ops", m.cost_summary.fallback_ops},
                                {"cost_model_fallbacks", fallbacks},
                                {"power_model", m.power_model_description}};
      if (m.oom) {  // not simulated: timing fields are null
        nlohmann::json row{{"scenario", name}, {"gpus", m.gpus}, {"oom", true}, {"memory_bytes_per_gpu", m.memory_bytes_per_gpu},
                           {"memory_breakdown_bytes", mem}};
        row.update(cost);
        arr.push_back(row);
        continue;
      }
      arr.push_back({{"scenario", name}, {"gpus", m.gpus}, {"iteration_s", m.iteration_s},
                     {"tokens_per_s", m.tokens_per_s}, {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
                     {"model_tflops_per_gpu", m.model_tflops_per_gpu}, {"mfu", m.mfu}, {"compute_s", m.compute_s},
                     {"comm_s", m.comm_s}, {"exposed_comm_s", m.exposed_comm_s},
                     {"exposed_comm_fraction", m.exposed_comm_fraction}, {"power_w_per_gpu", m.power_w_per_gpu},
                     {"tokens_per_joule", m.tokens_per_joule}, {"memory_bytes_per_gpu", m.memory_bytes_per_gpu},
                     {"oom", m.oom}, {"memory_breakdown_bytes", mem}});
      arr.back().update(cost);
    }
    out << nlohmann::json{{"title", title}, {"rows", arr}}.dump(2) << "\n";
    return;
  }
  out << "# " << title << "\n";
  int width = 24;
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  out << fmt::format("{:<{}} {:>6} {:>10} {:>12} {:>9} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9} {}\n", "scenario",
                     width, "gpus", "iter(s)", "tokens/s", "tok/s/gpu", "TFLOP/s", "MFU", "compute", "comm", "exposed",
                     "exp%", "W/GPU", "tokens/J", "memory");
  for (const auto& [name, m] : rows) {
    if (m.oom) {
      out << fmt::format("{:<{}} {:>6} {:>10} {:>12} {:>9} {:>7} {:>6} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9} {:.1f} GB  OUT OF MEMORY\n",
                         name, width, m.gpus, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                         m.memory_bytes_per_gpu / 1e9);
      continue;
    }
    out << fmt::format("{:<{}} {:>6} {:>10.4f} {:>12.0f} {:>9.1f} {:>7.1f} {:>5.1f}% {:>9.4f} {:>8.4f} {:>9.4f} {:>6.1f}% {:>9.0f} "
                       "{:>9.2f} {:.1f} GB\n",
                       name, width, m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu,
                       100 * m.mfu, m.compute_s, m.comm_s, m.exposed_comm_s, 100 * m.exposed_comm_fraction,
                       m.power_w_per_gpu, m.tokens_per_joule, m.memory_bytes_per_gpu / 1e9);
  }
  // How compute was priced (the title names the source): one line when every row agrees, else one
  // per row.
  std::vector<std::string> notes;
  for (const auto& [name, m] : rows) notes.push_back(cost_note(m));
  if (std::all_of(notes.begin(), notes.end(), [&](const std::string& n) { return n == notes.front(); })) {
    if (!notes.empty()) out << "# cost model: " << notes.front() << "\n";
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i) out << "# cost model (" << rows[i].first << "): " << notes[i] << "\n";
  }
  for (const auto& [name, m] : rows) {
    if (!m.oom) continue;
    out << fmt::format("# {} does not fit: {:.1f} GB > {:.1f} GB:", name, m.memory_bytes_per_gpu / 1e9,
                       m.memory.capacity_bytes / 1e9);
    for (const auto& [what, bytes] : m.memory.bytes) out << fmt::format(" {} {:.1f} GB;", what, bytes / 1e9);
    out << "\n";
  }
}

void write_trace(std::ostream& out, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                 const IterationTimeline& timeline) {
  nlohmann::json events = nlohmann::json::array();
  std::set<int> ranks;
  for (const Span& sp : timeline.spans) ranks.insert(sp.rank);
  for (int r : ranks) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                      {"args", {{"name", "rank " + std::to_string(r) + " (stage " +
                                             std::to_string(stage_of[static_cast<std::size_t>(r)]) + ")"}}}});
    for (int s = 0; s < kStreams; ++s) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", s},
                        {"args", {{"name", to_string(static_cast<StreamId>(s))}}}});
    }
  }
  for (const Span& sp : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(sp.rank)])];
    const Op& op = program.ops[static_cast<std::size_t>(sp.op)];
    nlohmann::json e{{"name", op.name}, {"ph", "X"}, {"pid", sp.rank}, {"tid", static_cast<int>(sp.stream)},
                     {"ts", (sp.start_s - timeline.start_s) * 1e6}, {"dur", (sp.end_s - sp.start_s) * 1e6}};
    if (op.kind == OpKind::collective) {
      e["args"] = {{"bytes", op.size_bytes},
                   {"algorithm", network::to_string(sp.choice.algorithm)},
                   {"protocol", network::to_string(sp.choice.protocol)}};
    } else {
      e["args"] = {{"flops", op.flops}, {"bytes", op.bytes}};
    }
    events.push_back(e);
  }
  out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

}  // namespace commbound::sim
