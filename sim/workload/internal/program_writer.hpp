// ProgramWriter: appends ops to one GPU's program. The building blocks every strategy pass uses:
// a recipe kernel as a compute op, a zero-cost synchronisation point, a collective on a stream,
// and a run of recipe kernels with the model parallelism inside a layer (Megatron tensor-parallel
// reductions, ring attention over the context-parallel group, expert parallelism's all-to-all).
#pragma once

#include "model/llama_recipe.hpp"
#include "sim/workload/moe_routing.hpp"
#include "sim/workload/workload.hpp"

#include <map>
#include <memory>

#include <string>
#include <vector>

namespace commbound::sim::internal {

inline constexpr double kBf16Bytes = 2;
inline constexpr double kFp32Bytes = 4;

class ProgramWriter {
public:
  explicit ProgramWriter(const TrainingSpec& t);

  // An op running the recipe's kernel `k`: its FLOPs and fewest bytes are the kernel shape's
  // (what the datasheet roofline prices when no table is in use). Returns its index.
  int kernel(const std::string& name, const model::RecipeKernel& k, std::vector<int> deps,
             bool backward = false);
  // A synchronisation point: no kernel, no cost.
  int sync(const std::string& name, std::vector<int> deps);
  int collective(const std::string& name, StreamId stream, network::CollectiveOp c, GroupKind g, double size_bytes,
                 std::vector<int> deps);

  // The recipe's `kernels` one after another, the first after `deps`, each named `prefix` + its
  // name, with the tensor-parallel reductions the recipe marks; returns the last op.
  int run(const std::string& prefix, const std::vector<model::RecipeKernel>& kernels, std::vector<int> deps,
          bool backward);
  // `kernels` one after another on `stream`, the first after `deps`, each named `prefix` + its
  // name (what a framework launches around its collectives); returns the last op, or -1 for none.
  int run_on(StreamId stream, const std::string& prefix, const std::vector<model::RecipeKernel>& kernels,
             std::vector<int> deps, bool backward);
  // The recipe's optimizer step over `parameters` fp32 parameters (one flat buffer), after `deps`,
  // its ops marked OpKind::optimizer; returns the last.
  int optimizer(const std::string& prefix, double parameters, std::vector<int> deps);
  // Which part of a layer's backward to lay out: all of it, or zero bubble's split into the input
  // gradients (B: every kernel but the weight-gradient GEMMs, with the tensor-parallel reductions
  // of the input gradients) and the weight gradients (W: the `.wgrad` GEMMs).
  enum class BackwardPass { whole, input_grad, weight_grad };
  // One transformer layer `l` of micro-batch `tag` (".mb3"), forward or backward, after `after`.
  int layer(int l, const std::string& tag, bool backward, int after, BackwardPass pass = BackwardPass::whole);
  // What layer `l`'s backward replays of its forward first under t.recompute, after `after`
  // (returns `after` when nothing is replayed; sim/scenario/training.hpp says what each mode keeps):
  //   selective     the attention forward;
  //   selective_op  everything but attention and the outputs torchtitan saves: of its matmuls
  //                 (q, k, v, o, gate, up, down in that order) every other one, q, v, gate and
  //                 down, is kept, so k (qkv's kv_dim / 2 columns), o_proj and up (half of
  //                 gate_up) are replayed with the norms, rope, swiglu and residuals; the
  //                 tensor-parallel reductions are not replayed (their outputs are kept);
  //   full          the whole forward, tensor-parallel reductions included.
  int recompute(int l, const std::string& tag, int after);
  // The final norm, the LM head and the loss (backward: the loss's gradient first).
  int lm_head(const std::string& tag, bool backward, int after);
  // The input embedding (backward: its weight gradient).
  int embedding(const std::string& tag, bool backward, std::vector<int> deps);
  // Multi-token prediction module k's entry after `after`: forward the shifted tokens' embedding,
  // then the norms and the projection; backward the projection's and norms' gradients, then the
  // embedding's (LlamaRecipe::mtp_entry). Its layer and head are layer() and lm_head().
  int mtp_entry(int k, const std::string& tag, bool backward, int after);

  // Tokens of one micro-batch on this rank: context parallelism splits the sequence.
  double tokens() const;

  Op& op(int i) { return program_.ops[static_cast<std::size_t>(i)]; }
  int size() const { return static_cast<int>(program_.ops.size()); }
  Program take() { return std::move(program_); }

private:
  int add(Op op);
  // Advances the host's clock by `host_ops` framework ops of a forward or backward pass and
  // stamps op `i` with it.
  void issue(int i, int host_ops, bool backward);
  // Tensor parallelism's reduction `tag` ("attn", "mlp") after op `after` (ProgramWriter.cpp).
  int tp_sync(const std::string& prefix, const std::string& tag, bool backward, int after);
  int ep_exchange(const std::string& name, bool to_experts, int after);
  // An MoE layer as this rank runs it: its kernels priced for the busiest rank of the
  // expert-parallel group, and the bytes of its two all-to-alls (null: even), worked out once.
  struct MoeLayer {
    std::vector<model::RecipeKernel> forward, backward;
    std::shared_ptr<const std::vector<double>> to_experts, from_experts;
    double received_bytes = 0;  // the busiest rank's routed tokens, bf16 rows of hidden
  };
  const MoeLayer& moe_layer(int l);
  // Layer `l`'s kernels: a dense layer's or an MoE layer's, with its attention window.
  const std::vector<model::RecipeKernel>& kernels_of_layer(int l, bool backward);
  int attention(const std::string& prefix, const model::RecipeKernel& k, const std::vector<int>& after,
                bool backward);

  const TrainingSpec& t_;
  const model::LlamaRecipe recipe_;
  // A dense layer's kernels, and with the model's sliding window on its attention (windowed_*;
  // empty without a window).
  const std::vector<model::RecipeKernel> layer_fwd_, layer_bwd_, windowed_fwd_, windowed_bwd_, head_fwd_, head_bwd_,
      embedding_fwd_, embedding_bwd_, mtp_fwd_, mtp_bwd_;
  std::map<int, MoeLayer> moe_layers_;  // by layer
  int current_layer_ = 0;               // the layer run() is laying out (its all-to-alls' bytes)
  // Under tensor-parallel overlap, the all-gather running beside the kernels up to the next GEMM
  // (-1: none); that GEMM's successors wait for it.
  int tp_gather_in_flight_ = -1;
  // Under shared-expert overlap, the dispatch all-to-all running beside the shared experts (-1:
  // none); the first kernel marked joins_exchange waits for it.
  int ep_exchange_in_flight_ = -1;
  Program program_;
  double host_clock_s_ = 0;
};

}  // namespace commbound::sim::internal
