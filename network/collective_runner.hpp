// CollectiveRunner: runs one NCCL collective on the emulated cluster, inside SimGrid.
//
// The algorithms are NCCL's: Ring (AllGather, ReduceScatter, AllReduce), Tree AllReduce (a chain
// inside each node, NCCL's double binary tree across nodes), NVLS AllReduce inside an NVSwitch node,
// SendRecv, and AllToAll (a grouped send/recv to every peer, or DeepEP's hierarchical forwarding:
// internal/all_to_all.hpp). NCCL runs several channels; on DGX nodes channel c enters and leaves every node
// through the c-th rail of the call's GPUs (rail c % nics with whole nodes; PXN relays over NVLink
// to the rail's GPU, a GPU of the call). Channels that follow the same
// path are merged into one flow with their summed rate (exact under max-min: they would receive
// equal shares on every link they cross; see tests/network/collective_runner_test.cpp).
//
// Two fidelities:
//  - step: every ring step / every tree chunk is a SimGrid communication that starts when its data
//    has arrived (the real dependency on the previous step); per-hop protocol latency (NCCL's hwLat)
//    is paid before each send, physical switch latency by SimGrid on each route.
//  - fluid: each channel group's edges carry their whole payload at one rate, the group's max-min
//    fair share computed over the links of all its edges (a ring or a pipelined tree advances at
//    its slowest edge's pace); they run in SimGrid as a few segment flows, each over the routes of
//    several edges, so other traffic shares the links. The time is the schedule's longest path:
//    bandwidth time plus the latency chain (plus, for the tree, the pipeline fill).
// Both add NCCL's base latency once per call.
//
// Each algorithm, with its latency formula and nccl-tests' bus-bandwidth convention, lives in
// internal/: ring.hpp, tree.hpp, nvls.hpp, send_recv.hpp, all_to_all.hpp; the fluid machinery (coupled rates,
// segment flows) in internal/fluid_flows.hpp. run() computes what they share and dispatches.
#pragma once

#include "network/collective.hpp"
#include "core/expected.hpp"
#include "network/nccl_constants.hpp"
#include "network/nccl_tuner.hpp"
#include "network/platform.hpp"

#include <memory>

namespace commbound::network {

namespace internal {
class RouteCache;
}

class CollectiveRunner {
public:
  // `merge_channels` = false simulates every NCCL channel as its own flow, and every pair of an
  // NCCL all-to-all as its own flow over its whole PXN route (slower; for tests).
  CollectiveRunner(Platform& platform, const NcclConstants& nccl, bool merge_channels = true);
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // NCCL's tuner as it would run on this platform.
  const NcclTuner& tuner() const { return tuner_; }
  // Whether run() itemizes each result's time into CollectiveResult::terms (`--explain`); off by
  // default, as a training run prices thousands of calls and reads none of them.
  void set_itemize(bool itemize) { itemize_ = itemize; }
  CallShape shape_of(const CollectiveCall& call) const;

  // Checks that `choice` can run `call` (ranks valid and distinct, algorithm supported; an
  // all-to-all's peer_bytes n x n, finite and >= 0, and set on all-to-alls only).
  Status check(const CollectiveCall& call, const CollectiveChoice& choice) const;

  // Runs the call; must be called from a SimGrid actor (e.g. inside Platform::run). Simulated time
  // advances by the collective's duration. `call` and `choice` must pass check().
  CollectiveResult run(const CollectiveCall& call, const CollectiveChoice& choice, Fidelity fidelity) const;

private:
  Platform& platform_;
  NcclConstants nccl_;
  NcclTuner tuner_;
  bool merge_channels_;
  bool itemize_ = false;
  // Routes and coupled rates of the groups earlier calls ran over (internal/route_cache.hpp): a
  // memo, so run() stays const.
  std::unique_ptr<internal::RouteCache> routes_;
};

}  // namespace commbound::network
