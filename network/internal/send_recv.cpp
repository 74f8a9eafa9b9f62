#include "network/internal/send_recv.hpp"

#include "network/internal/fluid_flows.hpp"

#include <simgrid/s4u/Actor.hpp>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {

AlgorithmResult run_send_recv(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const int src = params.call.ranks[0];
  const int dst = params.call.ranks[1];
  const double sleep_s = params.hop_s(src, dst);
  sg4::this_actor::sleep_for(params.base_s + sleep_s);
  const std::vector<Edge> edge = {{platform.gpu(src), platform.gpu(dst)}};
  const FluidRun run = run_fluid(platform, {{edge, params.call.size_bytes / params.efficiency(), -1}});
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  result.latency_s = params.base_s + sleep_s + route_latency_s(platform.gpu(src), platform.gpu(dst));
  return result;
}

}  // namespace commbound::network::internal
