#include "network/internal/pat.hpp"

#include "network/internal/algorithm.hpp"
#include "network/internal/fluid_flows.hpp"

#include <simgrid/s4u/Actor.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace commbound::network::internal {

AlgorithmResult run_pat(const AlgorithmParams& params) {
  Platform& platform = params.platform;
  const std::vector<int>& ranks = params.call.ranks;
  const int n = static_cast<int>(ranks.size());
  const double block_bytes = params.call.size_bytes / n;
  std::vector<int> blocks;  // per step, in AllGather order
  for (int distance = 1; distance < n; distance *= 2) blocks.push_back(std::min(distance, n - distance));
  if (params.call.op == CollectiveOp::reduce_scatter) std::reverse(blocks.begin(), blocks.end());

  const FabricFit* fit = params.fit;
  AlgorithmResult result;
  const double start_s = params.base_s + n * params.nccl.pat_rank_latency_s;
  sg4::this_actor::sleep_for(start_s);
  result.latency_s = start_s;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const int distance = params.call.op == CollectiveOp::reduce_scatter ? 1 << (blocks.size() - 1 - k) : 1 << k;
    const double step_bytes = blocks[k] * block_bytes;
    const double hop_s = fit != nullptr ? fit->net_hop_s + params.net_messages_s(1, step_bytes)
                                        : params.nccl.hop(Algorithm::pat, HopClass::net, params.choice.protocol) / 3.5;
    // Rank i sends to rank i - distance: the step's edges and their routes, kept for later calls.
    RouteCache::Routes& step = params.routes.routes({Algorithm::pat, params.merge_channels, ranks, distance}, [&] {
      RouteCache::Groups groups;
      std::vector<Edge> edges;
      for (int i = 0; i < n; ++i) edges.emplace_back(platform.gpu(ranks[i]), platform.gpu(ranks[(i - distance + n) % n]));
      groups.members.push_back(ranks);
      groups.channels.push_back(1);
      groups.edges.push_back(std::move(edges));
      return groups;
    });
    sg4::this_actor::sleep_for(hop_s);
    const double wire_bytes = step_bytes / params.efficiency() / params.nccl.pat_bw_factor;
    // The step ends when its slowest edge has moved its bytes. Alone, that edge runs at the rate all
    // the step's edges reach together before a link they share fills (coupled_group_rates); an edge
    // that could go faster would only wait at the step's end. So every edge moves at that rate, as
    // a ring's lanes do: the step ends at the same instant, and a step that finds its links free
    // is priced at those rates (fluid_flows.hpp) instead of simulating its flows.
    const double cap = step.rates({-1.0}).front();
    const FluidRun run = run_fluid(platform, {{step.edges().front(), wire_bytes, cap}}, &step.segment_routes());
    result.latency_s += hop_s;
    result.bandwidth_s += run.bandwidth_s;
    result.flows += run.flows;
  }
  return result;
}

// NCCL's tuner on PAT (tuning.cc, ncclPatEnable).
namespace {

std::string pat_unsupported(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  if (!tuner.nccl().rules.pat) return "NCCL " + tuner.nccl().release + " has no PAT (it came in 2.23)";
  if (shape.op != CollectiveOp::all_gather && shape.op != CollectiveOp::reduce_scatter) {
    return "PAT runs AllGather and ReduceScatter only";
  }
  if (shape.nodes < 2 || shape.ranks != shape.nodes) return "NCCL runs PAT with one GPU per node only";
  if (p != Protocol::simple) return "PAT runs the Simple protocol only";
  return "";
}

// base + log2(nNodes) interLat / 3.5 + 2.8 us x nRanks.
double pat_latency_s(const NcclTuner& tuner, const CallShape& shape, Protocol p) {
  const NcclConstants& nccl = tuner.nccl();
  return nccl.base(Algorithm::pat, p) + std::log2(shape.nodes) * nccl.hop(Algorithm::pat, HopClass::net, p) / 3.5 +
         shape.ranks * nccl.pat_rank_latency_s;
}

// busBw x 0.75, not converted to algBw for AllGather / ReduceScatter.
std::optional<double> pat_alg_bw(const NcclTuner& tuner, const CallShape&, Protocol, const TunerBandwidth& bw) {
  return bw.bus_bytes_per_s * tuner.nccl().pat_bw_factor;
}

}  // namespace

extern const AlgorithmSpec kPatAlgorithm{
    Algorithm::pat, "pat", "pat",
    pat_unsupported, pat_latency_s, pat_alg_bw,
    run_pat};

}  // namespace commbound::network::internal
