#include "sim/metrics/metrics.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <cstdio>

namespace commbound::sim {

using calibration::MemoryBoundShape;
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

// DiLoCo's outer step (the ops from Program::outer_step_begin on) runs once every `sync_every`
// iterations, after everything else of its iteration. The average iteration is the inner step plus
// 1/sync_every of what the outer step adds, so the timeline's time past the last inner op is
// compressed by 1/sync_every (a monotone map: spans keep their order and overlaps), and every metric
// computed from it is that average: H - 1 inner-only iterations and one with the outer step.
IterationTimeline amortised(const IterationTimeline& timeline, const std::vector<Program>& stages,
                            const std::vector<int>& stage_of, int sync_every) {
  double inner_end_s = timeline.start_s;
  for (const Span& s : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(s.rank)])];
    if (program.outer_step_begin < 0 || s.op < program.outer_step_begin) inner_end_s = std::max(inner_end_s, s.end_s);
  }
  auto warp = [&](double x) { return x <= inner_end_s ? x : inner_end_s + (x - inner_end_s) / sync_every; };
  IterationTimeline out = timeline;
  for (Span& s : out.spans) {
    s.start_s = warp(s.start_s);
    s.end_s = warp(s.end_s);
  }
  out.end_s = warp(timeline.end_s);
  return out;
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
                        const IterationTimeline& simulated, const MemoryUse& memory, const CostModel& cost) {
  const IterationTimeline timeline =
      t.strategy == Strategy::diloco ? amortised(simulated, stages, stage_of, t.diloco_sync_every) : simulated;
  std::map<int, std::pair<std::vector<Interval>, std::vector<Interval>>> per_rank;  // compute, comm
  double compute_bound_s = 0, memory_bound_s = 0;  // compute-stream time by kind of kernel, all ranks
  for (const Span& s : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(s.rank)])];
    const Op& op = program.ops[static_cast<std::size_t>(s.op)];
    if (op.kind == OpKind::host) continue;  // the GPU waited for the CPU: neither compute nor communication
    const bool collective = op.kind == OpKind::collective;
    auto& [compute, comm] = per_rank[s.rank];
    (collective ? comm : compute).emplace_back(s.start_s, s.end_s);
    if (calibration::is_memory_bound(op.kernel)) {
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
  m.power_w_per_gpu = cost.power_w(compute_bound_fraction, memory_bound_fraction, m.exposed_comm_fraction);
  m.tokens_per_joule = m.tokens_per_s / (m.power_w_per_gpu * m.gpus);
  m.memory = memory;
  m.memory_bytes_per_gpu = memory.total_bytes;
  m.oom = !memory.fits();
  describe_cost_model(m, cost, stages);
  return m;
}

}  // namespace commbound::sim
