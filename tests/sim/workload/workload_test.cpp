// The workload's passes against what each strategy is documented to do, counted by hand: the
// 1F1B order of Megatron's schedule, and the collectives of none / DDP / FSDP ZeRO-2 and -3 /
// HSDP / DiLoCo on Llama-2 7B (32 layers, hidden 4096; a layer's bf16 parameters are 2 x 202,383,360 =
// 404,766,720 bytes, over DDP's 25 MB bucket cap, so every layer fills a bucket alone).
#include "sim/scenario/presets.hpp"
#include "sim/scenario/size_limits.hpp"
#include "sim/workload/internal/pipeline_schedule.hpp"
#include "sim/workload/layout.hpp"
#include "sim/workload/moe_routing.hpp"
#include "sim/workload/workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace commbound::sim {
namespace {

using internal::ScheduleUnit;

const Presets kPresets("calibration");

std::string spell(const std::vector<ScheduleUnit>& order) {
  std::string s;
  for (const ScheduleUnit& u : order) {
    s += (u.backward ? "B" : "F") + std::to_string(u.chunk) + "." + std::to_string(u.micro_batch) + " ";
  }
  return s;
}

// PipeDream-Flush on 4 stages, 6 micro-batches: stage 0 warms up with P - 1 = 3 forwards, the
// last stage with none; then one forward, one backward; the backwards left drain at the end.
TEST(PipelineSchedule, OneFOneBWarmsUpWithTheStagesBelow) {
  EXPECT_EQ(spell(internal::one_forward_one_backward(4, 0, 1, 6, 4)),
            "F0.0 F0.1 F0.2 F0.3 B0.0 F0.4 B0.1 F0.5 B0.2 B0.3 B0.4 B0.5 ");
  EXPECT_EQ(spell(internal::one_forward_one_backward(4, 3, 1, 6, 4)),
            "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2 F0.3 B0.3 F0.4 B0.4 F0.5 B0.5 ");
}

// Megatron's interleaved schedule, 2 stages x 2 chunks, 4 micro-batches: forwards go through
// groups of P = 2 micro-batches chunk by chunk (0.0 0.1 1.0 1.1 0.2 0.3 1.2 1.3), backwards
// likewise from the last chunk; stage 0 warms up with 2 (P - 1) + (v - 1) P = 4 units.
TEST(PipelineSchedule, InterleavedTakesMicroBatchesInGroupsOfTheStages) {
  EXPECT_EQ(spell(internal::one_forward_one_backward(2, 0, 2, 4, 2)),
            "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3 ");
}

// Megatron-Core's own example of a group that does not divide the micro-batches (schedules.py,
// "PP2 N3M5 with VP2"): forwards 0.0 0.1 0.2 1.0 1.1 1.2, then the last group of two, 0.3 0.4 1.3
// 1.4; stage 0 warms up with 2 (P - 1) + (v - 1) N = 2 + 3 = 5 units; the k-th backward is the
// k-th forward's micro-batch on the mirrored chunk.
TEST(PipelineSchedule, InterleavedGroupsOfNWithAShorterLastGroup) {
  EXPECT_EQ(spell(internal::one_forward_one_backward(2, 0, 2, 5, 3)),
            "F0.0 F0.1 F0.2 F1.0 F1.1 F1.2 B1.0 F0.3 B1.1 F0.4 B1.2 F1.3 B0.0 F1.4 B0.1 B0.2 B1.3 B1.4 B0.3 B0.4 ");
}

// Every (chunk, micro-batch) runs forward once and backward once, the backward after the forward.
TEST(PipelineSchedule, EveryUnitRunsForwardThenBackwardOnce) {
  for (int stages : {1, 2, 4, 8}) {
    for (int chunks : {1, 2, 3}) {
      for (int stage = 0; stage < stages; ++stage) {
        const int micro_batches = 2 * stages + 1;
        std::map<std::pair<int, int>, int> seen;  // 1: forward ran, 2: backward ran too
        const int group = chunks == 1 ? stages : stages + 1;
        for (const ScheduleUnit& u : internal::one_forward_one_backward(stages, stage, chunks, micro_batches, group)) {
          int& state = seen[{u.chunk, u.micro_batch}];
          EXPECT_EQ(state, u.backward ? 1 : 0) << stages << " stages, stage " << stage << ", " << chunks << " chunks";
          state = u.backward ? 2 : 1;
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(chunks * micro_batches));
        for (const auto& [unit, state] : seen) EXPECT_EQ(state, 2);
      }
    }
  }
}

TrainingSpec llama2_7b(Strategy strategy, int zero_stage, int dp, int micro_batches) {
  TrainingSpec t;
  t.model = *load_model(kPresets, "llama2-7b");
  t.gpu = *load_gpu(kPresets, "h100-sxm5");
  t.micro_batch = 1;
  t.micro_batches = micro_batches;
  t.dp = dp;
  t.global_batch = dp * micro_batches;
  t.strategy = strategy;
  t.zero_stage = zero_stage;
  t.hsdp_shard = 8;
  return t;
}

// Collectives of a program by the name's kind ("allgather", "reducescatter", ...: the part after
// the unit's name, without the micro-batch tag).
std::map<std::string, int> collectives(const TrainingSpec& t) {
  std::map<std::string, int> n;
  for (const Op& op : build_program(t).ops) {
    if (op.kind != OpKind::collective) continue;
    std::string kind = op.name.substr(op.name.find('.') + 1);
    if (kind.rfind("layer", 0) == 0) kind = kind.substr(kind.find('.') + 1);  // "bucket.layer7.allreduce"
    ++n[kind.substr(0, kind.find(".mb"))];
  }
  return n;
}

TEST(DataParallelPass, OneReplicaMovesNothing) {
  EXPECT_TRUE(collectives(llama2_7b(Strategy::fsdp, 3, 1, 4)).empty());
}

// DDP: one bucket per layer (each over the cap) and the root's all-reduce, once per iteration.
TEST(DataParallelPass, DdpAllReducesABucketPerLayerAndTheRoot) {
  const std::map<std::string, int> expected{{"allreduce", 32 + 1}};
  EXPECT_EQ(collectives(llama2_7b(Strategy::ddp, 2, 16, 4)), expected);
}

// ZeRO-2: parameters gathered once (33 units: 32 layers + root) on the first micro-batch and kept;
// gradients reduce-scattered once per unit.
TEST(DataParallelPass, ZeroTwoGathersOncePerIteration) {
  const std::map<std::string, int> expected{{"allgather", 33}, {"reducescatter", 33}};
  EXPECT_EQ(collectives(llama2_7b(Strategy::fsdp, 2, 16, 4)), expected);
}

// ZeRO-3: every micro-batch gathers every unit for its forward and every layer again for its
// backward (the root's parameters stay gathered between the LM head's forward and backward).
TEST(DataParallelPass, ZeroThreeGathersForEveryForwardAndBackward) {
  const std::map<std::string, int> expected{{"allgather", 4 * 33}, {"allgather_bwd", 4 * 32}, {"reducescatter", 33}};
  EXPECT_EQ(collectives(llama2_7b(Strategy::fsdp, 3, 16, 4)), expected);
}

// HSDP over 16 replicas in shard groups of 8: FSDP's collectives within the shard group, and each
// reduced shard (1/8 of the unit) all-reduced across the 2 replica groups.
TEST(DataParallelPass, HsdpAllReducesEachReducedShardAcrossReplicas) {
  const TrainingSpec t = llama2_7b(Strategy::hsdp, 2, 16, 1);
  const std::map<std::string, int> expected{{"allgather", 33}, {"reducescatter", 33}, {"replica_allreduce", 33}};
  EXPECT_EQ(collectives(t), expected);
  const Program p = build_program(t);
  auto named = [&](const std::string& name) {
    for (const Op& op : p.ops) {
      if (op.name == name) return op;
    }
    ADD_FAILURE() << "no op " << name;
    return Op{};
  };
  EXPECT_EQ(named("layer1.reducescatter").group, GroupKind::shard);
  EXPECT_EQ(named("layer1.replica_allreduce").group, GroupKind::replica);
  EXPECT_DOUBLE_EQ(named("layer1.replica_allreduce").size_bytes, 404'766'720.0 / 8);
}

// DiLoCo over 16 replicas in 2 islands of 8: each island's inner step is FSDP's 33 gathers and 33
// reduce-scatters within the island, and nothing crosses islands until the outer step, which is one
// all-reduce of the rank's fp32 shard across the islands, then the outer optimizer. Llama-2 7B has
// 32 x 202,383,360 + 2 x 32000 x 4096 + 4096 = 6,738,415,616 parameters; a shard of 8 is
// 842,301,952 of them, 3,369,207,808 bytes in fp32.
TEST(DataParallelPass, DilocoAllReducesTheFp32ShardOnceInTheOuterStep) {
  TrainingSpec t = llama2_7b(Strategy::diloco, 2, 16, 1);
  t.diloco_islands = 2;
  const std::map<std::string, int> expected{{"allgather", 33}, {"reducescatter", 33}, {"pseudo_gradient.allreduce", 1}};
  EXPECT_EQ(collectives(t), expected);
  const Program p = build_program(t);
  ASSERT_GE(p.outer_step_begin, 0);
  const Op& outer = p.ops[static_cast<std::size_t>(p.outer_step_begin)];
  EXPECT_EQ(outer.name, "outer.pseudo_gradient.allreduce");
  EXPECT_EQ(outer.group, GroupKind::replica);
  EXPECT_DOUBLE_EQ(outer.size_bytes, 3'369'207'808.0);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.kind == OpKind::collective && static_cast<int>(i) < p.outer_step_begin) {
      EXPECT_EQ(op.group, GroupKind::shard) << op.name;
    }
    if (static_cast<int>(i) > p.outer_step_begin) {
      EXPECT_EQ(op.kind, OpKind::optimizer) << op.name;
    }
  }
}

// One island: nobody to average with, so the outer step is the outer optimizer alone.
TEST(DataParallelPass, DilocoOnOneIslandHasNoOuterCollective) {
  TrainingSpec t = llama2_7b(Strategy::diloco, 2, 16, 1);
  t.diloco_islands = 1;
  const std::map<std::string, int> expected{{"allgather", 33}, {"reducescatter", 33}};
  EXPECT_EQ(collectives(t), expected);
  const Program p = build_program(t);
  ASSERT_GE(p.outer_step_begin, 0);
  EXPECT_EQ(p.ops[static_cast<std::size_t>(p.outer_step_begin)].kind, OpKind::optimizer);
}

// The ops of `p` whose name contains `part`.
std::vector<Op> ops_named(const Program& p, const std::string& part) {
  std::vector<Op> out;
  for (const Op& op : p.ops) {
    if (op.name.find(part) != std::string::npos) out.push_back(op);
  }
  return out;
}

// FSDP2 under PyTorch, ZeRO-2 over 8 ranks with a bf16 reduction: per unit (32 layers and the
// root) the shard cast and copied in on the all-gather stream, every gathered byte copied out on
// the compute stream before the unit's first kernel, the gradients concatenated into the
// reduce-scatter buffer and pre-divided on the reduce-scatter stream, the shard post-divided and
// cast to fp32 after it. A layer's copy-out reads and writes its 202,383,360 bf16 parameters:
// 4 x 202,383,360 = 809,533,440 bytes. 8 ranks: pre-divide 4 (doubled from 1 while 8 / f > f),
// post-divide 8 / 4 = 2.
TEST(DataParallelPass, PytorchFsdpCopiesEveryGatheredAndReducedByte) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 8, 1);
  t.framework = model::Framework::pytorch_eager;
  const Program p = build_program(t);
  const std::vector<Op> copy_out = ops_named(p, ".copy_out.fsdp.split_with_sizes_copy");
  ASSERT_EQ(copy_out.size(), 33u);
  for (const Op& op : copy_out) EXPECT_EQ(op.stream, StreamId::compute) << op.name;
  const Op layer = ops_named(p, "layer5.allgather.mb0.copy_out.")[0];
  EXPECT_DOUBLE_EQ(layer.bytes, 809'533'440.0);
  ASSERT_EQ(layer.deps.size(), 1u);
  EXPECT_EQ(p.ops[static_cast<std::size_t>(layer.deps[0])].name, "layer5.allgather.mb0");
  for (const std::string part : {".copy_in.fsdp.to_bf16", ".copy_in.fsdp.foreach_copy_in"}) {
    const std::vector<Op> in = ops_named(p, part);
    ASSERT_EQ(in.size(), 33u) << part;
    for (const Op& op : in) EXPECT_EQ(op.stream, StreamId::all_gather) << op.name;
  }
  // The shard: 202,383,360 / 8 parameters, read in fp32 and written in bf16.
  EXPECT_DOUBLE_EQ(ops_named(p, "layer5.allgather.mb0.copy_in.fsdp.to_bf16")[0].bytes, 6 * 202'383'360.0 / 8);
  for (const std::string part : {".fsdp.chunk_cat", ".fsdp.predivide", ".fsdp.postdivide", ".fsdp.to_fp32"}) {
    const std::vector<Op> reduce = ops_named(p, part);
    ASSERT_EQ(reduce.size(), 33u) << part;
    for (const Op& op : reduce) EXPECT_EQ(op.stream, StreamId::reduce_scatter) << op.name;
  }
  EXPECT_DOUBLE_EQ(ops_named(p, "layer5.reducescatter.copy_in.fsdp.chunk_cat")[0].bytes, 809'533'440.0);
  // The optimizer waits for the last of each unit's kernels: the cast after the reduce-scatter.
  const std::vector<Op> optimizer = ops_named(p, "optimizer.");
  ASSERT_FALSE(optimizer.empty());
  int casts = 0;
  for (int d : optimizer.front().deps) casts += p.ops[static_cast<std::size_t>(d)].name.ends_with(".fsdp.to_fp32");
  EXPECT_EQ(casts, 33);
}

// An fp32 reduction averages in NCCL: no divides, no cast; the concatenation writes fp32.
TEST(DataParallelPass, PytorchFsdpReducingInFp32DividesNothing) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 8, 1);
  t.framework = model::Framework::pytorch_eager;
  t.grad_reduce_fp32 = true;
  const Program p = build_program(t);
  EXPECT_TRUE(ops_named(p, "divide").empty());
  EXPECT_TRUE(ops_named(p, ".fsdp.to_fp32").empty());
  EXPECT_DOUBLE_EQ(ops_named(p, "layer5.reducescatter.copy_in.fsdp.chunk_cat")[0].bytes, 6 * 202'383'360.0);
}

// DDP under PyTorch: each layer's gradients multiplied into their bucket on the compute stream as
// its backward ends (before the bucket's all-reduce), and copied back out after it, before the
// optimizer: 4 x 202,383,360 bytes each way.
TEST(DataParallelPass, PytorchDdpCopiesGradientsIntoAndOutOfItsBuckets) {
  TrainingSpec t = llama2_7b(Strategy::ddp, 2, 16, 1);
  t.framework = model::Framework::pytorch_eager;
  const Program p = build_program(t);
  const std::vector<Op> in = ops_named(p, ".bucket_copy_in.ddp.mul_out");
  const std::vector<Op> out = ops_named(p, ".copy_out.ddp.copy_");
  ASSERT_EQ(in.size(), 33u);
  ASSERT_EQ(out.size(), 33u);
  const Op layer_in = ops_named(p, "layer5.bucket_copy_in.")[0];
  const Op layer_out = ops_named(p, "bucket.layer5.allreduce.copy_out.")[0];
  EXPECT_DOUBLE_EQ(layer_in.bytes, 809'533'440.0);
  EXPECT_DOUBLE_EQ(layer_out.bytes, 809'533'440.0);
  EXPECT_EQ(layer_in.stream, StreamId::compute);
  EXPECT_EQ(layer_out.stream, StreamId::compute);
  EXPECT_EQ(p.ops[static_cast<std::size_t>(layer_out.deps[0])].name, "bucket.layer5.allreduce");
  EXPECT_EQ(p.ops[static_cast<std::size_t>(ops_named(p, "bucket.layer5.allreduce")[0].deps[0])].name,
            "layer5.bucket_copy_in.ddp.mul_out");
}

// Megatron-LM's buffers are the parameters and gradients (views), and `fused` is the ideal: no glue.
TEST(DataParallelPass, OnlyPytorchLaunchesGlueKernels) {
  for (auto framework : {model::Framework::fused, model::Framework::megatron_te}) {
    for (Strategy strategy : {Strategy::fsdp, Strategy::ddp}) {
      TrainingSpec t = llama2_7b(strategy, 2, 8, 1);
      t.framework = framework;
      const Program p = build_program(t);
      EXPECT_TRUE(ops_named(p, ".fsdp.").empty());
      EXPECT_TRUE(ops_named(p, ".ddp.").empty());
    }
  }
}

// FSDP and HSDP have no outer step.
TEST(DataParallelPass, SynchronousStrategiesHaveNoOuterStep) {
  EXPECT_EQ(build_program(llama2_7b(Strategy::fsdp, 2, 16, 1)).outer_step_begin, -1);
  EXPECT_EQ(build_program(llama2_7b(Strategy::hsdp, 2, 16, 1)).outer_step_begin, -1);
}

// Megatron-Core's distributed optimizer (ZeRO-1). A Llama-2 7B layer is 202,383,360 parameters,
// 404,766,720 bf16 bytes. Buckets of 500e6 parameters, filled in backward order and closed once they
// reach the size, hold 3 layers (607M): layers 32-30 are bucket 0, ..., 5-3 bucket 9, 2-1 bucket 10.
constexpr double kLlama7bLayerBytes = 404'766'720.0;

TrainingSpec distributed_optimizer(int pp, int virtual_stages, double bucket_params) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 1, 16, 4);
  t.pp = pp;
  t.virtual_stages = virtual_stages;
  t.micro_batches = 4;
  t.global_batch = t.dp * t.micro_batches;
  t.dp_bucket_params = bucket_params;
  return t;
}

int op_named(const Program& p, const std::string& name) {
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].name == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

// What layer `l`'s forward on micro-batch 0 starts after: its first op's first dependency (the
// previous layer's last op, or the embedding).
int forward_input(const Program& p, int l) {
  const std::string prefix = "layer" + std::to_string(l) + ".mb0.fwd.";
  for (const Op& op : p.ops) {
    if (op.name.rfind(prefix, 0) == 0) return op.deps.at(0);
  }
  ADD_FAILURE() << "no op " << prefix;
  return -1;
}

TEST(DistributedOptimizer, BucketsFillInBackwardOrderAndReduceOnceComplete) {
  const TrainingSpec t = distributed_optimizer(1, 1, 500e6);
  const Program p = build_program(t);
  int gathers = 0, reduces = 0;
  for (const Op& op : p.ops) {
    if (op.kind != OpKind::collective || op.name.rfind("chunk0.bucket", 0) != 0) continue;
    ++(op.collective == network::CollectiveOp::all_gather ? gathers : reduces);
  }
  EXPECT_EQ(gathers, 11);
  EXPECT_EQ(reduces, 11);
  EXPECT_DOUBLE_EQ(p.ops[op_named(p, "chunk0.bucket0.reducescatter")].size_bytes, 3 * kLlama7bLayerBytes);
  EXPECT_DOUBLE_EQ(p.ops[op_named(p, "chunk0.bucket10.reducescatter")].size_bytes, 2 * kLlama7bLayerBytes);
  // Bucket 0 (layers 32-30) is reduced as layer 30's last backward ends, before layer 29's starts.
  const int reduce0 = op_named(p, "chunk0.bucket0.reducescatter");
  ASSERT_EQ(p.ops[reduce0].deps.size(), 1U);
  EXPECT_EQ(p.ops[p.ops[reduce0].deps[0]].name.rfind("layer30.", 0), 0U) << p.ops[p.ops[reduce0].deps[0]].name;
  EXPECT_NE(p.ops[p.ops[reduce0].deps[0]].name.find(".mb3"), std::string::npos);
  // The root's (embedding and LM head) collectives stay their own.
  op_named(p, "root.reducescatter");
}

// overlap_param_gather: the first forward's bucket (10: layers 1-2) and the next (9: layers 3-5)
// are dispatched as layer 1's forward is issued, after the embedding; bucket 8 as layer 3's, after
// layer 2's forward.
TEST(DistributedOptimizer, GathersOneBucketAheadOfTheForward) {
  const Program p = build_program(distributed_optimizer(1, 1, 500e6));
  const Op& first = p.ops[op_named(p, "chunk0.bucket10.allgather")];
  const Op& second = p.ops[op_named(p, "chunk0.bucket9.allgather")];
  const Op& third = p.ops[op_named(p, "chunk0.bucket8.allgather")];
  EXPECT_EQ(first.deps, std::vector<int>{forward_input(p, 1)});
  EXPECT_EQ(second.deps, first.deps);
  EXPECT_EQ(third.deps, std::vector<int>{forward_input(p, 3)});
  EXPECT_NE(forward_input(p, 1), forward_input(p, 3));
}

// Without overlap: one bucket, reduce-scattered after the last backward, gathered before the first
// forward with nothing to wait for.
TEST(DistributedOptimizer, WithoutOverlapOneBucketAfterBackwardAndBeforeForward) {
  TrainingSpec t = distributed_optimizer(1, 1, 500e6);
  t.overlap_grad_reduce = false;
  t.overlap_param_gather = false;
  const Program p = build_program(t);
  const Op& reduce = p.ops[op_named(p, "chunk0.bucket0.reducescatter")];
  EXPECT_DOUBLE_EQ(reduce.size_bytes, 32 * kLlama7bLayerBytes);
  ASSERT_EQ(reduce.deps.size(), 1U);
  for (std::size_t i = reduce.deps[0] + 1; i < p.ops.size(); ++i) {
    EXPECT_TRUE(p.ops[i].kind == OpKind::collective || p.ops[i].name.rfind("optimizer", 0) == 0 ||
                p.ops[i].name.rfind("root", 0) == 0)
        << "after the reduce's dependency: " << p.ops[i].name;
  }
  EXPECT_TRUE(p.ops[op_named(p, "chunk0.bucket0.allgather")].deps.empty());
}

// Interleaved, pp 2 x 4 chunks of 4 layers, buckets of the default 40e6 (a layer each): stage 0's
// first chunk is bucketed (4 buckets), its other chunks and every chunk of stage 1 are one bucket.
// Chunks 0 and 1 are gathered as the schedule starts; chunk 2 as chunk 1's first forward is issued.
TEST(DistributedOptimizer, InterleavedBucketsTheFirstChunkAndGathersAChunkAhead) {
  const TrainingSpec t = distributed_optimizer(2, 4, 40e6);
  auto count = [](const Program& p, network::CollectiveOp kind) {
    int n = 0;
    for (const Op& op : p.ops) n += op.kind == OpKind::collective && op.collective == kind && op.name.rfind("chunk", 0) == 0;
    return n;
  };
  const Program first = build_program(t, 0), second = build_program(t, 1);
  EXPECT_EQ(count(first, network::CollectiveOp::reduce_scatter), 4 + 3);
  EXPECT_EQ(count(second, network::CollectiveOp::reduce_scatter), 4);
  EXPECT_DOUBLE_EQ(second.ops[op_named(second, "chunk0.bucket0.reducescatter")].size_bytes, 4 * kLlama7bLayerBytes);
  EXPECT_TRUE(first.ops[op_named(first, "chunk0.bucket3.allgather")].deps.empty());
  EXPECT_TRUE(first.ops[op_named(first, "chunk1.bucket0.allgather")].deps.empty());
  const Op& chunk2 = first.ops[op_named(first, "chunk2.bucket0.allgather")];
  ASSERT_EQ(chunk2.deps.size(), 1U);
  EXPECT_EQ(chunk2.deps[0], op_named(first, "vs2.fwd_start.mb0"));
}

// Gathered with the optimizer step: bucketing off (stage 0's first chunk one bucket of its 4
// layers, like the others), and every chunk's gather at the step's start with nothing to wait for.
TEST(DistributedOptimizer, GatheredWithTheOptimizerStepEveryChunkIsOneBucketFromTheStart) {
  TrainingSpec t = distributed_optimizer(2, 4, 40e6);
  t.overlap_param_gather_with_optimizer_step = true;
  const Program p = build_program(t, 0);
  for (int c = 0; c < 4; ++c) {
    const Op& gather = p.ops[op_named(p, "chunk" + std::to_string(c) + ".bucket0.allgather")];
    EXPECT_TRUE(gather.deps.empty()) << c;
    EXPECT_DOUBLE_EQ(gather.size_bytes, 4 * kLlama7bLayerBytes) << c;
  }
  int reduces = 0;
  for (const Op& op : p.ops) reduces += op.kind == OpKind::collective && op.name.rfind("chunk", 0) == 0 &&
                                        op.collective == network::CollectiveOp::reduce_scatter;
  EXPECT_EQ(reduces, 4);
}

// Mixtral 8x7B (32 MoE layers of 8 experts, top-2; hidden 4096) with expert parallelism 8 over 16
// FSDP ranks (ZeRO-2), one micro-batch of 4096 tokens: per layer the dispatch and the combine
// forward, their mirrors backward (4 all-to-alls over the expert-parallel group of 8), each rank's
// send buffer 4096 tokens x 2 copies x 4096 x 2 B = 64 MiB; the experts (8 / 8 = one a rank) have
// 16 / 8 = 2 replicas, which gather and reduce them: 32 + 32 units beside the dense ones (32 layers
// and the root: 33).
TEST(ExpertParallelism, AllToAllsPerLayerAndExpertsOverTheirReplicas) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 1);
  t.model = *load_model(kPresets, "mixtral-8x7b");
  t.seq_len = 4096;
  t.ep = 8;
  std::map<std::pair<GroupKind, network::CollectiveOp>, int> n;
  for (const Op& op : build_program(t).ops) {
    if (op.kind != OpKind::collective) continue;
    ++n[{op.group, op.collective}];
    if (op.collective == network::CollectiveOp::all_to_all) {
      EXPECT_DOUBLE_EQ(op.size_bytes, 4096.0 * 2 * 4096 * 2) << op.name;
      EXPECT_EQ(op.peer_bytes, nullptr) << "uniform routing spreads the size evenly";
    }
  }
  using network::CollectiveOp;
  const std::map<std::pair<GroupKind, network::CollectiveOp>, int> expected{
      {{GroupKind::expert_parallel, CollectiveOp::all_to_all}, 4 * 32},
      {{GroupKind::data_parallel, CollectiveOp::all_gather}, 33},
      {{GroupKind::data_parallel, CollectiveOp::reduce_scatter}, 33},
      {{GroupKind::expert_data_parallel, CollectiveOp::all_gather}, 32},
      {{GroupKind::expert_data_parallel, CollectiveOp::reduce_scatter}, 32}};
  EXPECT_EQ(n, expected);
}

// The profile's MoE parts: Mixtral's first layer is an MoE layer, so the layer parts show it and the
// moe_layer parts stay empty; with its first two layers dense the layer parts show a dense layer
// (no router, no all-to-all) and the moe_layer parts layer 3, its router, its local experts'
// grouped gate_up (8 / 8 = one expert) and its dispatch and combine all-to-alls.
TEST(ProgramParts, TheFirstMoeLayerWhereTheFirstLayerIsDense) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 1);
  t.model = *load_model(kPresets, "mixtral-8x7b");
  t.seq_len = 4096;
  t.ep = 8;
  const auto names = [&](ProgramPart part) {
    std::vector<std::string> out;
    for (const Op& op : build_part(t, part).ops) out.push_back(op.name);
    return out;
  };
  const auto has = [](const std::vector<std::string>& ops, const std::string& name) {
    return std::find(ops.begin(), ops.end(), name) != ops.end();
  };
  EXPECT_TRUE(has(names(ProgramPart::layer_forward), "layer1.mb0.fwd.router"));
  EXPECT_TRUE(names(ProgramPart::moe_layer_forward).empty());
  EXPECT_TRUE(names(ProgramPart::moe_layer_forward_backward).empty());

  t.model.first_dense_layers = 2;
  const std::vector<std::string> dense = names(ProgramPart::layer_forward);
  EXPECT_FALSE(has(dense, "layer1.mb0.fwd.router"));
  EXPECT_TRUE(has(dense, "layer1.mb0.fwd.gate_up"));
  const std::vector<std::string> moe = names(ProgramPart::moe_layer_forward);
  for (const char* op : {"layer3.mb0.fwd.router", "layer3.mb0.fwd.experts.gate_up",
                         "layer3.mb0.fwd.to_experts.ep_alltoall", "layer3.mb0.fwd.from_experts.ep_alltoall"}) {
    EXPECT_TRUE(has(moe, op)) << op;
  }
  EXPECT_TRUE(has(names(ProgramPart::moe_layer_backward), "layer3.mb0.bwd.experts.gate_up.wgrad"));
  EXPECT_EQ(std::string(to_string(ProgramPart::moe_layer_forward_backward)), "moe_layer.forward+backward");
}

// Layout folding: 2 stages of tp 2 x dp 4 = 8 ranks with ep 4: the expert-parallel groups are runs
// of 4 consecutive ranks of a stage, the expert-data-parallel groups every 4th rank of the stage.
TEST(ExpertParallelism, GroupsFoldOverEachStagesRanks) {
  const Layout layout(4, 2, 2, 1, 4);
  EXPECT_EQ(layout.ep_group(5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.ep_group(9), (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(layout.expert_dp_group(5), (std::vector<int>{1, 5}));
  EXPECT_EQ(layout.expert_dp_group(14), (std::vector<int>{10, 14}));
}

// Expert tensor parallelism 2 with ep 2 over a stage of 8 ranks: expert-tensor groups of 2
// consecutive ranks, expert-parallel groups of 2 ranks 2 apart, expert replicas 4 apart.
TEST(ExpertParallelism, ExpertTensorGroupsAreInnermost) {
  const Layout layout(4, 2, 1, 1, 2, 2);
  EXPECT_EQ(layout.etp_group(5), (std::vector<int>{4, 5}));
  EXPECT_EQ(layout.ep_group(5), (std::vector<int>{5, 7}));
  EXPECT_EQ(layout.expert_dp_group(5), (std::vector<int>{1, 5}));
}

// Mixtral on 16 ranks with ep 4 and expert_tp 2: every MoE layer's dispatch is followed by an
// all-gather over the expert-tensor group and its combine preceded by a reduce-scatter, forward
// and backward (2 each a layer); the gathered bytes are the 2 ranks' received tokens, each the
// busiest rank's of the expert-parallel group (on average 4096 x 2, top-2; its expected maximum
// over the 4 ranks from the routing model, the same in every layer under uniform routing), a bf16
// row of 4096 each; the 16 ranks hold each expert half-width on 2 ranks, 2 replicas.
TEST(ExpertParallelism, ExpertTensorParallelismGathersTheReceivedTokens) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 1);
  t.model = *load_model(kPresets, "mixtral-8x7b");
  t.seq_len = 4096;
  t.ep = 4;
  t.expert_tp = 2;
  const double received = moe::route_layer(t.routing, {8, 2, 4, 4096.0}, 1).busiest_rank_tokens;
  ASSERT_GT(received, 4096.0 * 2);
  std::map<network::CollectiveOp, int> etp;
  for (const Op& op : build_program(t).ops) {
    if (op.kind != OpKind::collective || op.group != GroupKind::expert_tensor_parallel) continue;
    ++etp[op.collective];
    EXPECT_DOUBLE_EQ(op.size_bytes, 2 * received * 4096 * 2) << op.name;
  }
  EXPECT_EQ(etp[network::CollectiveOp::all_gather], 2 * 32);
  EXPECT_EQ(etp[network::CollectiveOp::reduce_scatter], 2 * 32);
  EXPECT_EQ(t.expert_replicas(), 2);
}

// A skewed router sends a layer's all-to-all unevenly: every rank sends rank j what j's experts
// draw (the same row from every sender), so the matrix's columns differ and its rows agree, and the
// dispatch's matrix is the combine's transposed.
TEST(ExpertParallelism, SkewedRoutingSendsUnevenBytes) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 1);
  t.model = *load_model(kPresets, "mixtral-8x7b");
  t.ep = 8;
  t.routing.kind = moe::RoutingKind::zipf;
  std::shared_ptr<const std::vector<double>> dispatch, combine;
  for (const Op& op : build_program(t).ops) {
    if (op.name == "layer1.mb0.fwd.to_experts.ep_alltoall") dispatch = op.peer_bytes;
    if (op.name == "layer1.mb0.fwd.from_experts.ep_alltoall") combine = op.peer_bytes;
  }
  ASSERT_NE(dispatch, nullptr);
  ASSERT_NE(combine, nullptr);
  const std::vector<double>& d = *dispatch;
  const std::vector<double>& c = *combine;
  ASSERT_EQ(d.size(), 64u);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      EXPECT_DOUBLE_EQ(d[i * 8 + j], d[j]) << "row " << i;
      EXPECT_DOUBLE_EQ(c[i * 8 + j], d[j * 8 + i]);
    }
  }
  EXPECT_NE(*std::max_element(d.begin(), d.begin() + 8), *std::min_element(d.begin(), d.begin() + 8));
}

// The step waits for the busiest rank of the expert-parallel group: a layer's expert GEMMs are
// priced at that rank's tokens, the order statistic of the routing model (moe_routing.hpp), here
// under Zipf(1.2) routing of Mixtral's 8 experts over ep 8 (4096 tokens a rank, top-2). The
// grouped GEMM's rows, summed over its group, are those tokens (each expert's rounded to whole
// tokens: within half a token an expert).
TEST(ExpertParallelism, ExpertsArePricedAtTheBusiestRanksTokens) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 1);
  t.model = *load_model(kPresets, "mixtral-8x7b");
  t.seq_len = 4096;
  t.ep = 8;
  t.routing.kind = moe::RoutingKind::zipf;
  t.routing.zipf_s = 1.2;
  const moe::LayerRouting routing = moe::route_layer(t.routing, {8, 2, 8, 4096.0}, 1);
  ASSERT_GT(routing.busiest_rank_tokens, 4096.0 * 2 * 1.5) << "Zipf(1.2) loads one rank well above the mean";
  double rows = 0;
  int products = 0, experts = 0;
  for (const Op& op : build_program(t).ops) {
    if (op.name != "layer1.mb0.fwd.experts.gate_up") continue;
    const auto& g = std::get<model::GemmShape>(op.kernel);
    rows += static_cast<double>(g.token_rows());
    experts = static_cast<int>(g.group.size());
    ++products;
  }
  EXPECT_EQ(products, 1) << "one grouped product";
  EXPECT_EQ(experts, 1) << "one local expert a rank";
  EXPECT_NEAR(rows, routing.busiest_rank_tokens, 0.5 * experts);
}

// check_program_size bounds a program from below before it is built: micro-batches x layers x one
// layer's forward and backward ops. Llama-2 7B FSDP on 16 replicas, 4 micro-batches: the program
// built holds at least 4 x 32 x (the layer's ops), and less than 1.5 times that (collectives,
// embedding, head and optimizer come on top of the layers).
TEST(ProgramSize, TheCountIsALowerBoundOfTheProgramBuilt) {
  const TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 4);
  const auto per_layer = static_cast<double>(build_part(t, ProgramPart::layer_forward_backward).ops.size());
  const double bound = 4 * 32 * per_layer;
  const auto built = static_cast<double>(build_program(t).ops.size());
  EXPECT_GE(built, bound);
  EXPECT_LT(built, 1.5 * bound);
  EXPECT_TRUE(check_program_size(t));
}

// Past 2^20 ops on one GPU the program is refused, naming the keys; one micro-batch fewer passes.
TEST(ProgramSize, RefusedPastTheOpsLimit) {
  TrainingSpec t = llama2_7b(Strategy::fsdp, 2, 16, 1);
  const auto per_layer = static_cast<std::int64_t>(build_part(t, ProgramPart::layer_forward_backward).ops.size());
  const std::int64_t most = kMaxOpsPerGpu / (32 * per_layer);  // micro-batches within the limit
  t.micro_batches = static_cast<int>(most);
  EXPECT_TRUE(check_program_size(t));
  t.micro_batches = static_cast<int>(most + 1);
  const Status refused = check_program_size(t);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(std::to_string(most + 1) + " micro-batches x 32 layers"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("more than 1048576 (docs/limits.md)"), std::string::npos);
  // A pipeline of 4 stages holds a quarter of the layers a stage: the same micro-batches pass.
  t.pp = 4;
  EXPECT_TRUE(check_program_size(t));
}

TEST(SizeLimits, CheckedProductSaysWhenItOverflows) {
  EXPECT_EQ(checked_product(3, 4), 12);
  EXPECT_EQ(checked_product(std::int64_t{1} << 31, std::int64_t{1} << 31), std::int64_t{1} << 62);
  EXPECT_EQ(checked_product(std::int64_t{1} << 32, std::int64_t{1} << 31), std::nullopt);
}

}  // namespace
}  // namespace commbound::sim
