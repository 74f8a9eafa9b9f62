#include "sim/metrics/metrics.hpp"

#include "sim/metrics/internal/timeline_intervals.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <cstdio>

namespace commbound::sim {

using model::MemoryBoundShape;
using internal::Interval;
using internal::length;
using internal::merged;
using internal::uncovered;

void describe_cost_model(Metrics& m, const CostModel& cost, const std::vector<Program>& stages) {
  m.cost_model_source = cost.source();
  m.cost_model_table = cost.table_path();
  m.cost_model_description = cost.describe();
  m.cost_summary = cost.summarize(stages);
  m.power_model_description = cost.describe_power();
  m.power_limit_slowdown = cost.power_limit_slowdown();
  m.compute_bound_share = cost.compute_bound_share();
}

Metrics compute_metrics(const TrainingSpec& t, const std::vector<Program>& stages, const std::vector<int>& stage_of,
                        const IterationTimeline& simulated, const MemoryUse& memory, const CostModel& cost) {
  const IterationTimeline timeline = internal::outer_step_warp(t, simulated, stages, stage_of).apply(simulated);
  std::map<int, std::pair<std::vector<Interval>, std::vector<Interval>>> per_rank;  // compute, comm
  double compute_bound_s = 0, memory_bound_s = 0;  // compute-stream time by kind of kernel, all ranks
  double slow_wait_s = 0;  // all ranks: what a degraded GPU's stage waits for it (Span::compute_rate)
  for (const Span& s : timeline.spans) {
    const Program& program = stages[static_cast<std::size_t>(stage_of[static_cast<std::size_t>(s.rank)])];
    const Op& op = program.ops[static_cast<std::size_t>(s.op)];
    if (op.kind == OpKind::host) continue;  // the GPU waited for the CPU: neither compute nor communication
    const bool collective = op.kind == OpKind::collective;
    auto& [compute, comm] = per_rank[s.rank];
    (collective ? comm : compute).emplace_back(s.start_s, s.end_s);
    const double work_s = (s.end_s - s.start_s) * s.compute_rate;
    slow_wait_s += (s.end_s - s.start_s) - work_s;
    if (model::is_memory_bound(op.kernel)) {
      memory_bound_s += work_s;
    } else if (!collective) {
      compute_bound_s += work_s;
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
  // The compute-busy fraction of the iteration, split by the kinds of kernel that filled it. With a
  // degraded GPU in a stage, its ops' spans are longer than their work: every other GPU of the
  // stage does the work at full speed, then waits for the slow one at the next collective, as a
  // GPU waits inside one (comm-only power). The slow GPU is counted alike: the same work, its lower
  // clock's power not modelled.
  const double busy_s = compute_bound_s + memory_bound_s;
  const double slow_wait_fraction = slow_wait_s / ranks / m.iteration_s;
  const double busy_fraction = std::max(0.0, m.compute_s / m.iteration_s - slow_wait_fraction);
  const double compute_bound_fraction = busy_s > 0 ? busy_fraction * compute_bound_s / busy_s : 0;
  const double memory_bound_fraction = busy_s > 0 ? busy_fraction * memory_bound_s / busy_s : 0;
  m.power_w_per_gpu =
      cost.power_w(compute_bound_fraction, memory_bound_fraction, m.exposed_comm_fraction + slow_wait_fraction);
  m.tokens_per_joule = m.tokens_per_s / (m.power_w_per_gpu * m.gpus);
  m.memory = memory;
  m.memory_bytes_per_gpu = memory.total_bytes;
  m.oom = !memory.fits();
  describe_cost_model(m, cost, stages);
  return m;
}

}  // namespace commbound::sim
