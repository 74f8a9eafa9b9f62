// Simulator speed: wall time of one fluid ring AllGather (1 GiB, NCCL's tuner) over 2048 and 16384
// DGX H100 ranks on an IB NDR rail-optimized fabric, of a tree AllReduce at 2048 ranks, and of the
// step fidelity at 256 ranks. Each measurement runs in its own process (one SimGrid platform per
// process); platform construction is timed separately. Prints figures, asserts nothing.
//
//   build/bin/bench_collectives            (make bench)
#include "core/child_process.hpp"
#include "network/collective_runner.hpp"
#include "sim/scenario/presets.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <numeric>

using namespace commbound;
using Clock = std::chrono::steady_clock;

namespace {

struct Case {
  const char* what;
  int nodes;
  network::CollectiveOp op;
  network::CollectiveChoice choice;
  network::Fidelity fidelity;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void run_case(const Case& c) {
  const sim::Presets presets(sim::default_calibration_dir());
  network::ClusterSpec spec;
  spec.node = *presets.node("dgx-h100");
  spec.nodes = c.nodes;
  spec.fabric.topology = network::Topology::rail_optimized;
  spec.fabric.link = *presets.link("ib-ndr");
  spec.fabric.switch_latency_s = spec.fabric.link.latency_s;
  const network::NcclConstants nccl = *presets.nccl("2.30.7");
  const auto t_build = Clock::now();
  auto platform = network::Platform::create(spec);
  if (!platform) {
    std::printf("%s: %s\n", c.what, platform.error().message.c_str());
    return;
  }
  const double build_s = seconds_since(t_build);
  network::CollectiveRunner runner(**platform, nccl);
  network::CollectiveCall call{c.op, std::vector<int>(static_cast<std::size_t>(c.nodes) * 8), 1073741824.0};
  std::iota(call.ranks.begin(), call.ranks.end(), 0);
  double run_s = 0;
  network::CollectiveResult r;
  (*platform)->run([&] {
    const auto t0 = Clock::now();
    r = runner.run(call, c.choice, c.fidelity);
    run_s = seconds_since(t0);
  });
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("%-44s %6d ranks  build %7.3f s  collective %8.4f s wall  (%ld flows, simulated %.2f ms, peak RSS %ld MiB)\n",
              c.what, c.nodes * 8, build_s, run_s, r.flows, r.time_s * 1e3, usage.ru_maxrss / 1024);
}

}  // namespace

int main() {
  using network::Algorithm;
  using network::CollectiveOp;
  using network::Fidelity;
  using network::Protocol;
  const Case cases[] = {
      {"fluid ring AllGather 1 GiB (Simple)", 256, CollectiveOp::all_gather, {Algorithm::ring, Protocol::simple}, Fidelity::fluid},
      {"fluid ring AllGather 1 GiB (Simple)", 2048, CollectiveOp::all_gather, {Algorithm::ring, Protocol::simple}, Fidelity::fluid},
      {"fluid ring AllGather 1 GiB (Simple)", 16384, CollectiveOp::all_gather, {Algorithm::ring, Protocol::simple}, Fidelity::fluid},
      {"fluid tree AllReduce 1 GiB (LL128)", 2048, CollectiveOp::all_reduce, {Algorithm::tree, Protocol::ll128}, Fidelity::fluid},
      {"step ring AllGather 1 GiB (Simple)", 256, CollectiveOp::all_gather, {Algorithm::ring, Protocol::simple}, Fidelity::step},
  };
  for (const Case& c : cases) {
    const auto done = run_in_child([&]() -> Expected<std::string> {
      run_case(Case{c.what, c.nodes / 8, c.op, c.choice, c.fidelity});
      return std::string();
    });
    if (!done) std::printf("%s on %d GPUs: %s\n", c.what, c.nodes, done.error().message.c_str());
  }
  return 0;
}
