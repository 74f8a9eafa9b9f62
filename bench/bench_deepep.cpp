// DeepEP's normal kernels on H800 nodes: the bandwidths DeepEP publishes against the hierarchical
// all-to-all simulated on the same node shape, counted as DeepEP's tests count them.
//
// Published (github.com/deepseek-ai/DeepEP README, normal kernels; docs/reference/all-to-all.md):
// H800 GPUs (~160 GB/s NVLink), one CX7 400 Gb/s NIC each, 8 a node; 4096 tokens a rank, hidden
// 7168, 256 experts, top-8 of at most 4 nodes, FP8 dispatch (7168 bytes and a 4-byte scale per
// 128 values: 7392 bytes a token) and BF16 combine (14336 bytes). Intranode EP 8: dispatch 153,
// combine 158 GB/s "NVL"; internode (since 2025-04-22) EP 16: 43 / 43, EP 32: 58 / 57, EP 64:
// 51 / 50 GB/s "RDMA".
//
// Counted as the tests count (DeepEP tests/test_intranode.py, test_internode.py): NVL = the rows a
// rank receives, its own included, x bytes / time; RDMA = the (token, destination node) pairs of a
// rank's tokens, its own node included, x bytes / time. Both are logical: a rank's own rows and
// own node never leave it. Means over ranks, as the README's are.
//
// Simulated: the tokens drawn as the tests draw them (sim/workload/group_limited_routing.hpp), the
// dispatch an all-to-all with the hierarchical method (RDMA once per destination node on the
// sender's rail, NVLink forward there; CollectiveCall::node_bytes) on hgx-h800 nodes,
// rail-optimized NDR InfiniBand. The combine is the dispatch reversed with BF16 rows: every flow
// turned around, which on full-duplex links of equal rates takes the time of the dispatch of those
// bytes, so it is simulated as that. Not modelled: DeepEP's SM budget (24 SMs), its chunked
// queues, the notify kernel and metadata. Asserts nothing.
//
//   build/bin/bench_deepep          (run from the source tree: reads ./calibration)
#include "bench/rail_cluster.hpp"
#include "network/collective_runner.hpp"
#include "network/platform.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/workload/group_limited_routing.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

using namespace commbound;

namespace {

constexpr double kHidden = 7168;
constexpr double kFp8TokenBytes = kHidden + kHidden / 128 * 4;  // DeepEP tests: fp8_factor = (1 + 4/128) / 2 of bf16
constexpr double kBf16TokenBytes = kHidden * 2;

struct Published {
  int ep;
  double dispatch_GBps, combine_GBps;  // NVL for EP 8, RDMA above (README, normal kernels)
};
constexpr Published kPublished[] = {{8, 153, 158}, {16, 43, 43}, {32, 58, 57}, {64, 51, 50}};

}  // namespace

int main() {
  const sim::Presets presets("calibration");
  auto nccl = presets.nccl("2.30.7");
  auto cluster = bench::rail_cluster(presets, "hgx-h800", 8);
  if (!cluster || !nccl) {
    std::fprintf(stderr, "bench_deepep: presets missing (run from the source tree)\n");
    return 1;
  }
  const network::ClusterSpec& spec = *cluster;
  auto platform = network::Platform::create(spec);
  if (!platform) {
    std::fprintf(stderr, "bench_deepep: %s\n", platform.error().message.c_str());
    return 1;
  }
  network::CollectiveRunner runner(**platform, *nccl);
  const network::CollectiveChoice simple{network::Algorithm::ring, network::Protocol::simple};
  std::printf("DeepEP normal kernels, hgx-h800 (NVLink %.1f GB/s, NIC %.1f GB/s a GPU and direction), 4096 tokens a rank:\n",
              spec.node.nvlink.effective_bw_bytes_per_s() / 1e9, spec.fabric.nic_bw_bytes_per_s() / 1e9);
  std::printf("| EP | nodes | kernel | counted | MB a rank | time (us) | simulated GB/s | DeepEP GB/s | error |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  int failed = 0;
  const auto wall = std::chrono::steady_clock::now();
  (*platform)->run([&] {
    for (const Published& p : kPublished) {
      const auto counts = sim::moe::draw_group_limited({.ranks = p.ep, .ranks_per_node = 8, .seed = 1});
      const bool internode = counts.nodes > 1;
      for (bool dispatch : {true, false}) {
        const double bytes = dispatch ? kFp8TokenBytes : kBf16TokenBytes;
        auto pair = std::make_shared<std::vector<double>>(counts.rank_tokens);
        auto per_node = std::make_shared<std::vector<double>>(counts.node_tokens);
        for (double& b : *pair) b *= bytes;
        for (double& b : *per_node) b *= bytes;
        for (int i = 0; i < p.ep; ++i) (*pair)[static_cast<std::size_t>(i) * p.ep + i] = 0;
        network::CollectiveCall call{network::CollectiveOp::all_to_all, std::vector<int>(p.ep), 0};
        std::iota(call.ranks.begin(), call.ranks.end(), 0);
        call.all_to_all_method = network::AllToAllMethod::hierarchical;
        call.peer_bytes = pair;
        if (internode) call.node_bytes = per_node;
        if (const Status ok = runner.check(call, simple); !ok) {
          std::fprintf(stderr, "bench_deepep: EP %d: %s\n", p.ep, ok.error().message.c_str());
          ++failed;
          continue;
        }
        const network::CollectiveResult r = runner.run(call, simple, network::Fidelity::fluid);
        // DeepEP's count: RDMA (token, node) pairs or received rows, own ones included, mean over ranks.
        const auto& counted = internode ? counts.node_tokens : counts.rank_tokens;
        const double per_rank_bytes = std::accumulate(counted.begin(), counted.end(), 0.0) * bytes / p.ep;
        const double simulated = per_rank_bytes / r.time_s / 1e9;
        const double published = dispatch ? p.dispatch_GBps : p.combine_GBps;
        std::printf("| %d | %d | %s | %s | %.1f | %.0f | %.1f | %.0f | %+.1f%% |\n", p.ep, counts.nodes,
                    dispatch ? "dispatch (FP8)" : "combine (BF16)", internode ? "RDMA" : "NVL", per_rank_bytes / 1e6,
                    r.time_s * 1e6, simulated, published, 100 * (simulated / published - 1));
      }
    }
  });
  std::printf("wall %.2f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count());
  return failed == 0 ? 0 : 1;
}
