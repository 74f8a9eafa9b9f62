// CostModel: seconds for a compute op on one GPU.
//
// DERIVED, not measured: until the kernels issue ships a measured table (calibration/<gpu>.toml),
// every op costs its roofline bound max(FLOPs / dense bf16 peak, bytes / HBM bandwidth) from the
// datasheet (calibration/gpus.toml). Real kernels are slower (GEMMs reach 60-80% of peak), so
// compute times are lower bounds and MFU upper bounds; every report says `derived`.
#pragma once

#include "sim/training.hpp"
#include "sim/workload.hpp"

#include <algorithm>

namespace commbound::sim {

class CostModel {
public:
  explicit CostModel(const GpuSpec& gpu) : gpu_(gpu) {}
  double seconds(const Op& op) const {
    return std::max(op.flops / gpu_.peak_flops_per_s, op.bytes / gpu_.hbm_bytes_per_s);
  }
  static constexpr const char* kSource = "derived: datasheet roofline (calibration/gpus.toml), not measured";

private:
  GpuSpec gpu_;
};

}  // namespace commbound::sim
