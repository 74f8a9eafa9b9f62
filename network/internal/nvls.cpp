#include "network/internal/nvls.hpp"

#include "network/internal/fluid_flows.hpp"

#include <simgrid/s4u/Actor.hpp>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {

AlgorithmResult run_nvls(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const double n = static_cast<double>(params.call.ranks.size());
  const double wire = params.call.size_bytes * (n + 1) / n / params.efficiency();
  const double cap = params.nccl.nvls_efficiency * platform.spec().node.nvlink.effective_bw_bytes_per_s();
  std::vector<Edge> edges;  // per GPU: up to the switch, then down
  for (int r : params.call.ranks) {
    sg4::Host* sw = platform.nvswitch(platform.node_of(r));
    edges.emplace_back(platform.gpu(r), sw);
    edges.emplace_back(sw, platform.gpu(r));
  }
  std::vector<GroupFlow> flows;  // one flow up to the switch and one down, per GPU
  for (std::size_t e = 0; e < edges.size(); ++e) flows.push_back({std::span(edges).subspan(e, 1), wire, cap});
  const double hop_s = params.nccl.hop(Algorithm::nvls, HopClass::nvlink, params.choice.protocol);
  sg4::this_actor::sleep_for(params.base_s + hop_s);
  const FluidRun run = run_fluid(platform, flows);
  const Edge& up = flows[0].edges[0];
  const Edge& down = flows[1].edges[0];
  AlgorithmResult result;
  result.bandwidth_s = run.bandwidth_s;
  result.flows = run.flows;
  result.latency_s = params.base_s + hop_s + route_latency_s(up.first, up.second) + route_latency_s(down.first, down.second);
  return result;
}

}  // namespace commbound::network::internal
