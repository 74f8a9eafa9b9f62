// ComputeProfile: what one GPU computes for one micro-batch of a training setting, kernel by
// kernel, as a framework runs it (model/framework_recipe.hpp): each kernel's shape,
// bytes, FLOPs, its price and where the price came from, and when the host issued it.
//
// Each part (a decoder layer forward, backward, their sum, the embedding, the LM head, the
// optimizer, one micro-batch's whole forward and backward) is run alone, as a benchmark times it
// with CUDA events and a synchronize, call after call: one host thread issues the part's ops in
// order at the framework's host cost per op (TrainingSpec::host); a kernel starts when it has
// been issued and the previous kernel has finished. A part's time is from the first issue to the
// last kernel's end, so a part whose kernels are shorter than their issue time is host-bound.
// Called back to back, the part keeps the GPU busy long enough for the board to hold its power
// limit: its compute-bound kernels are slowed by the table's measured curve at the part's own
// compute-bound share (CostModel::limit_slowdown_for), as `commbound run` slows a whole step's.
// No communication, no contention: the compute of one rank, to put beside a torch.profiler table.
#pragma once

#include "model/llama_recipe.hpp"
#include "sim/engine/cost_model.hpp"
#include "sim/scenario/training.hpp"

#include <string>
#include <vector>

namespace commbound::sim {

struct ProfiledKernel {
  std::string part;      // "layer.forward", "layer.backward", "lm_head.forward", ... (ProgramPart)
  std::string name;      // the recipe's kernel name: "rmsnorm.pow", "qkv.dgrad", "attention"
  model::KernelShape shape;
  double flops = 0, bytes = 0;
  double gpu_s = 0;      // its price
  double host_s = 0;     // the host's time to issue it (its framework ops)
  calibration::Match match = calibration::Match::exact;
  double issue_s = 0, start_s = 0, end_s = 0;  // from the part's start
};

struct ProfiledPart {
  std::string name;
  int kernels = 0;
  double gpu_s = 0;   // sum of its kernels' prices
  double host_s = 0;  // the host's time to issue them
  double time_s = 0;  // first issue to last end
  double limit_slowdown = 1;  // its compute-bound kernels' power-limit slowdown (1: none measured)
  bool host_bound() const { return host_s > gpu_s; }
};

struct ComputeProfile {
  std::vector<ProfiledKernel> kernels;  // the parts' kernels, part by part
  std::vector<ProfiledPart> parts;
};

// The profile of `t`, priced by `cost`: every ProgramPart (workload.hpp) but an empty recompute.
ComputeProfile profile_compute(const TrainingSpec& t, const CostModel& cost);

}  // namespace commbound::sim
