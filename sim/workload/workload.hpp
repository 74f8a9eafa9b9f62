// Workload: the program one GPU runs in one training iteration, as ops on streams with
// dependencies, for DDP, FSDP (ZeRO-2 / ZeRO-3), HSDP and DiLoCo, with Megatron tensor, pipeline and
// context parallelism.
//
// Every data-parallel replica and every tensor-parallel rank runs the same program on the same
// hardware, so the engine simulates one representative rank (rank 0) and runs its collectives
// over their full groups (and the data-parallel groups of the other tensor-parallel ranks, which
// share the NICs); tests/sim/engine/engine_test.cpp checks the shortcut against simulating every rank.
//
// A stage's program is built by passes (workload/internal/): the pipeline schedule orders its
// forward and backward passes (1F1B, plain or interleaved); a ProgramWriter lays out each pass's
// kernels with the model parallelism inside a layer (tensor-parallel reductions, ring attention);
// one data-parallel pass per strategy (none, DDP, FSDP ZeRO-2/3, HSDP, DiLoCo) adds the parameter
// gathers and gradient reductions around them.
//
// The compute ops of a layer, the embedding, the LM head and the optimizer are the calibration
// room's Llama recipe (model/llama_recipe.hpp), each kernel wrapped into an op with its
// stream and dependencies. Compute ops are priced by a CostModel (cost_model.hpp): from a
// calibration table by their kernel shapes when one is in use, else by the datasheet roofline
// from their FLOPs and bytes (the kernel shape's, model/kernel_shape.hpp).
#pragma once

#include "core/expected.hpp"
#include "model/kernel_shape.hpp"
#include "network/collective.hpp"
#include "sim/scenario/training.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace commbound::sim {

// Pipeline parallelism sends activations forward and gradients backward between neighbouring
// stages, each direction and peer on its own stream, so sends and receives never wait for each
// other in the wrong order.
enum class StreamId {
  compute,
  all_gather,
  reduce_scatter,
  tensor_parallel,
  pipeline_recv_activation,
  pipeline_send_activation,
  pipeline_recv_gradient,
  pipeline_send_gradient,
  context_parallel,
  expert_parallel,
};
inline constexpr int kStreams = 10;
const char* to_string(StreamId s);

// host: the GPU stream waits for the CPU (a launch gap kept from a replayed profiler trace,
// sim/trace/): neither compute nor communication in the metrics.
enum class OpKind { gemm, attention, elementwise, optimizer, collective, host };

// data_parallel: all replicas (FSDP, DDP); shard / replica: HSDP's two levels; tensor_parallel;
// pipeline_next / pipeline_prev: this rank and its peer in the next / previous stage.
// context_next: this rank and the next one of its context-parallel ring (ring attention);
// context_parallel: the whole context-parallel group (its all-gather and all-to-all variants).
// expert_parallel: the ranks sharing an MoE layer's experts (the token all-to-all);
// expert_tensor_parallel: the ranks splitting each of those experts; expert_data_parallel: the
// replicas of this rank's experts (their gradient reduction).
enum class GroupKind {
  data_parallel,
  shard,
  replica,
  tensor_parallel,
  pipeline_next,
  pipeline_prev,
  context_next,
  context_parallel,
  expert_parallel,
  expert_tensor_parallel,
  expert_data_parallel,
};
// "data_parallel", "shard", ...: the enumerator's name (how scenarios name a group kind).
const char* to_string(GroupKind g);
std::optional<GroupKind> parse_group_kind(const std::string& name);
inline constexpr GroupKind kGroupKinds[] = {GroupKind::data_parallel, GroupKind::shard, GroupKind::replica,
                                            GroupKind::tensor_parallel, GroupKind::pipeline_next,
                                            GroupKind::pipeline_prev, GroupKind::context_next,
                                            GroupKind::context_parallel,
                                            GroupKind::expert_parallel, GroupKind::expert_tensor_parallel,
                                            GroupKind::expert_data_parallel};

struct Op {
  std::string name;
  StreamId stream = StreamId::compute;
  OpKind kind = OpKind::gemm;
  double flops = 0;            // compute ops: the kernel's executed FLOPs (causal attention: the unmasked half)
  double bytes = 0;            // compute ops: the kernel's fewest HBM bytes (what the datasheet roofline prices)
  // Compute ops: the real kernel's shape (what a calibration table prices); std::monostate for
  // the zero-cost synchronisation points and for collectives.
  model::KernelShape kernel;
  int runs = 1;                // compute ops: the kernel runs this many times back to back (a group of experts)
  network::CollectiveOp collective = network::CollectiveOp::all_gather;
  GroupKind group = GroupKind::data_parallel;
  double size_bytes = 0;       // collectives: nccl-tests convention (whole buffer)
  bool toward_lower_rank = false;  // SendRecv between pipeline stages: gradients flow backward
  // AllToAll: the bytes each member sends each other member (network::CollectiveCall::peer_bytes,
  // in group order); null: size_bytes spread evenly.
  std::shared_ptr<const std::vector<double>> peer_bytes;
  std::vector<int> deps;       // indices of ops that must finish first (besides stream order)
  // Set: the op's duration was measured (a replayed profiler trace, sim/trace/) and is its time:
  // the cost model prices it so (no contention factor, no jitter: the measurement holds them), and
  // a collective takes it instead of running on the fabric (nor waits for its group). Unset: the
  // op is priced (compute) or simulated (collectives) as usual.
  std::optional<double> fixed_s;
  // When the host thread has issued this op, seconds from the iteration's start: the running sum
  // of the framework's host costs of every op up to it (TrainingSpec::host). The op starts no
  // earlier. 0 where the host is not modelled.
  double issue_s = 0;
};

struct Program {
  std::vector<Op> ops;  // issue order; each stream runs its ops in this order
  // Optional names of the streams' tracks in a Perfetto trace (a replayed profiler trace names
  // them after its CUDA streams); a stream without one is named by to_string(StreamId).
  std::map<StreamId, std::string> stream_labels;
  // DiLoCo: the ops from this index on are the outer step, which runs once every
  // TrainingSpec::diloco_sync_every iterations (the metrics amortise it); -1: every op runs every iteration.
  int outer_step_begin = -1;
};

// One part of a rank's compute alone, its ops as build_program writes them (host issue times from
// the part's start), for profiling (sim/engine/compute_profile.hpp): the first decoder layer's
// forward, backward (after the recompute activation checkpointing replays), both; what the
// recompute replays; the same four of the first MoE layer where the first layer is dense (a model
// whose first layers are dense, as DeepSeek-V3's three; empty otherwise); the embedding, the LM
// head; the optimizer over the rank's shard of every parameter; one micro-batch's forward and
// backward through the embedding, every layer and the LM head.
enum class ProgramPart {
  layer_forward,
  layer_backward,
  layer_forward_backward,
  layer_recompute,
  moe_layer_forward,
  moe_layer_backward,
  moe_layer_forward_backward,
  moe_layer_recompute,
  embedding_forward,
  embedding_backward,
  lm_head_forward,
  lm_head_backward,
  optimizer,
  micro_batch,
};
inline constexpr ProgramPart kProgramParts[] = {
    ProgramPart::layer_forward,         ProgramPart::layer_backward,     ProgramPart::layer_forward_backward,
    ProgramPart::layer_recompute,       ProgramPart::moe_layer_forward,  ProgramPart::moe_layer_backward,
    ProgramPart::moe_layer_forward_backward, ProgramPart::moe_layer_recompute, ProgramPart::embedding_forward,
    ProgramPart::embedding_backward,    ProgramPart::lm_head_forward,    ProgramPart::lm_head_backward,
    ProgramPart::optimizer,             ProgramPart::micro_batch};
// "layer.forward", "layer.backward", "layer.forward+backward", "moe_layer.forward", ...,
// "step.micro_batch".
const char* to_string(ProgramPart p);
Program build_part(const TrainingSpec& t, ProgramPart part);

// One iteration of `t` (all micro-batches, gradient reduction, optimizer step) on pipeline stage
// `stage`: its layers, the embedding on the first stage, the LM head on the last, in 1F1B order.
Program build_program(const TrainingSpec& t, int stage = 0);
// Every stage's program. Call check_program_size first where `t` comes from a user.
std::vector<Program> build_programs(const TrainingSpec& t);

// What build_programs(t) would write, bounded before it is built: at least micro-batches x the
// stage's layers x the ops of one layer's forward and backward (build_part, recomputation
// included) in each stage's program, counted in checked 64-bit arithmetic. Error, naming the
// keys, when the busiest stage passes kMaxOpsPerGpu or all stages together kMaxOpsAllStages
// (size_limits.hpp).
Status check_program_size(const TrainingSpec& t);

}  // namespace commbound::sim
