#include "sim/engine/compute_profile.hpp"

#include "sim/workload/workload.hpp"

#include <algorithm>

namespace commbound::sim {

ComputeProfile profile_compute(const TrainingSpec& t, const CostModel& cost) {
  ComputeProfile profile;
  for (ProgramPart part : kProgramParts) {
    const Program program = build_part(t, part);
    ProfiledPart p;
    p.name = to_string(part);
    double gpu_free_s = 0, issued_s = 0;
    p.limit_slowdown = cost.limit_slowdown_for({program});
    for (const Op& op : program.ops) {
      if (op.kind == OpKind::collective || std::holds_alternative<std::monostate>(op.kernel)) continue;
      const calibration::Priced priced = cost.price(op, p.limit_slowdown);
      ProfiledKernel k;
      k.part = p.name;
      k.name = op.name;
      k.shape = op.kernel;
      k.flops = op.flops;
      k.bytes = op.bytes;
      k.gpu_s = priced.seconds;
      k.match = priced.match;
      k.host_s = op.issue_s - issued_s;
      k.issue_s = issued_s = op.issue_s;
      k.start_s = std::max(op.issue_s, gpu_free_s);
      k.end_s = gpu_free_s = k.start_s + k.gpu_s;
      ++p.kernels;
      p.gpu_s += k.gpu_s;
      profile.kernels.push_back(std::move(k));
    }
    if (p.kernels == 0) continue;  // nothing recomputed
    p.host_s = issued_s;
    p.time_s = gpu_free_s;
    profile.parts.push_back(p);
  }
  return profile;
}

}  // namespace commbound::sim
