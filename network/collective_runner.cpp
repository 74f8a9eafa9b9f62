#include "network/collective_runner.hpp"

#include "core/check.hpp"
#include "core/size_label.hpp"
#include "core/units.hpp"
#include "network/internal/algorithm.hpp"
#include "network/internal/all_to_all.hpp"
#include "network/internal/link_occupancy.hpp"
#include "network/internal/route_cache.hpp"
#include "network/internal/send_recv.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace commbound::network {
namespace {

// NCCL's multi-node Ring/Simple AllReduce latency multiplier, applied to base and hop latencies; 1
// for every other call.
double latency_factor(const NcclConstants& nccl, const NodeType& node, const CallShape& shape,
                      const CollectiveChoice& choice) {
  if (choice.algorithm != Algorithm::ring || shape.op != CollectiveOp::all_reduce || shape.nodes <= 1 ||
      choice.protocol != Protocol::simple) {
    return 1;
  }
  return node.sm_arch >= 80 ? nccl.ring_simple_allreduce_latency_factor
                            : nccl.ring_simple_allreduce_latency_factor_pre_sm80;
}

internal::AlgorithmResult run_algorithm(const internal::AlgorithmParams& params) {
  if (params.call.op == CollectiveOp::send_recv) return internal::run_send_recv(params);
  if (params.call.op == CollectiveOp::all_to_all) return internal::run_all_to_all(params);
  return internal::algorithm_spec(params.choice.algorithm).run(params);
}

// CollectiveResult::terms: the algorithm's latency as it itemized it (or whole), the bytes (nccl-tests'
// bus bytes, at the bus bandwidth they moved at), then what the schedule added or overlapped.
std::vector<CostTerm> itemized(const internal::AlgorithmResult& part, const CollectiveResult& result,
                               const CallShape& shape) {
  std::vector<CostTerm> terms = part.terms;
  if (terms.empty()) {
    terms.push_back({fmt::format("latency ({}'s, not itemized)", algorithm_label(shape.op, result.choice.algorithm)), 0,
                     0, result.latency_s});
  }
  const double bus_bytes = shape.size_bytes * bus_bw_factor(shape.op, shape.ranks);
  const std::string rate =
      result.bandwidth_s > 0 ? fmt::format(" at {:.1f} GB/s", bus_bytes / result.bandwidth_s / kBytesPerGB) : "";
  terms.push_back({fmt::format("bytes: {} of bus traffic{}{}", size_label(bus_bytes), rate, part.rate_note), 0, 0,
                   result.bandwidth_s});
  const double rest_s = result.time_s - result.latency_s - result.bandwidth_s;
  if (std::fabs(rest_s) > 1e-6 * result.time_s) {
    const std::string what = rest_s < 0                     ? "overlap of latency and bytes (pipelined)"
                             : !part.schedule_note.empty() ? part.schedule_note
                                                           : "the rest (route latency, waits)";
    terms.push_back({what, 0, 0, rest_s});
  }
  return terms;
}

}  // namespace

CollectiveRunner::CollectiveRunner(Platform& platform, const NcclConstants& nccl, bool merge_channels)
    : platform_(platform),
      nccl_(nccl),
      tuner_(platform.spec().node, platform.spec().fabric, nccl),
      merge_channels_(merge_channels),
      routes_(std::make_unique<internal::RouteCache>()) {}

CollectiveRunner::~CollectiveRunner() = default;

CallShape CollectiveRunner::shape_of(const CollectiveCall& call) const {
  std::vector<int> nodes;
  for (int r : call.ranks) nodes.push_back(platform_.node_of(r));
  std::sort(nodes.begin(), nodes.end());
  const auto n_nodes = std::unique(nodes.begin(), nodes.end()) - nodes.begin();
  return {call.op, static_cast<int>(call.ranks.size()), static_cast<int>(n_nodes), call.size_bytes,
          call.all_to_all_method};
}

Status CollectiveRunner::check(const CollectiveCall& call, const CollectiveChoice& choice) const {
  if (call.ranks.size() < 2) return Error{"a collective needs at least 2 ranks"};
  if (call.op == CollectiveOp::send_recv && call.ranks.size() != 2) return Error{"SendRecv takes exactly 2 ranks"};
  if (call.comm_ranks != 0) {
    if (call.op != CollectiveOp::send_recv) return Error{"a communicator size is for SendRecv only"};
    const int gpus = platform_.spec().node.gpus;
    if (call.comm_gpus_per_node < 1 || call.comm_gpus_per_node > gpus) {
      return Error{"communicator GPUs per node " + std::to_string(call.comm_gpus_per_node) + ": outside 1.." +
                   std::to_string(gpus)};
    }
    if (call.comm_ranks < 2 || call.comm_ranks > platform_.ranks()) {
      return Error{"communicator of " + std::to_string(call.comm_ranks) + " ranks: outside 2.." +
                   std::to_string(platform_.ranks())};
    }
  }
  std::vector<int> sorted = call.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return Error{"a rank appears twice"};
  if (sorted.front() < 0 || sorted.back() >= platform_.ranks()) {
    return Error{"rank out of range (the platform has " + std::to_string(platform_.ranks()) + " GPUs)"};
  }
  if (!(call.size_bytes >= 0)) return Error{"size must be >= 0 bytes"};
  if (call.peer_bytes) {
    if (call.op != CollectiveOp::all_to_all) return Error{"peer_bytes is for all-to-all only, not " + std::string(to_string(call.op))};
    const std::size_t n = call.ranks.size();
    if (call.peer_bytes->size() != n * n) {
      return Error{"peer_bytes holds " + std::to_string(call.peer_bytes->size()) + " values; " + std::to_string(n) +
                   " ranks need " + std::to_string(n * n) + " (n x n, row-major: bytes ranks[i] sends ranks[j])"};
    }
    for (std::size_t k = 0; k < call.peer_bytes->size(); ++k) {
      const double b = (*call.peer_bytes)[k];
      if (!std::isfinite(b) || b < 0) {
        return Error{"peer_bytes[" + std::to_string(k / n) + "][" + std::to_string(k % n) + "] = " + std::to_string(b) +
                     ": bytes must be finite and >= 0"};
      }
    }
  }
  if (call.node_bytes) {
    if (call.op != CollectiveOp::all_to_all || call.all_to_all_method != AllToAllMethod::hierarchical) {
      return Error{"node_bytes is for the hierarchical all-to-all only"};
    }
    const auto m = static_cast<std::size_t>(shape_of(call).nodes);
    const std::size_t n = call.ranks.size();
    if (call.node_bytes->size() != n * m) {
      return Error{"node_bytes holds " + std::to_string(call.node_bytes->size()) + " values; " + std::to_string(n) +
                   " ranks on " + std::to_string(m) + " nodes need " + std::to_string(n * m) +
                   " (n x nodes, row-major: bytes ranks[i] sends node k over RDMA)"};
    }
    for (double b : *call.node_bytes) {
      if (!std::isfinite(b) || b < 0) return Error{"node_bytes: bytes must be finite and >= 0, not " + std::to_string(b)};
    }
  }
  if (std::string why = tuner_.unsupported(shape_of(call), choice); !why.empty()) {
    return Error{std::string(to_string(choice.algorithm)) + "/" + to_string(choice.protocol) + " cannot run " +
                 to_string(call.op) + ": " + why};
  }
  return Ok{};
}

CollectiveResult CollectiveRunner::run(const CollectiveCall& call, const CollectiveChoice& choice,
                                       Fidelity fidelity) const {
  const double start_s = sg4::Engine::get_clock();
  const CallShape shape = shape_of(call);
  // With a fit the time is built from the fabric's measured mechanisms, not the tuner's latencies.
  const FabricFit* fit = platform_.spec().fabric.fit ? &*platform_.spec().fabric.fit : nullptr;
  // Step-exact messages are flows that run_fluid() does not track: every collective is simulated
  // from then on (internal/link_occupancy.hpp).
  if (fidelity == Fidelity::step) platform_.occupancy().disable();
  const double factor = fit != nullptr ? 1.0 : latency_factor(nccl_, platform_.spec().node, shape, choice);
  const internal::AlgorithmResult part = run_algorithm({
      .platform = platform_,
      .nccl = nccl_,
      .tuner = tuner_,
      .routes = *routes_,
      .call = call,
      .shape = shape,
      .choice = choice,
      .fidelity = fidelity,
      .merge_channels = merge_channels_,
      .latency_factor = factor,
      .base_s = fit != nullptr ? fit->launch_s : nccl_.base(choice.algorithm, choice.protocol) * factor,
      .net_overhead_s = fit != nullptr ? 0.0 : tuner_.net_overhead_s(shape, choice.protocol),
      .fit = fit,
      .itemize = itemize_,
  });

  CollectiveResult result;
  result.choice = choice;
  result.fidelity = fidelity;
  result.flows = part.flows;
  result.latency_s = part.latency_s;
  result.loads = part.loads;
  if (part.stepped) {
    result.time_s = sg4::Engine::get_clock() - start_s;
    result.bandwidth_s = std::max(0.0, result.time_s - part.latency_s);
    if (itemize_) result.terms = itemized(part, result, shape);
    return result;
  }
  // Fluid: the flows ran for bandwidth_s (+ one route latency); finish the latency terms in
  // simulated time.
  const double total_s = part.schedule_s.value_or(part.bandwidth_s + part.latency_s);
  const double elapsed_s = sg4::Engine::get_clock() - start_s;
  if (total_s > elapsed_s) sg4::this_actor::sleep_for(total_s - elapsed_s);
  result.time_s = std::max(total_s, elapsed_s);
  result.bandwidth_s = part.bandwidth_s;
  if (itemize_) result.terms = itemized(part, result, shape);
  return result;
}

}  // namespace commbound::network
