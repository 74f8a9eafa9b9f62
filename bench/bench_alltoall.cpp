// AllToAll: simulated nccl-tests alltoall_perf on DGX H100 nodes (8 GPUs, 8 x 400 Gb/s NDR NICs,
// rail-optimized, adaptive routing) against the published reference, and the simulator's speed.
//
// No public alltoall_perf log of DGX H100 nodes on InfiniBand was found (calibration/reference/
// all-to-all/README.md says what was searched and what was kept). The reference is the published
// figure kept there: NCCL's maintainers' answer that across nodes an alltoall reaches the rate of one
// NIC per GPU (CX-7 at NDR: 48-49 GB/s), its busbw above that by the share that stays on NVLink. So
// for every (nodes, size) this prints the simulated busbw, the one-NIC reference scaled the same way,
// (n-1)/n x k/(k-1) x 48.5 GB/s on k > 1 nodes, and the wall time of the simulation; for one node
// the NVLink bound 370.8 GB/s. Asserts nothing.
//
//   build/bench/bench_alltoall [--nodes 1,2,4,8,32]   (run from the source tree: reads ./calibration)
#include "bench/rail_cluster.hpp"
#include "network/nccl_tests.hpp"
#include "network/platform.hpp"
#include "sim/scenario/presets.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace commbound;

namespace {

constexpr double kMiB = 1 << 20;
// One CX-7 at NDR: 48-49 GB/s achieved (calibration/reference/all-to-all/README.md); the midpoint.
constexpr double kOneNicBytesPerS = 48.5e9;

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> node_counts = {1, 2, 4, 8, 32};
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--nodes") {
      node_counts.clear();
      std::stringstream list(argv[i + 1]);
      for (std::string item; std::getline(list, item, ',');) node_counts.push_back(std::stoi(item));
    }
  }
  const sim::Presets presets("calibration");
  auto nccl = presets.nccl("2.30.7");
  int most_nodes = 1;
  for (int k : node_counts) most_nodes = std::max(most_nodes, k);
  auto cluster = bench::rail_cluster(presets, "dgx-h100", most_nodes);
  if (!cluster || !nccl) {
    std::fprintf(stderr, "bench_alltoall: presets missing (run from the source tree)\n");
    return 1;
  }
  const network::ClusterSpec& spec = *cluster;
  auto platform = network::Platform::create(spec);
  if (!platform) {
    std::fprintf(stderr, "bench_alltoall: %s\n", platform.error().message.c_str());
    return 1;
  }
  std::vector<network::SweepPoint> points;
  for (int k : node_counts) {
    for (double mib : {1.0, 16.0, 256.0, 1024.0, 4096.0}) {
      points.push_back({network::CollectiveOp::all_to_all, k, mib * kMiB, std::nullopt, std::nullopt, 0});
    }
  }
  const auto wall_start = std::chrono::steady_clock::now();
  std::vector<double> wall_s;
  auto last = wall_start;
  auto rows = network::run_points(**platform, *nccl, points, network::Fidelity::fluid, [&](int, int) {
    const auto now = std::chrono::steady_clock::now();
    wall_s.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
  });
  if (!rows) {
    std::fprintf(stderr, "bench_alltoall: %s\n", rows.error().message.c_str());
    return 1;
  }
  std::printf("| nodes | ranks | size | proto | time (us) | sim busbw (GB/s) | reference (GB/s) | sim/ref - 1 | flows | wall (s) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const network::SweepRow& r = (*rows)[i];
    const double n = r.ranks;
    const double k = r.nodes;
    const double reference = k > 1 ? kOneNicBytesPerS * (n - 1) / n * k / (k - 1)
                                   : spec.node.nvlink.effective_bw_bytes_per_s();
    std::printf("| %d | %d | %g MiB | %s | %.1f | %.1f | %.1f | %+.1f%% | %ld | %.3f |\n", r.nodes, r.ranks,
                r.size_bytes / kMiB, network::to_string(r.result.choice.protocol), r.result.time_s * 1e6,
                r.bus_bw_bytes_per_s / 1e9, reference / 1e9, 100 * (r.bus_bw_bytes_per_s / reference - 1),
                r.result.flows, i < wall_s.size() ? wall_s[i] : 0.0);
  }
  return 0;
}
