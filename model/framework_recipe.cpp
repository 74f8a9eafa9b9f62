#include "model/framework_recipe.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace commbound::model::recipe {
namespace {

constexpr double kBf16 = 2;
constexpr double kFp32 = 4;

std::int64_t dim(double v) { return static_cast<std::int64_t>(std::ceil(v - 1e-9)); }

// Appends the kernels of one part, in launch order. `views` counts host ops that launch nothing
// (view, transpose, split, slice, chunk, flatten): they are issued with the next kernel.
class Kernels {
public:
  void view(int ops = 1) { views_ += ops; }
  // The next elementwise kernel reads `bytes` of what the kernels just before it wrote
  // (ElementwiseShape::fresh_bytes): `k.fresh(b).elementwise(...)`.
  Kernels& fresh(double bytes) {
    fresh_bytes_ = bytes;
    return *this;
  }
  void elementwise(const std::string& op, double elements, double bytes, int host_ops = 1,
                   ElementwiseKind kind = ElementwiseKind::streaming, double width = 0) {
    push(op, ElementwiseShape{op, dim(elements), bytes, kind, dim(width), fresh_bytes_}, host_ops);
    fresh_bytes_ = 0;
  }
  // A reduction over rows of `width` contiguous elements (0: a reduction of many tensors).
  void reduction(const std::string& op, double elements, double bytes, double width, int host_ops = 1) {
    elementwise(op, elements, bytes, host_ops, ElementwiseKind::reduction, width);
  }
  // A reduction over the rows of [elements / width, width]: `width` outputs.
  void column_reduction(const std::string& op, double elements, double bytes, double width) {
    elementwise(op, elements, bytes, 1, ElementwiseKind::column_reduction, width);
  }
  // A dtype-converting copy other than float -> bfloat16: TensorIterator's unrolled path.
  void cast(const std::string& op, double elements, double bytes, int host_ops = 1) {
    elementwise(op, elements, bytes, host_ops, ElementwiseKind::cast);
  }
  // An elementwise kernel with a strided or broadcast operand: TensorIterator's indexed path.
  void indexed(const std::string& op, double elements, double bytes, int host_ops = 1) {
    elementwise(op, elements, bytes, host_ops, ElementwiseKind::indexed);
  }
  // F.linear without bias, `in` -> `out` features on T tokens: forward one GEMM (aten::linear,
  // its transpose view and matmul); backward autograd's MmBackward: dgrad then wgrad.
  void linear(const std::string& name, double tokens, double out, double in, Direction direction,
              const std::string& tp_reduction = "") {
    if (direction == Direction::forward) {
      push(name, GemmShape{dim(tokens), dim(out), dim(in), GemmLayout::forward}, 2, tp_reduction);
      return;
    }
    push(name + ".dgrad", GemmShape{dim(tokens), dim(in), dim(out), GemmLayout::dgrad}, 2);
    push(name + ".wgrad", GemmShape{dim(out), dim(in), dim(tokens), GemmLayout::wgrad}, 1, tp_reduction);
  }
  void push(const std::string& name, KernelShape shape, int host_ops, const std::string& tp_reduction = "",
            int runs = 1) {
    kernels_.push_back({prefix_ + name, std::move(shape), runs, tp_reduction, host_ops + views_});
    views_ = 0;
  }
  std::vector<RecipeKernel> take() { return std::move(kernels_); }

  // While it lives, the kernels added are named "<part>.<kernel>" ("rmsnorm2.pow").
  class Part {
  public:
    Part(Kernels& k, const std::string& part) : k_(k) { k_.prefix_ = part + "."; }
    ~Part() { k_.prefix_.clear(); }
    Part(const Part&) = delete;
    Part& operator=(const Part&) = delete;

  private:
    Kernels& k_;
  };

private:
  double fresh_bytes_ = 0;
  std::string prefix_;
  int views_ = 0;
  std::vector<RecipeKernel> kernels_;
};

// RMSNorm over [T x h] bf16 as the reference code writes it:
//   x.float().pow(2).mean(-1, keepdim=True); x.float() * rsqrt(v + eps); .type_as(x) * weight.
// The products with rsqrt ([T, 1]) and with the weight ([h]) broadcast an operand: indexed. Each
// kernel reads what the one before wrote (x itself: the residual sum just before), except the
// second x.float(), which reads x again after the first three kernels' traffic.
void rmsnorm_forward(Kernels& k, const std::string& part, double T, double h) {
  const Kernels::Part named(k, part);
  const double th = T * h;
  k.fresh(kBf16 * th).cast("to_fp32", th, (kBf16 + kFp32) * th);
  k.fresh(kFp32 * th).elementwise("pow", th, 2 * kFp32 * th);
  k.fresh(kFp32 * th).reduction("mean", th, kFp32 * th + kFp32 * T, h);
  k.fresh(kFp32 * T).elementwise("add_eps", T, 2 * kFp32 * T);
  k.fresh(kFp32 * T).elementwise("rsqrt", T, 2 * kFp32 * T);
  k.cast("to_fp32", th, (kBf16 + kFp32) * th);
  k.fresh(kFp32 * th + kFp32 * T).indexed("mul", th, 2 * kFp32 * th + kFp32 * T);
  k.fresh(kFp32 * th).elementwise("to_bf16", th, (kFp32 + kBf16) * th);
  k.fresh(kBf16 * th).indexed("mul_weight", th, 2 * kBf16 * th + kBf16 * h);
}

// Autograd through the same ops, last first (derivatives.yaml): the weight's product (input and
// weight gradients, the weight's summed over tokens), the casts, the product with rsqrt (both
// operands, rsqrt's summed over the row), rsqrt's and mean's backward, pow's (x.pow(1) * 2 *
// grad), and the sum of the two paths that reach x. Products with the broadcast weight or rsqrt and
// mean's backward (a [T, 1] gradient expanded over the row) are indexed.
void rmsnorm_backward(Kernels& k, const std::string& part, double T, double h) {
  const Kernels::Part named(k, part);
  const double th = T * h;
  k.indexed("mul_weight.grad_input", th, 2 * kBf16 * th + kBf16 * h);
  k.elementwise("mul_weight.grad_weight", th, 3 * kBf16 * th);
  k.column_reduction("sum_weight_grad", th, kBf16 * th + kBf16 * h, h);
  k.cast("to_bf16.backward", th, (kBf16 + kFp32) * th);
  k.indexed("mul.grad_x", th, 2 * kFp32 * th + kFp32 * T);
  k.elementwise("mul.grad_rsqrt", th, 3 * kFp32 * th);
  k.reduction("sum_rsqrt_grad", th, kFp32 * th + kFp32 * T, h);
  k.elementwise("to_fp32.backward", th, (kFp32 + kBf16) * th);
  k.elementwise("rsqrt.backward", T, 3 * kFp32 * T);
  k.elementwise("rsqrt.backward_mul", T, 3 * kFp32 * T);
  k.indexed("mean.backward", th, kFp32 * th + kFp32 * T);
  k.elementwise("pow.backward_pow", th, 2 * kFp32 * th);
  k.elementwise("pow.backward_mul", th, 2 * kFp32 * th);
  k.elementwise("pow.backward_grad", th, 3 * kFp32 * th);
  k.elementwise("to_fp32.backward", th, (kFp32 + kBf16) * th);
  k.elementwise("add_paths", th, 3 * kBf16 * th);
}

// Interleaved rotary embedding of one tensor of E bf16 elements: x1 = x[..., ::2], x2 =
// x[..., 1::2] (strided: each read moves the whole tensor, 2E bytes), x1*cos, x2*sin, x1*sin,
// x2*cos (E / 2 elements out each), the subtraction and the addition, then stack(..., -1) writes
// the interleaved result (flatten is a view). The products read a strided slice beside a broadcast
// cos or sin: indexed; the sum and difference of two outputs laid out alike stream. stack is a cat
// of its inputs unsqueezed, and cat of inputs not contiguous in the output's layout (these are
// laid out as q, transposed) copies each into its strided slice of the output, one indexed copy per
// input (aten/src/ATen/native/cuda/Shape.cu; the real layer's profile shows the two copies). x is
// the projection's output just written, and each kernel reads the products just before it.
void rope_forward(Kernels& k, const std::string& part, double E) {
  const Kernels::Part named(k, part);
  const double e = kBf16 * E;  // bytes of the whole tensor
  k.view(2);                    // the two slices
  k.fresh(e).indexed("mul_x1_cos", E / 2, e + e / 2);
  k.fresh(e).indexed("mul_x2_sin", E / 2, e + e / 2);
  k.fresh(e).elementwise("sub", E / 2, 3 * e / 2);
  k.fresh(e).indexed("mul_x1_sin", E / 2, e + e / 2);
  k.fresh(e).indexed("mul_x2_cos", E / 2, e + e / 2);
  k.fresh(e).elementwise("add", E / 2, 3 * e / 2);
  k.fresh(e / 2).indexed("stack.copy_first", E / 2, e / 2 + e, 1);  // a strided write moves the whole output
  k.fresh(e / 2).indexed("stack.copy_second", E / 2, e / 2 + e, 1);  // and flatten
}

// Its backward: stack's gradient unbinds into two strided halves g0, g1 (each read moves the whole
// gradient); sub's gives -g0; the four products' gradients; the two gradients of x1 and of x2
// summed; each slice's backward (zeros of x's size, then a strided copy into them); their sum.
// Everything that reads a strided half, a broadcast cos or sin, or writes a strided slice is indexed.
void rope_backward(Kernels& k, const std::string& part, double E) {
  const Kernels::Part named(k, part);
  const double e = kBf16 * E;
  k.indexed("neg", E / 2, e + e / 2);
  k.indexed("mul_cos.grad_x1", E / 2, e + e / 2);
  k.indexed("mul_sin.grad_x2", E / 2, e);
  k.indexed("mul_sin.grad_x1", E / 2, e + e / 2);
  k.indexed("mul_cos.grad_x2", E / 2, e + e / 2);
  k.elementwise("add.grad_x1", E / 2, 3 * e / 2);
  k.elementwise("add.grad_x2", E / 2, 3 * e / 2);
  for (const char* half : {"x1", "x2"}) {
    k.elementwise(std::string("slice_backward.zeros_") + half, E, e);
    k.indexed(std::string("slice_backward.copy_") + half, E / 2, e / 2 + e);
  }
  k.elementwise("add_halves", E, 3 * e);
}

}  // namespace

std::vector<RecipeKernel> eager_layer(const ModelSpec& m, const StepLayout& layout, Direction direction) {
  const double T = layout.tokens();
  const double h = m.hidden;
  const double tp = layout.tp;
  const double q_dim = m.heads / tp * m.head_dim();
  const double kv_dim = m.kv_dim() / tp;
  const double qkv = q_dim + 2 * kv_dim;
  const double f = m.ffn / tp;
  const double th = T * h;
  // F.scaled_dot_product_attention(is_causal=True): its dispatch (backend checks, the transposes
  // into the kernel's layout, allocations) is several host ops; one kernel forward, the backward's
  // few (FlashAttention-2: dot(dO, O), the main kernel, dQ's conversion) priced as the one
  // measured. Its output is laid out like q (flash_api.cpp's empty_like(q); cuDNN's
  // alloc_with_matching_layout(q, o)), and q leaves the rotary embedding's stack as [b, h, s, d]:
  // the transpose back to [b, s, h * d] is a copy.
  const RecipeKernel attention = core_attention(layout, direction, dim(m.heads / tp), dim(m.kv_heads / tp), m.head_dim());
  constexpr int kSdpaHostOps = 4;
  // The forward's elementwise kernels read what the kernels just before them wrote (fresh): the
  // norm's chain, RoPE's products of the projection's output, SwiGLU's of gate_up's, a residual
  // sum's projection output (its other operand, the residual, was written before the block). The
  // backward's gradients meet activations the forward saved a layer's traffic earlier: priced cold.
  Kernels k;
  if (direction == Direction::forward) {
    rmsnorm_forward(k, "rmsnorm", T, h);
    k.linear("qkv", T, qkv, h, direction);
    k.view(7);  // split, three views, three transposes
    rope_forward(k, "rope_q", T * q_dim);
    rope_forward(k, "rope_k", T * kv_dim);
    k.push("attention", attention.shape, kSdpaHostOps, "", attention.runs);
    k.view();  // transpose
    k.fresh(kBf16 * T * q_dim).indexed("attention.reshape_copy", T * q_dim, 2 * kBf16 * T * q_dim);
    k.linear("o_proj", T, h, q_dim, direction, "attn");
    k.fresh(kBf16 * th).elementwise("residual", th, 3 * kBf16 * th);
    rmsnorm_forward(k, "rmsnorm2", T, h);
    k.linear("gate_up", T, 2 * f, h, direction);
    k.view();  // chunk(2)
    k.fresh(kBf16 * T * f).indexed("swiglu.silu", T * f, 2 * kBf16 * T * f);  // of a chunk: strided rows
    k.fresh(2 * kBf16 * T * f).indexed("swiglu.mul", T * f, 3 * kBf16 * T * f);
    k.linear("down", T, h, f, direction, "mlp");
    k.fresh(kBf16 * th).elementwise("residual2", th, 3 * kBf16 * th);
    return k.take();
  }
  k.linear("down", T, h, f, direction);
  k.elementwise("swiglu.mul.grad_up", T * f, 3 * kBf16 * T * f);
  k.indexed("swiglu.mul.grad_silu", T * f, 3 * kBf16 * T * f);
  k.indexed("swiglu.silu_backward", T * f, 3 * kBf16 * T * f);
  // A chunk's or split's backward is a cat of contiguous gradients along the last dimension: ATen's
  // batched copy (CatArrayBatchedCopy, aten/src/ATen/native/cuda/Shape.cu), a streaming copy.
  k.elementwise("swiglu.chunk_backward_cat", 2 * T * f, 4 * kBf16 * T * f);
  k.linear("gate_up", T, 2 * f, h, direction, "mlp");
  rmsnorm_backward(k, "rmsnorm2", T, h);
  k.elementwise("residual2.add_grads", th, 3 * kBf16 * th);
  k.linear("o_proj", T, h, q_dim, direction);
  k.push("attention", attention.shape, kSdpaHostOps, "", attention.runs);
  rope_backward(k, "rope_q", T * q_dim);
  rope_backward(k, "rope_k", T * kv_dim);
  k.elementwise("qkv.split_backward_cat", T * qkv, 2 * kBf16 * T * qkv);
  k.linear("qkv", T, qkv, h, direction, "attn");
  rmsnorm_backward(k, "rmsnorm", T, h);
  k.elementwise("residual.add_grads", th, 3 * kBf16 * th);
  return k.take();
}

std::vector<RecipeKernel> eager_embedding(const ModelSpec& m, const StepLayout& layout, Direction direction) {
  const double T = layout.tokens();
  Kernels k;
  if (direction == Direction::forward) {
    k.push("embedding", MemoryBoundShape{"embedding_forward", dim(T), m.hidden}, 1);
    return k.take();
  }
  // embedding_dense_backward: a zeroed bf16 gradient of the table, then the sort-based
  // accumulation (radix sort of the ids, segment offsets, partial sums: several launches).
  const double rows = m.vocab / static_cast<double>(layout.tp);
  k.elementwise("embedding.grad_zeros", rows * m.hidden, kBf16 * rows * m.hidden);
  k.push("embedding", MemoryBoundShape{"embedding_backward", dim(T), m.hidden}, 6);
  return k.take();
}

std::vector<RecipeKernel> eager_lm_head(const ModelSpec& m, const StepLayout& layout, Direction direction) {
  const double T = layout.tokens();
  const double h = m.hidden;
  const double V = m.vocab / static_cast<double>(layout.tp);
  const double tv = T * V;
  Kernels k;
  if (direction == Direction::forward) {
    rmsnorm_forward(k, "rmsnorm_final", T, h);
    k.linear("logits", T, V, h, direction);
    k.view();  // flatten(0, 1)
    k.fresh(kBf16 * tv).cast("logits.to_fp32", tv, (kBf16 + kFp32) * tv);
    k.fresh(kFp32 * tv).reduction("cross_entropy.log_softmax", tv, 2 * kFp32 * tv, V, 2);
    k.elementwise("cross_entropy.nll_loss", T, 3 * kFp32 * T, 2);
    return k.take();
  }
  k.elementwise("cross_entropy.nll_loss_backward_zeros", tv, kFp32 * tv);
  k.elementwise("cross_entropy.nll_loss_backward_scatter", T, 3 * kFp32 * T);
  k.reduction("cross_entropy.log_softmax_backward", tv, 3 * kFp32 * tv, V);
  k.elementwise("logits.to_fp32.backward", tv, (kFp32 + kBf16) * tv);
  k.linear("logits", T, V, h, direction);
  rmsnorm_backward(k, "rmsnorm_final", T, h);
  return k.take();
}

// torch.nn.utils.clip_grad_norm_ (foreach): one _foreach_norm, the total norm and clip
// coefficient on a few scalars, one _foreach_mul_; then torch.optim.AdamW's _multi_tensor_adamw:
// step counts (host), decoupled weight decay (mul_), exp_avg.lerp_, exp_avg_sq.mul_ and
// addcmul_, sqrt, div by the bias correction, add eps, param.addcdiv_ - each a pass over the
// parameters. Measured on H100 with torch.optim.AdamW (foreach) for 200M parameters: 5.49 ms,
// i.e. these 80 bytes per parameter at 2.9 TB/s.
std::vector<RecipeKernel> eager_optimizer(double P) {
  Kernels k;
  k.reduction("clip.foreach_norm", P, kFp32 * P, 0, 2);
  k.elementwise("clip.total_norm", 1, 0, 4);
  k.elementwise("clip.foreach_mul", P, 2 * kFp32 * P);
  k.elementwise("adamw.foreach_mul_weight_decay", P, 2 * kFp32 * P, 3);
  k.elementwise("adamw.foreach_lerp_exp_avg", P, 3 * kFp32 * P);
  k.elementwise("adamw.foreach_mul_exp_avg_sq", P, 2 * kFp32 * P);
  k.elementwise("adamw.foreach_addcmul_exp_avg_sq", P, 3 * kFp32 * P);
  k.elementwise("adamw.foreach_sqrt", P, 2 * kFp32 * P, 3);
  k.elementwise("adamw.foreach_div_bias_correction", P, 2 * kFp32 * P);
  k.elementwise("adamw.foreach_add_eps", P, 2 * kFp32 * P);
  k.elementwise("adamw.foreach_addcdiv_param", P, 4 * kFp32 * P);
  return k.take();
}

Fsdp2Glue fsdp2_glue(double P, int param_tensors, int shard_ranks, int dp_ranks, bool reduce_fp32) {
  const double S = P / shard_ranks;  // the rank's shard (FSDP2 pads dim 0 to a multiple: ignored)
  int predivide = 1;                 // _init_grad_divide_factors, as written there
  while (!reduce_fp32 && dp_ranks % predivide == 0 && static_cast<double>(dp_ranks) / predivide > predivide) predivide *= 2;
  const double postdivide = static_cast<double>(dp_ranks) / predivide;
  const double reduce = reduce_fp32 ? kFp32 : kBf16;
  Kernels copy_in, copy_out, reduce_in, view_out;
  copy_in.elementwise("fsdp.to_bf16", S, (kFp32 + kBf16) * S, param_tensors);
  copy_in.elementwise("fsdp.foreach_copy_in", S, 2 * kBf16 * S);
  copy_out.elementwise("fsdp.split_with_sizes_copy", P, 2 * kBf16 * P);
  reduce_in.elementwise("fsdp.chunk_cat", P, (kBf16 + reduce) * P);
  if (predivide > 1) reduce_in.elementwise("fsdp.predivide", P, 2 * reduce * P);
  if (!reduce_fp32 && postdivide > 1) view_out.elementwise("fsdp.postdivide", S, 2 * reduce * S);
  if (!reduce_fp32) view_out.cast("fsdp.to_fp32", S, (kBf16 + kFp32) * S);
  return {copy_in.take(), copy_out.take(), reduce_in.take(), view_out.take()};
}

std::vector<RecipeKernel> ddp_bucket_copy_in(double params, int param_tensors) {
  Kernels k;
  k.elementwise("ddp.mul_out", params, 2 * kBf16 * params, param_tensors);
  return k.take();
}

std::vector<RecipeKernel> ddp_bucket_copy_out(double params, int param_tensors) {
  Kernels k;
  k.elementwise("ddp.copy_", params, 2 * kBf16 * params, param_tensors);
  return k.take();
}

RecipeKernel dtensor_cat(double bf16_bytes) {
  Kernels k;
  k.elementwise("dtensor.cat", bf16_bytes / kBf16, 2 * bf16_bytes);
  return k.take().front();
}

std::vector<RecipeKernel> issued_one_op_each(std::vector<RecipeKernel> kernels) {
  for (RecipeKernel& k : kernels) k.host_ops = 1;
  return kernels;
}

}  // namespace commbound::model::recipe
