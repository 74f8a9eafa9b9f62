// The memory model against figures worked out by hand from the models' published dimensions
// (shared/reference/models.md), not from the code's own formulas: each category's bytes are
// written as numbers, with their arithmetic beside them.
#include "sim/workload/memory_model.hpp"
#include "sim/scenario/presets.hpp"
#include "sim/scenario/training.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace commbound::sim {
namespace {

const Presets kPresets("calibration");

TrainingSpec llama(const std::string& model, int world) {
  TrainingSpec t;
  t.model = *load_model(kPresets, model);
  t.gpu = *load_gpu(kPresets, "h100-sxm5");
  t.seq_len = 4096;
  t.micro_batch = 2;
  t.dp = world;
  t.global_batch = 2 * world;
  return t;
}

std::map<std::string, double> by_category(const MemoryUse& u) {
  std::map<std::string, double> m;
  for (const auto& [what, bytes] : u.bytes) m[what] = bytes;
  return m;
}

// Llama-2 7B (32 layers, hidden 4096, FFN 11008, vocab 32000): a layer holds 4 x 4096^2 (q, k, v,
// o) + 3 x 4096 x 11008 (gate, up, down) + 2 x 4096 (norms) = 202,383,360 parameters; the model
// 32 layers + 2 x 4096 x 32000 (embedding, LM head) + 4096 (final norm) = 6,738,415,616 = P.
// FSDP ZeRO-2 over 64 GPUs, micro-batch 2 x 4096 tokens, 16 NCCL channels:
//   params_bf16        2 P                                          = 13,476,831,232
//   master_fp32        4 P / 64                                     =    421,150,976
//   adam_moments_fp32  8 P / 64                                     =    842,301,952
//   grads              4 P / 64 + 2 x 2 x 202,383,360 (bf16 unit)   =  1,230,684,416
//   activations        32 layers x 34 x 4096 x 2 x 4096 (Korthikanti eq. 1 without the score
//                      term) + fp32 logits and gradient 2 x 4096 x 2 x 32000 x 4 = 38,604,374,016
//   nccl_buffers       1 communicator x 16 channels x 2 directions x 2 sides x 4 MiB = 268,435,456
//   held                                                            = 54,843,778,048
//   allocator_and_context  5% of held + 1 GB                        =  3,742,188,902.4
//   total                                                           = 58,585,966,950.4 (fits 80 GB)
TEST(MemoryModel, Llama7bZero2ByHand) {
  const MemoryUse u = memory_per_gpu(llama("llama2-7b", 64), 16);
  const auto m = by_category(u);
  EXPECT_DOUBLE_EQ(m.at("params_bf16"), 13476831232.0);
  EXPECT_DOUBLE_EQ(m.at("master_fp32"), 421150976.0);
  EXPECT_DOUBLE_EQ(m.at("adam_moments_fp32"), 842301952.0);
  EXPECT_DOUBLE_EQ(m.at("grads"), 1230684416.0);
  EXPECT_DOUBLE_EQ(m.at("activations"), 38604374016.0);
  EXPECT_DOUBLE_EQ(m.at("nccl_buffers"), 268435456.0);
  EXPECT_NEAR(u.total_bytes, 58585966950.4, 1.0);
  EXPECT_TRUE(u.fits());
}

// Llama-2 70B (80 layers, hidden 8192, 64 heads / 8 KV heads of 128, FFN 28672): a layer holds
// 2 x 8192^2 (q, o) + 2 x 8192 x 1024 (k, v) + 3 x 8192 x 28672 + 2 x 8192 = 855,654,400; root
// (embedding, LM head, final norm) 2 x 8192 x 32000 + 8192 = 524,296,192; P = 68,976,648,192.
// ZeRO-3 over 256 GPUs, micro-batch 1, full recompute, 2 all-gathers in flight (+1 being used):
//   params_bf16   2 (P/256 + root + 3 layers)                       =  6,721,398,848
//   master_fp32   4 P / 256                                         =  1,077,760,128
//   adam          8 P / 256                                         =  2,155,520,256
//   grads         4 P / 256 + 2 x 2 x layer                         =  4,500,377,728
//   activations   80 x 2 x 4096 x 8192 (layer inputs) + 34 x 4096 x 8192 (one layer replayed)
//                 + 2 x 4096 x 32000 x 4 (logits)                   =  7,558,135,808
//   nccl_buffers  268,435,456; held 22,281,628,224; total 1.05 x held + 1e9 = 24,395,709,635.2
TEST(MemoryModel, Llama70bZero3ByHand) {
  TrainingSpec t = llama("llama2-70b", 256);
  t.zero_stage = 3;
  t.micro_batch = 1;
  t.activation_checkpointing = true;
  const MemoryUse u = memory_per_gpu(t, 16);
  const auto m = by_category(u);
  EXPECT_DOUBLE_EQ(m.at("params_bf16"), 6721398848.0);
  EXPECT_DOUBLE_EQ(m.at("grads"), 4500377728.0);
  EXPECT_DOUBLE_EQ(m.at("activations"), 7558135808.0);
  EXPECT_NEAR(u.total_bytes, 24395709635.2, 1.0);
}

// Llama-2 70B with plain DDP cannot fit: fp32 weights, gradients and Adam moments alone are
// 16 x 69e9 bytes = 1.1 TB per GPU. ZeRO-3 over 256 GPUs, full recompute and micro-batch 1 does.
TEST(MemoryModel, Llama70bDdpIsOutOfMemory) {
  TrainingSpec t = llama("llama2-70b", 256);
  t.strategy = Strategy::ddp;
  EXPECT_FALSE(memory_per_gpu(t, 16).fits());
  t.strategy = Strategy::fsdp;
  t.zero_stage = 3;
  t.micro_batch = 1;
  t.activation_checkpointing = true;
  const MemoryUse u = memory_per_gpu(t, 16);
  EXPECT_TRUE(u.fits()) << u.total_bytes / 1e9 << " GB";
}

// DiLoCo keeps, beside HSDP's state for the same shard group, the fp32 anchor and outer momentum
// of its shard: 2 x 4 B x 6,738,415,616 (Llama-2 7B) / 8 = 6,738,415,616 bytes, one byte per
// parameter, and 1.05 x that in the total (the allocator's 5% of what the model holds).
TEST(MemoryModel, DilocoAddsTheOuterStateOfItsShard) {
  TrainingSpec hsdp = llama("llama2-7b", 256);
  hsdp.strategy = Strategy::hsdp;
  hsdp.hsdp_shard = 8;
  TrainingSpec diloco = hsdp;
  diloco.strategy = Strategy::diloco;
  diloco.diloco_islands = 32;  // 256 / 32 = 8 GPUs per island, as HSDP's shard group
  const MemoryUse h = memory_per_gpu(hsdp, 16);
  const MemoryUse d = memory_per_gpu(diloco, 16);
  EXPECT_DOUBLE_EQ(by_category(d).at("diloco_anchor_and_momentum_fp32"), 6738415616.0);
  EXPECT_NEAR(d.total_bytes - h.total_bytes, 1.05 * 6738415616.0, 1.0);
}

}  // namespace
}  // namespace commbound::sim
