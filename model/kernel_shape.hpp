// KernelShape: the shape of a real kernel of a training step, the key under which a calibration
// table (calibration/<gpu>.toml, docs/calibration.md) stores its time. The one shape vocabulary of
// commbound: the workload gives each compute op one, the calibration tool measures them, the
// table prices them, the kernels run them.
//
// Three kinds, as the table has three kinds of rows:
//   GemmShape        row-major C[m x n] = op(A) op(B), bf16, layout forward / dgrad / wgrad
//   AttentionShape   flash attention of one direction, q [batch, seq, heads, head_dim],
//                    k and v [batch, seq, kv_heads, head_dim]
//   MemoryBoundShape one of the memory-bound kernels by name (rmsnorm_forward, ..., grad_norm),
//                    over [tokens x width]
// and a fourth that no table row measures: ElementwiseShape, one of the small elementwise,
// reduction or copy kernels a framework launches where our fused kernels run one (PyTorch eager's
// separate cast, pow, mean, rsqrt and mul of an RMSNorm), priced by the bytes it moves at the
// rate the table measured for a kernel of its kind (kernel_table.hpp).
// Each shape knows its FLOPs and its fewest HBM bytes (each input read once, each output written
// once: the convention of docs/calibration.md). They scale a measured neighbour to a missing
// shape, give the roofline of a table's [device] figures and, without a table, the datasheet's.
//
// Host-only and C++17 (the CUDA sources of kernels/ include it): comparisons are written out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

namespace commbound::model {

// The three products of a linear layer Y = X W^T, X [T x in], W [out x in]:
//   forward  Y = X W^T      {m = T,   n = out, k = in}    A [m x k], B stored [n x k]
//   dgrad    dX = dY W      {m = T,   n = in,  k = out}   A [m x k], B stored [k x n]
//   wgrad    dW = dY^T X    {m = out, n = in,  k = T}     A stored [k x m], B [k x n]
enum class GemmLayout { forward, dgrad, wgrad };
// The operands' precision of a matrix product: bf16, or fp8 (e4m3/e5m2 operands with per-tensor or
// per-row scales, bf16 output, as Transformer Engine and torchao's float8 training run them).
enum class Precision { bf16, fp8 };
const char* to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view s);
enum class Direction { forward, backward };

const char* to_string(GemmLayout l);
const char* to_string(Direction d);
std::optional<GemmLayout> parse_gemm_layout(std::string_view s);
std::optional<Direction> parse_direction(std::string_view s);

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  GemmLayout layout = GemmLayout::forward;
  Precision precision = Precision::bf16;  // calibration tables hold bf16 rows only
  // A grouped product: one launch over several products of the same weights' shape (the local
  // experts' GEMMs of an MoE layer, as Transformer Engine's GroupedLinear and cuBLAS's grouped
  // GEMM run them), each product's size along the tokens in launch order: its m (forward,
  // dgrad) or its k (wgrad, which reduces over the tokens). m or k is then their mean, rounded up
  // (the size a table row is looked up by). Empty: one product.
  std::vector<std::int64_t> group;
  // The tokens the product runs over: m (wgrad: k), a group's sum.
  std::int64_t token_rows() const;
  double flops() const;  // 2 m n k, a group's sum over its products
  double bytes() const;  // A, B read (2 B an element, fp8: 1) and bf16 C written: e (mk + kn) + 2 mn, a group's sum
  auto key() const { return std::tie(m, n, k, layout, precision, group); }
};

struct AttentionShape {
  Direction direction = Direction::forward;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  // Sliding-window (local) causal attention: a query sees at most `window` keys, its own and the
  // window - 1 before it (FlashAttention's window_size_left = window - 1); 0: every key the causal
  // mask leaves. Ignored without the causal mask.
  std::int64_t window = 0;
  // The query-key pairs computed per (batch, head): s^2, causal s^2 / 2, with a window w < s
  // s w - w^2 / 2 (the causal half's approximation extended: equal to it at w = s).
  double pairs() const;
  // Forward: QK^T and PV, 4 b heads d pairs(); backward: kAttentionBackwardFlopRatio times the
  // forward.
  double flops() const;
  // bf16; forward reads q, k, v and writes o; backward reads q, k, v, o, dout, writes dq, dk, dv.
  double bytes() const;
  auto key() const { return std::tie(direction, batch, heads, kv_heads, seq, head_dim, causal, window); }
};

// FlashAttention-2's backward does five matrix products to the forward's two (Dao 2023): 2.5 x
// the forward's FLOPs.
inline constexpr double kAttentionBackwardFlopRatio = 2.5;

// The memory-bound kernels' names (memory_bound_op.hpp), the values MemoryBoundShape::op takes.
const std::vector<std::string>& memory_bound_ops();

struct MemoryBoundShape {
  std::string op;  // one of memory_bound_ops()
  std::int64_t tokens = 0, width = 0;
  // The fewest bytes of memory_bound_min_bytes (memory_bound_op.hpp). `op` must be a known name
  // (an always-on check: shapes come from the recipe or from validated tables).
  double bytes() const;
  auto key() const { return std::tie(op, tokens, width); }
};

// How an ElementwiseShape moves its bytes, and so which measured kernel prices it (KernelTable::price;
// PyTorch's names for its paths, ATen's Loops.cuh and CUDALoops.cuh, in brackets):
//   streaming  elementwise and copies on contiguous operands of one dtype, every element read and
//              written once [vectorized_elementwise_kernel]; also float -> bfloat16, which has a
//              vectorized copy of its own;
//   cast       a dtype-converting copy other than float -> bfloat16 (bfloat16 -> float: `x.float()`)
//              [unrolled_elementwise_kernel: a dynamic cast per element, no vector loads];
//   reduction  a reduction over each row, the contiguous dimension (mean, sum, norm) [reduce_kernel,
//              one block's threads along a row];
//   column_reduction  a reduction over the rows, output along the contiguous dimension (a
//              broadcast weight's gradient summed over the tokens) [reduce_kernel, threads along
//              the outputs, vector loads across them];
//   indexed    streaming, but an operand is strided or broadcast: TensorIterator computes every
//              operand's offset per element [elementwise_kernel, launch_legacy_kernel], bound by the
//              SMs' issue rate below HBM bandwidth.
enum class ElementwiseKind { streaming, cast, reduction, indexed, column_reduction };
const char* to_string(ElementwiseKind k);

struct ElementwiseShape {
  std::string op;             // what the framework calls it: "to_fp32", "pow", "mean", "mul", "cat", ...
  std::int64_t elements = 0;  // elements of its largest operand (for reports)
  double bytes = 0;           // HBM bytes it moves: every operand read and every output written once,
                              // at the width of the sectors a strided access touches (recipe's count)
  ElementwiseKind kind = ElementwiseKind::streaming;
  std::int64_t width = 0;   // reductions: the input's contiguous dimension (0: not known)
  double fresh_bytes = 0;   // of `bytes`, those read from what the kernels just before it wrote:
                            // from L2 while its operands fit there (writes and older reads: HBM)
  auto key() const { return std::tie(op, elements, bytes, kind, width, fresh_bytes); }
};

inline bool operator==(const GemmShape& a, const GemmShape& b) { return a.key() == b.key(); }
inline bool operator!=(const GemmShape& a, const GemmShape& b) { return !(a == b); }
inline bool operator<(const GemmShape& a, const GemmShape& b) { return a.key() < b.key(); }
inline bool operator==(const AttentionShape& a, const AttentionShape& b) { return a.key() == b.key(); }
inline bool operator!=(const AttentionShape& a, const AttentionShape& b) { return !(a == b); }
inline bool operator<(const AttentionShape& a, const AttentionShape& b) { return a.key() < b.key(); }
inline bool operator==(const MemoryBoundShape& a, const MemoryBoundShape& b) { return a.key() == b.key(); }
inline bool operator!=(const MemoryBoundShape& a, const MemoryBoundShape& b) { return !(a == b); }
inline bool operator<(const MemoryBoundShape& a, const MemoryBoundShape& b) { return a.key() < b.key(); }
inline bool operator==(const ElementwiseShape& a, const ElementwiseShape& b) { return a.key() == b.key(); }
inline bool operator!=(const ElementwiseShape& a, const ElementwiseShape& b) { return !(a == b); }

// What a compute op runs; std::monostate for the zero-cost synchronisation points and collectives.
using KernelShape = std::variant<std::monostate, GemmShape, AttentionShape, MemoryBoundShape, ElementwiseShape>;

// Whether the kernel is bound by memory, not by its arithmetic: the memory-bound kernels and a
// framework's elementwise ones (what draws memory-bound power, what the energy bound counts so).
bool is_memory_bound(const KernelShape& shape);

// The shape's FLOPs and fewest bytes (0 and 0 for std::monostate; memory-bound and elementwise
// kernels: 0 FLOPs).
double flops(const KernelShape& shape);
double bytes(const KernelShape& shape);

// One line naming a shape: "gemm forward 8192x12288x4096", "attention backward b2 h32/32 s4096
// d128" (" full" appended when not causal), "rmsnorm_forward 8192x4096", "streaming pow 33554432
// elements 268.4 MB"; "" for std::monostate.
std::string describe(const KernelShape& shape);

}  // namespace commbound::model
