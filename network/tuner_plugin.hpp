// An NCCL tuner plugin's choices, as data: a net plugin may ship a tuner that NCCL asks first
// (NCCL_TUNER_PLUGIN; aws-ofi-nccl's is loaded from the net plugin's library). aws-ofi-nccl's
// region tuner (src/tuner/nccl_ofi_regions.cpp) draws, per platform, collective and GPUs per node,
// polygons in the plane (log2 bytes, log2 ranks), each naming an algorithm and protocol; the first
// polygon holding the call (its edges included) decides, and where none does, or on two nodes or
// fewer, NCCL's own tuner does. Read from calibration/nccl/plugins/<name>.toml.
#pragma once

#include "network/collective.hpp"
#include "network/nccl_tuner.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace commbound::network {

struct TunerRegion {
  CollectiveOp op = CollectiveOp::all_reduce;
  int gpus_per_node = 8;       // the communicator's GPUs on each node it applies to
  CollectiveChoice choice;
  std::vector<std::pair<double, double>> vertices;  // (bytes, ranks), in order around the polygon
};

struct TunerPlugin {
  std::string name;    // the file's name
  std::string source;  // where its regions come from
  int min_nodes = 3;   // below, the plugin leaves the choice to NCCL
  std::vector<TunerRegion> regions;

  // The first region holding the call whose choice `runs` (the plugin passes over NVLSTree without
  // NVLS support), if the call has the region's GPUs per node.
  std::optional<CollectiveChoice> choose(const CallShape& shape,
                                         const std::function<bool(const CollectiveChoice&)>& runs) const;
};

// Whether (bytes, ranks) lies inside `region` or on its edge, in log2 coordinates.
bool region_holds(const TunerRegion& region, double bytes, double ranks);

}  // namespace commbound::network
