#include "network/nccl_tests.hpp"

#include <algorithm>
#include <limits>

namespace commbound::network {

Expected<CollectiveChoice> resolve_choice(const CollectiveRunner& runner, const CollectiveCall& call,
                                          std::optional<Algorithm> algorithm, std::optional<Protocol> protocol) {
  const CallShape shape = runner.shape_of(call);
  if (!algorithm && !protocol) {
    return runner.tuner().choose(shape);
  }
  std::optional<CollectiveChoice> best;
  double best_s = std::numeric_limits<double>::infinity();
  for (Algorithm a : kAllAlgorithms) {
    if (algorithm && a != *algorithm) continue;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      if (protocol && p != *protocol) continue;
      const auto t = runner.tuner().predict_s(shape, {a, p});
      if (t && *t < best_s) {
        best_s = *t;
        best = CollectiveChoice{a, p};
      }
    }
  }
  if (!best) {
    const CollectiveChoice wanted{algorithm.value_or(Algorithm::ring), protocol.value_or(Protocol::simple)};
    return Error{std::string(to_string(call.op)) + " on " + std::to_string(shape.nodes) + " node(s): " +
                 runner.tuner().unsupported(shape, wanted)};
  }
  return *best;
}

std::vector<int> sweep_ranks(const Platform& platform, CollectiveOp op, int nodes, int gpus_per_node) {
  const int gpus = platform.spec().node.gpus;
  const int per_node = gpus_per_node > 0 ? gpus_per_node : gpus;
  if (op == CollectiveOp::send_recv) return {0, nodes == 1 ? 1 : (nodes - 1) * gpus};
  std::vector<int> ranks;
  for (int n = 0; n < nodes; ++n) {
    for (int g = 0; g < per_node; ++g) ranks.push_back(n * gpus + g);
  }
  return ranks;
}

Expected<std::vector<SweepRow>> run_points(Platform& platform, const NcclConstants& nccl,
                                           const std::vector<SweepPoint>& points, Fidelity fidelity,
                                           const std::function<void(int, int)>& progress) {
  CollectiveRunner runner(platform, nccl);
  runner.set_itemize(true);  // a sweep's rows are few and --explain reads their terms
  const int gpus = platform.spec().node.gpus;
  struct Planned {
    CollectiveCall call;
    CollectiveChoice choice;
    int nodes;
  };
  std::vector<Planned> planned;
  for (const SweepPoint& pt : points) {
    if (pt.nodes < 1 || pt.nodes > platform.spec().nodes) {
      return Error{"nodes " + std::to_string(pt.nodes) + ": outside 1.." + std::to_string(platform.spec().nodes)};
    }
    if (pt.gpus_per_node < 0 || pt.gpus_per_node > gpus) {
      return Error{"GPUs per node " + std::to_string(pt.gpus_per_node) + ": outside 1.." + std::to_string(gpus) +
                   " (the node type's GPUs)"};
    }
    CollectiveCall call;
    call.op = pt.op;
    call.size_bytes = pt.size_bytes;
    call.ranks = pt.ranks.empty() ? sweep_ranks(platform, pt.op, pt.nodes, pt.gpus_per_node) : pt.ranks;
    call.all_to_all_method = pt.all_to_all_method;
    const int per_node = pt.gpus_per_node > 0 ? pt.gpus_per_node : gpus;
    if (pt.comm_ranks > 0) {
      call.comm_ranks = pt.comm_ranks;
      call.comm_gpus_per_node = pt.comm_gpus_per_node;
    } else if (pt.op == CollectiveOp::send_recv && pt.ranks.empty() && pt.nodes * per_node > 2) {
      // nccl-tests' sendrecv: every rank of the run sends to the next, all in one communicator.
      call.comm_ranks = pt.nodes * per_node;
      call.comm_gpus_per_node = per_node;
    }
    auto choice = resolve_choice(runner, call, pt.algorithm, pt.protocol);
    if (!choice) return choice.error();
    if (Status ok = runner.check(call, *choice); !ok) return ok.error();
    planned.push_back({std::move(call), *choice, pt.nodes});
  }
  std::vector<SweepRow> rows;
  platform.run([&] {
    for (const Planned& pt : planned) {
      CollectiveResult r = runner.run(pt.call, pt.choice, fidelity);
      const int ranks = static_cast<int>(pt.call.ranks.size());
      const double alg_bw = r.time_s > 0 ? pt.call.size_bytes / r.time_s : 0;
      rows.push_back({pt.call.op, pt.nodes, ranks, pt.call.size_bytes, r, alg_bw,
                      alg_bw * bus_bw_factor(pt.call.op, ranks)});
      if (progress) progress(static_cast<int>(rows.size()), static_cast<int>(planned.size()));
    }
  });
  return rows;
}

Expected<std::vector<SweepRow>> run_sweep(Platform& platform, const NcclConstants& nccl, const CollectiveSweep& sweep,
                                          const std::function<void(int, int)>& progress) {
  std::vector<SweepPoint> points;
  for (int nodes : sweep.nodes) {
    for (double size : sweep.sizes_bytes) {
      points.push_back(
          {sweep.op, nodes, size, sweep.algorithm, sweep.protocol, sweep.gpus_per_node, sweep.all_to_all_method});
    }
  }
  return run_points(platform, nccl, points, sweep.fidelity, progress);
}

}  // namespace commbound::network
