#include "sim/metrics.hpp"

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

}  // namespace

Metrics compute_metrics(const TrainingSpec& t, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                        const IterationTimeline& timeline, const MemoryUse& memory) {
  std::map<int, std::pair<std::vector<Interval>, std::vector<Interval>>> per_rank;  // compute, comm
  for (const Span& s : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(s.rank)])];
    const bool collective = program.ops[static_cast<std::size_t>(s.op)].kind == OpKind::collective;
    auto& [compute, comm] = per_rank[s.rank];
    (collective ? comm : compute).emplace_back(s.start_s, s.end_s);
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
  m.power_w_per_gpu = t.gpu.idle_w + (t.gpu.tdp_w - t.gpu.idle_w) * m.compute_s / m.iteration_s;
  m.tokens_per_joule = m.tokens_per_s / (m.power_w_per_gpu * m.gpus);
  m.memory = memory;
  m.memory_bytes_per_gpu = memory.total_bytes;
  m.oom = !memory.fits();
  return m;
}

void write_metrics(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& rows, const std::string& format,
                   const std::string& title) {
  char buf[512];
  if (format == "csv") {
    out << "scenario,gpus,iteration_s,tokens_per_s,tokens_per_s_per_gpu,model_tflops_per_gpu,mfu,compute_s,comm_s,"
           "exposed_comm_s,exposed_comm_fraction,power_w_per_gpu,tokens_per_joule,memory_bytes_per_gpu,oom\n";
    for (const auto& [name, m] : rows) {
      if (m.oom) {  // not simulated: no timing to report
        std::snprintf(buf, sizeof buf, "%s,%d,,,,,,,,,,,,%.0f,1\n", name.c_str(), m.gpus, m.memory_bytes_per_gpu);
        out << buf;
        continue;
      }
      std::snprintf(buf, sizeof buf, "%s,%d,%.6f,%.1f,%.2f,%.2f,%.4f,%.6f,%.6f,%.6f,%.4f,%.1f,%.4f,%.0f,%d\n",
                    name.c_str(), m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu,
                    m.model_tflops_per_gpu, m.mfu, m.compute_s, m.comm_s, m.exposed_comm_s, m.exposed_comm_fraction,
                    m.power_w_per_gpu, m.tokens_per_joule, m.memory_bytes_per_gpu, m.oom ? 1 : 0);
      out << buf;
    }
    return;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& [name, m] : rows) {
      nlohmann::json mem = nlohmann::json::object();
      for (const auto& [what, bytes] : m.memory.bytes) mem[what] = bytes;
      if (m.oom) {  // not simulated: timing fields are null
        arr.push_back({{"scenario", name}, {"gpus", m.gpus}, {"oom", true}, {"memory_bytes_per_gpu", m.memory_bytes_per_gpu},
                       {"memory_breakdown_bytes", mem}});
        continue;
      }
      arr.push_back({{"scenario", name}, {"gpus", m.gpus}, {"iteration_s", m.iteration_s},
                     {"tokens_per_s", m.tokens_per_s}, {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
                     {"model_tflops_per_gpu", m.model_tflops_per_gpu}, {"mfu", m.mfu}, {"compute_s", m.compute_s},
                     {"comm_s", m.comm_s}, {"exposed_comm_s", m.exposed_comm_s},
                     {"exposed_comm_fraction", m.exposed_comm_fraction}, {"power_w_per_gpu", m.power_w_per_gpu},
                     {"tokens_per_joule", m.tokens_per_joule}, {"memory_bytes_per_gpu", m.memory_bytes_per_gpu},
                     {"oom", m.oom}, {"memory_breakdown_bytes", mem}});
    }
    out << nlohmann::json{{"title", title}, {"rows", arr}}.dump(2) << "\n";
    return;
  }
  out << "# " << title << "\n";
  int width = 24;
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  std::snprintf(buf, sizeof buf, "%-*s %6s %10s %12s %9s %7s %6s %9s %8s %9s %7s %9s %9s %s\n", width, "scenario", "gpus",
                "iter(s)", "tokens/s", "tok/s/gpu", "TFLOP/s", "MFU", "compute", "comm", "exposed", "exp%", "W/GPU",
                "tokens/J", "memory");
  out << buf;
  for (const auto& [name, m] : rows) {
    if (m.oom) {
      std::snprintf(buf, sizeof buf, "%-*s %6d %10s %12s %9s %7s %6s %9s %8s %9s %7s %9s %9s %.1f GB  OUT OF MEMORY\n",
                    width, name.c_str(), m.gpus, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", m.memory_bytes_per_gpu / 1e9);
      out << buf;
      continue;
    }
    std::snprintf(buf, sizeof buf, "%-*s %6d %10.4f %12.0f %9.1f %7.1f %5.1f%% %9.4f %8.4f %9.4f %6.1f%% %9.0f %9.2f %.1f GB%s\n",
                  width, name.c_str(), m.gpus, m.iteration_s, m.tokens_per_s, m.tokens_per_s_per_gpu, m.model_tflops_per_gpu,
                  100 * m.mfu, m.compute_s, m.comm_s, m.exposed_comm_s, 100 * m.exposed_comm_fraction,
                  m.power_w_per_gpu, m.tokens_per_joule, m.memory_bytes_per_gpu / 1e9, m.oom ? "  OUT OF MEMORY" : "");
    out << buf;
  }
  for (const auto& [name, m] : rows) {
    if (!m.oom) continue;
    std::snprintf(buf, sizeof buf, "# %s does not fit: %.1f GB > %.1f GB:", name.c_str(), m.memory_bytes_per_gpu / 1e9,
                  m.memory.capacity_bytes / 1e9);
    out << buf;
    for (const auto& [what, bytes] : m.memory.bytes) {
      std::snprintf(buf, sizeof buf, " %s %.1f GB;", what.c_str(), bytes / 1e9);
      out << buf;
    }
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
