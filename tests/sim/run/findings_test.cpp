// The study's findings (arXiv 2411.13055, numbered as in docs/reference/study.md), asserted as the
// direction each metric must move, on the paper scenarios as shipped, through the same library call
// as `commbound run`. A golden file only says the numbers did not change; these say the emulator
// still shows what the study measured. Findings 3 (small TP raises throughput at scale) and 8 (CP
// worse than TP at 4k) are NOT reproduced today: their tests are DISABLED_ with the numbers and
// what stands in the way, so gtest reports them on every run; they are enabled when the model
// produces them for a physical reason, never by tuning a factor.
#include "sim/scenario/presets.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/sweep/sweep_runner.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace commbound::sim {
namespace {

// Every point of a paper scenario, by its row name.
std::map<std::string, Metrics> run_paper(const std::string& name, const std::vector<std::string>& overrides = {}) {
  auto file = ScenarioFile::load("scenarios/paper/" + name + ".toml", overrides, Presets(default_calibration_dir()));
  EXPECT_TRUE(file) << file.error().message;
  if (!file) return {};
  SweepOptions options;
  options.jobs = 2;
  auto rows = run_sweep(*file, options);
  EXPECT_TRUE(rows) << rows.error().message;
  std::map<std::string, Metrics> out;
  if (rows) {
    for (const auto& r : *rows) out[r.name] = r.metrics;
  }
  return out;
}

// Finding 1: FSDP weak scaling (2 sequences per GPU) becomes communication-bound: from 8 to 2048
// GPUs the per-GPU compute is fixed, so per-GPU throughput, MFU and tokens per joule fall while
// exposed communication grows; power per GPU stays nearly flat (within 5%).
TEST(Findings, FsdpWeakScalingLosesPerGpuThroughputAsExposedCommunicationGrows) {
  auto m = run_paper("weak_scaling_7b");
  const Metrics& small = m.at("cluster.nodes=1");
  const Metrics& large = m.at("cluster.nodes=256");
  EXPECT_LT(large.tokens_per_s_per_gpu, small.tokens_per_s_per_gpu);
  EXPECT_LT(large.mfu, small.mfu);
  EXPECT_LT(large.tokens_per_joule, small.tokens_per_joule);
  EXPECT_GT(large.exposed_comm_fraction, 2 * small.exposed_comm_fraction);
  // A GPU that waits on exposed communication idles: its power cannot rise with scale.
  EXPECT_LE(large.power_w_per_gpu, small.power_w_per_gpu * 1.01);
  // Exposed communication grows with every doubling from 8 nodes on (the ring's steps and the
  // fabric's levels grow with the node count).
  double previous = 0;
  for (int nodes : {8, 16, 32, 64, 128, 256}) {
    const double exposed = m.at("cluster.nodes=" + std::to_string(nodes)).exposed_comm_s;
    EXPECT_GT(exposed, previous) << nodes << " nodes";
    previous = exposed;
  }
}

// Finding 3, second half: tensor parallelism that crosses nodes (16 on 8-GPU nodes) runs its
// per-layer collectives over InfiniBand and is slower than tp 8, which stays inside a node.
TEST(Findings, TensorParallelismAcrossNodesIsSlowerThanInsideANode) {
  auto m = run_paper("model_parallel_7b_256gpu");
  EXPECT_LT(m.at("parallel.tp=16 parallel.pp=1").tokens_per_s_per_gpu, m.at("parallel.tp=8 parallel.pp=1").tokens_per_s_per_gpu);
}

// Finding 3, first half: NOT REPRODUCED. The study measured that tp 2-4 raises per-GPU throughput
// at 256 GPUs (the FSDP groups shrink). commbound (2026-11-26, PyTorch eager) gives tp 1: 9683,
// tp 2: 8090, tp 4: 6085 tokens/s/GPU. The tp 2 layer's compute agrees with real eager timings
// (batch 2: -2.8% forward, +2.1% forward+backward, docs/compute_accuracy.md) and costs 14% more per
// GPU than tp 1 (RMSNorm and residuals replicated on both ranks, twice the host's ops), while FSDP
// at tp 1 exposes only 1.3% of the iteration: its 256-rank rings run at 149 GB/s of busbw, a fit
// to 1-4-node logs carried to 32 nodes with no measurement there. Shrinking an FSDP cost that is
// already hidden cannot pay for tensor parallelism's.
TEST(Findings, DISABLED_SmallTensorParallelismRaisesThroughputAtScale) {
  auto m = run_paper("model_parallel_7b_256gpu");
  EXPECT_GT(m.at("parallel.tp=2 parallel.pp=1").tokens_per_s_per_gpu, m.at("parallel.tp=1 parallel.pp=1").tokens_per_s_per_gpu);
}

// Finding 4: strong scaling a fixed global batch of 32 sequences: per-GPU work shrinks as nodes
// grow, so MFU falls with every doubling and exposed communication takes a growing share.
TEST(Findings, StrongScalingLosesMfuAsPerGpuWorkShrinks) {
  auto m = run_paper("strong_scaling_gbs32");
  double previous_mfu = 1;
  for (int nodes : {2, 4, 8, 16, 32}) {
    const Metrics& x = m.at("cluster.nodes=" + std::to_string(nodes));
    EXPECT_LT(x.mfu, previous_mfu) << nodes << " nodes";
    previous_mfu = x.mfu;
  }
  EXPECT_GT(m.at("cluster.nodes=32").exposed_comm_fraction, m.at("cluster.nodes=2").exposed_comm_fraction);
}

// Finding 5: the faster GPU generation (A100 -> H100: 3.2x the bf16 peak, 2x the NIC rate) has the
// lower utilization, and more of its iteration is exposed communication.
TEST(Findings, FasterGpuGenerationLowersUtilization) {
  auto m = run_paper("a100_vs_h100");
  const Metrics& a100 = m.at("cluster.node_type=dgx-a100");
  const Metrics& h100 = m.at("cluster.node_type=dgx-h100");
  EXPECT_GT(h100.tokens_per_s_per_gpu, a100.tokens_per_s_per_gpu);
  EXPECT_LT(h100.mfu, a100.mfu);
  EXPECT_GT(h100.exposed_comm_fraction, a100.exposed_comm_fraction);
}

// Finding 6: bigger models move more bytes per step: exposed communication time grows with size.
TEST(Findings, BiggerModelsExposeMoreCommunication) {
  auto m = run_paper("model_sizes");
  double previous = 0;
  for (const char* model : {"llama2-1b", "llama2-7b", "llama2-13b", "llama2-70b"}) {
    const Metrics& x = m.at(std::string("model.name=") + model);
    EXPECT_GT(x.exposed_comm_s, previous) << model;
    previous = x.exposed_comm_s;
  }
}

// Finding 7: longer sequences add compute (attention grows as seq^2) without adding communication
// (the parameters moved are the same): the exposed share falls with every doubling.
TEST(Findings, LongerSequencesExposeLessCommunication) {
  auto m = run_paper("context_length");
  double previous = 1;
  for (int seq : {2048, 4096, 8192, 16384}) {
    const Metrics& x = m.at("training.seq_len=" + std::to_string(seq));
    EXPECT_LT(x.exposed_comm_fraction, previous) << seq;
    previous = x.exposed_comm_fraction;
  }
  EXPECT_GT(m.at("training.seq_len=4096").mfu, m.at("training.seq_len=2048").mfu);
}

// Finding 8: NOT REPRODUCED. The study found context parallelism a worse choice than tensor
// parallelism at sequence 4096. commbound (2026-11-26, PyTorch eager) gives cp 2: 9086 vs tp 2:
// 7836, cp 4: 7885 vs tp 4: 5668 tokens/s/GPU (64 H100): context parallelism splits every kernel
// of the layer by tokens (norms and residuals included) and overlaps its ring exchanges with the
// attention blocks, while tensor parallelism without sequence parallelism replicates the norms and
// puts two blocking all-reduces a layer each way on the compute stream. The study ran context
// parallelism through Transformer Engine (an appendix); what its ring attention cost there beyond
// these kernels is not known here.
TEST(Findings, DISABLED_ContextParallelismIsWorseThanTensorParallelismAt4k) {
  auto m = run_paper("cp_vs_tp");
  EXPECT_LT(m.at("parallel.tp=1 parallel.cp=2").tokens_per_s_per_gpu, m.at("parallel.tp=2 parallel.cp=1").tokens_per_s_per_gpu);
  EXPECT_LT(m.at("parallel.tp=1 parallel.cp=4").tokens_per_s_per_gpu, m.at("parallel.tp=4 parallel.cp=1").tokens_per_s_per_gpu);
}

}  // namespace
}  // namespace commbound::sim
