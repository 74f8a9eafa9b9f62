#include "model/memory_bound_op.hpp"
#include "kernels/device/attention.hpp"
#include "kernels/device/calibrator.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/gemm.hpp"
#include "kernels/device/random_fill.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace commbound::kernels {
namespace {

constexpr std::size_t kAlignBytes = 256;  // cuBLASLt and 16-byte vector kernels want aligned operands

std::size_t align_up(std::size_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

using model::kRopeHeadDim;
using model::MemoryBoundOp;

// A device buffer and how to fill it before timing.
enum class Fill { bf16, f32, f32_non_negative, ids, zero };
struct BufferSpec {
  std::size_t bytes;
  Fill fill;
};

// The vocabulary the embedding and cross-entropy kernels index (Llama-2's); only the embedding's
// table size depends on it, and its kernels touch one row per token.
constexpr std::size_t kEmbeddingVocab = 32000;

// Buffers and launch of a memory-bound op at (tokens T x width W): the kernels' arguments as
// kernels/device/elementwise.hpp states them. buffers[i] is the i-th pointer handed to `launch`.
struct MemoryBoundPlan {
  std::vector<BufferSpec> buffers;
  std::function<Status(const std::vector<void*>&)> launch;
};

MemoryBoundPlan memory_bound_plan(MemoryBoundOp op, std::size_t T, std::size_t W) {
  using u16 = std::uint16_t;
  auto bf = [](std::size_t n) { return BufferSpec{2 * n, Fill::bf16}; };
  auto f32 = [](std::size_t n) { return BufferSpec{4 * n, Fill::f32}; };
  constexpr float kEps = 1e-5f;  // RMSNorm epsilon: Llama-2's rms_norm_eps (its config.json)
  MemoryBoundPlan p;
  switch (op) {
    case MemoryBoundOp::rmsnorm_forward:
      p.buffers = {bf(T * W), bf(W), bf(T * W)};
      p.launch = [=](const std::vector<void*>& b) {
        return rmsnorm_forward(static_cast<u16*>(b[0]), static_cast<u16*>(b[1]), T, W, kEps, static_cast<u16*>(b[2]));
      };
      break;
    case MemoryBoundOp::rmsnorm_backward:
      p.buffers = {bf(T * W), bf(T * W), bf(W), bf(T * W), BufferSpec{4 * W, Fill::zero}};
      p.launch = [=](const std::vector<void*>& b) {
        return rmsnorm_backward(static_cast<u16*>(b[0]), static_cast<u16*>(b[1]), static_cast<u16*>(b[2]), T, W, kEps,
                                static_cast<u16*>(b[3]), static_cast<float*>(b[4]));
      };
      break;
    case MemoryBoundOp::rope_forward:
    case MemoryBoundOp::rope_backward: {
      // Only heads + kv_heads matters to the kernel's traffic: split the width's heads in two.
      const std::size_t n = std::max<std::size_t>(W / kRopeHeadDim, 2);
      RopeShape shape{T, std::min<std::size_t>(T, 8192), n - n / 2, n / 2, kRopeHeadDim};
      p.buffers = {bf(T * shape.heads * kRopeHeadDim), bf(T * shape.kv_heads * kRopeHeadDim),
                   f32(shape.seq * kRopeHeadDim)};
      const bool forward = op == MemoryBoundOp::rope_forward;
      p.launch = [=](const std::vector<void*>& b) {
        auto* q = static_cast<u16*>(b[0]);
        auto* k = static_cast<u16*>(b[1]);
        const auto* table = static_cast<const float*>(b[2]);
        return forward ? rope_forward(q, k, table, shape) : rope_backward(q, k, table, shape);
      };
      break;
    }
    case MemoryBoundOp::swiglu_forward:
      p.buffers = {bf(T * W), bf(T * W), bf(T * W)};
      p.launch = [=](const std::vector<void*>& b) {
        return swiglu_forward(static_cast<u16*>(b[0]), static_cast<u16*>(b[1]), T * W, static_cast<u16*>(b[2]));
      };
      break;
    case MemoryBoundOp::swiglu_backward:
      p.buffers = {bf(T * W), bf(T * W), bf(T * W), bf(T * W), bf(T * W)};
      p.launch = [=](const std::vector<void*>& b) {
        return swiglu_backward(static_cast<u16*>(b[0]), static_cast<u16*>(b[1]), static_cast<u16*>(b[2]), T * W,
                               static_cast<u16*>(b[3]), static_cast<u16*>(b[4]));
      };
      break;
    case MemoryBoundOp::residual_add:
      p.buffers = {bf(T * W), bf(T * W), bf(T * W)};
      p.launch = [=](const std::vector<void*>& b) {
        return residual_add(static_cast<u16*>(b[0]), static_cast<u16*>(b[1]), T * W, static_cast<u16*>(b[2]));
      };
      break;
    case MemoryBoundOp::embedding_forward:
      p.buffers = {BufferSpec{4 * T, Fill::ids}, bf(kEmbeddingVocab * W), bf(T * W)};
      p.launch = [=](const std::vector<void*>& b) {
        return embedding_forward(static_cast<std::int32_t*>(b[0]), static_cast<u16*>(b[1]), T, kEmbeddingVocab, W,
                                 static_cast<u16*>(b[2]));
      };
      break;
    case MemoryBoundOp::embedding_backward:
      p.buffers = {bf(T * W), BufferSpec{4 * T, Fill::ids}, BufferSpec{4 * kEmbeddingVocab * W, Fill::zero}};
      p.launch = [=](const std::vector<void*>& b) {
        return embedding_backward(static_cast<u16*>(b[0]), static_cast<std::int32_t*>(b[1]), T, kEmbeddingVocab, W,
                                  static_cast<float*>(b[2]));
      };
      break;
    case MemoryBoundOp::cross_entropy_forward:
      p.buffers = {bf(T * W), BufferSpec{4 * T, Fill::ids}, f32(T), f32(T)};
      p.launch = [=](const std::vector<void*>& b) {
        return cross_entropy_forward(static_cast<u16*>(b[0]), static_cast<std::int32_t*>(b[1]), T, W,
                                     static_cast<float*>(b[2]), static_cast<float*>(b[3]));
      };
      break;
    case MemoryBoundOp::cross_entropy_backward:
      // lse: random values stand in for the forward's (the kernel's traffic does not depend on them).
      p.buffers = {bf(T * W), BufferSpec{4 * T, Fill::ids}, f32(T), bf(T * W)};
      p.launch = [=](const std::vector<void*>& b) {
        return cross_entropy_backward(static_cast<u16*>(b[0]), static_cast<std::int32_t*>(b[1]),
                                      static_cast<float*>(b[2]), T, W, 1.0f / static_cast<float>(T),
                                      static_cast<u16*>(b[3]));
      };
      break;
    case MemoryBoundOp::adamw: {
      // A shard of any size: the kernel takes float4 groups, so the last group is padded (< 4 values).
      const std::size_t n = (T * W + 3) / 4 * 4;
      p.buffers = {f32(n), f32(n), f32(n), BufferSpec{4 * n, Fill::f32_non_negative}, bf(n)};
      p.launch = [=](const std::vector<void*>& b) {
        return adamw_step(static_cast<float*>(b[0]), static_cast<float*>(b[1]), static_cast<float*>(b[2]),
                          static_cast<float*>(b[3]), static_cast<u16*>(b[4]), n, AdamWParams{});
      };
      break;
    }
    case MemoryBoundOp::grad_norm: {
      const std::size_t n = (T * W + 3) / 4 * 4;  // padded to float4 groups, as AdamW
      p.buffers = {f32(n), BufferSpec{8 * kGradNormPartials, Fill::zero}, BufferSpec{8, Fill::zero}};
      p.launch = [=](const std::vector<void*>& b) {
        return grad_norm_squared(static_cast<float*>(b[0]), n, static_cast<double*>(b[1]), static_cast<double*>(b[2]));
      };
      break;
    }
  }
  return p;
}

Status fill(void* ptr, const BufferSpec& spec, std::uint64_t seed, std::size_t id_bound) {
  switch (spec.fill) {
    case Fill::bf16: return fill_random_bf16(static_cast<std::uint16_t*>(ptr), spec.bytes / 2, seed, 1.0f);
    case Fill::f32: return fill_random_f32(static_cast<float*>(ptr), spec.bytes / 4, seed, 1.0f);
    case Fill::f32_non_negative: return fill_random_f32(static_cast<float*>(ptr), spec.bytes / 4, seed, 1e-3f, true);
    case Fill::ids:
      return fill_random_ids(static_cast<std::int32_t*>(ptr), spec.bytes / 4, seed, static_cast<std::int32_t>(id_bound));
    case Fill::zero: return cuda_check(cudaMemset(ptr, 0, spec.bytes), "cudaMemset");
  }
  return Ok{};
}

}  // namespace

struct Calibrator::State {
  CalibratorOptions options;
  std::size_t l2_bytes = 0;
  // GEMM operands come from one random bf16 arena (inputs) and one output arena; input set i of a
  // shape starts i * set bytes in, so sets never overlap.
  std::unique_ptr<DeviceBuffer<std::uint16_t>> inputs;
  std::unique_ptr<DeviceBuffer<std::uint16_t>> outputs;
  // copy_for's source and destination (allocated on first use).
  std::unique_ptr<DeviceBuffer<char>> copy_src, copy_dst;

  // An arena of at least `bytes` (grown, and refilled with random values, when too small).
  Status ensure(std::unique_ptr<DeviceBuffer<std::uint16_t>>& arena, std::size_t bytes, std::uint64_t seed) {
    if (arena && arena->bytes() >= bytes) return Ok{};
    arena.reset();
    auto b = DeviceBuffer<std::uint16_t>::create(bytes / sizeof(std::uint16_t));
    if (!b) return b.error();
    if (Status s = fill_random_bf16(b->get(), b->count(), seed, 1.0f); !s) return s;
    arena = std::make_unique<DeviceBuffer<std::uint16_t>>(std::move(*b));
    return cuda_check(cudaDeviceSynchronize(), "filling the GEMM arena");
  }
};

Calibrator::Calibrator(std::unique_ptr<State> state) : state_(std::move(state)) {}
Calibrator::~Calibrator() = default;
Calibrator::Calibrator(Calibrator&&) noexcept = default;
Calibrator& Calibrator::operator=(Calibrator&&) noexcept = default;

Expected<Calibrator> Calibrator::create(const CalibratorOptions& options) {
  if (cuda_device_count() == 0) return Error{"no CUDA device: calibration needs a GPU"};
  auto st = std::make_unique<State>();
  st->options = options;
  int device = 0, l2 = 0;
  if (Status s = cuda_check(cudaGetDevice(&device), "cudaGetDevice"); !s) return s.error();
  if (Status s = cuda_check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 size"); !s) {
    return s.error();
  }
  st->l2_bytes = static_cast<std::size_t>(l2);
  return Expected<Calibrator>(Calibrator(std::move(st)));
}

std::size_t Calibrator::l2_bytes() const { return state_->l2_bytes; }

int Calibrator::rotations_for(double bytes) const {
  const double span = state_->options.l2_multiple * static_cast<double>(state_->l2_bytes);
  return std::clamp(static_cast<int>(std::ceil(span / std::max(bytes, 1.0))), 1, 64);
}

TimingOptions Calibrator::timing_options(int rotations) const {
  TimingOptions t;
  t.warmup_runs = state_->options.warmup_runs;
  t.timed_runs = state_->options.min_timed_runs;
  t.max_timed_runs = state_->options.max_timed_runs;
  t.min_total_ms = state_->options.min_total_ms;
  t.rotations = rotations;
  return t;
}

Expected<Percentiles> Calibrator::measure(const model::GemmShape& shape) {
  const auto m = static_cast<std::size_t>(shape.m), n = static_cast<std::size_t>(shape.n);
  const auto k = static_cast<std::size_t>(shape.k);
  const std::size_t a_bytes = align_up(m * k * 2), b_bytes = align_up(k * n * 2);
  const std::size_t c_bytes = align_up(m * n * 2);
  const int sets = rotations_for(static_cast<double>(a_bytes + b_bytes));
  if (Status s = state_->ensure(state_->inputs, sets * (a_bytes + b_bytes), 1); !s) return s.error();
  if (Status s = state_->ensure(state_->outputs, sets * c_bytes, 2); !s) return s.error();
  auto plan = GemmPlan::create(shape, state_->options.gemm_workspace_bytes);
  if (!plan) return plan.error();
  char* in = reinterpret_cast<char*>(state_->inputs->get());
  char* out = reinterpret_cast<char*>(state_->outputs->get());
  auto t = time_kernel(
      [&](int set) {
        const char* a = in + set * (a_bytes + b_bytes);
        return plan->run(reinterpret_cast<const std::uint16_t*>(a), reinterpret_cast<const std::uint16_t*>(a + a_bytes),
                         reinterpret_cast<std::uint16_t*>(out + set * c_bytes));
      },
      timing_options(sets));
  if (t) {
    if (Status s = rest_after(*t); !s) return s.error();
  }
  return t;
}

Status Calibrator::rest_after(const Percentiles& t) {
  const double duty = state_->options.gemm_duty;
  if (duty >= 1) return Ok{};
  return copy_for(t.spent_ms * (1 - duty) / duty);
}

Status Calibrator::copy_for(double ms) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;  // far beyond L2: every copy goes to HBM
  if (!state_->copy_src) {
    auto src = DeviceBuffer<char>::create(kBytes);
    auto dst = DeviceBuffer<char>::create(kBytes);
    if (!src) return src.error();
    if (!dst) return dst.error();
    state_->copy_src = std::make_unique<DeviceBuffer<char>>(std::move(*src));
    state_->copy_dst = std::make_unique<DeviceBuffer<char>>(std::move(*dst));
  }
  // At about 3 TB/s (read + write: the H100 table's measured [device] copy_GBps) one copy takes
  // about 0.18 ms on an H100; a slower GPU only stays busy longer.
  constexpr double kCopyMsAt3TBps = 2.0 * static_cast<double>(kBytes) / 3e12 * 1e3;
  const int copies = std::max(1, static_cast<int>(std::ceil(ms / kCopyMsAt3TBps)));
  for (int i = 0; i < copies; ++i) {
    if (Status s = cuda_check(cudaMemcpyAsync(state_->copy_dst->get(), state_->copy_src->get(), kBytes,
                                              cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
        !s) {
      return s;
    }
  }
  return cuda_check(cudaDeviceSynchronize(), "copy_for");
}

Expected<Percentiles> Calibrator::measure(const model::AttentionShape& shape) {
  if (Status s = check_attention_shape(shape); !s) return s.error();
  const bool backward = shape.direction == model::Direction::backward;
  const std::size_t q_count = static_cast<std::size_t>(shape.batch * shape.seq * shape.heads * shape.head_dim);
  const std::size_t kv_count = static_cast<std::size_t>(shape.batch * shape.seq * shape.kv_heads * shape.head_dim);
  const std::size_t lse_count = static_cast<std::size_t>(shape.batch * shape.heads * shape.seq);
  // What one run reads: forward q, k, v; backward also o and dout.
  const double read_bytes = 2.0 * (q_count * (backward ? 3 : 1) + 2 * kv_count);
  const int sets = rotations_for(read_bytes);
  struct Set {
    DeviceBuffer<std::uint16_t> q, k, v, o, dout, dq, dk, dv;
    DeviceBuffer<float> lse;
    DeviceBuffer<char> workspace;
  };
  std::vector<Set> buffers;
  for (int i = 0; i < sets; ++i) {
    auto q = DeviceBuffer<std::uint16_t>::create(q_count), k = DeviceBuffer<std::uint16_t>::create(kv_count),
         v = DeviceBuffer<std::uint16_t>::create(kv_count), o = DeviceBuffer<std::uint16_t>::create(q_count),
         dout = DeviceBuffer<std::uint16_t>::create(backward ? q_count : 1),
         dq = DeviceBuffer<std::uint16_t>::create(backward ? q_count : 1),
         dk = DeviceBuffer<std::uint16_t>::create(backward ? kv_count : 1),
         dv = DeviceBuffer<std::uint16_t>::create(backward ? kv_count : 1);
    auto lse = DeviceBuffer<float>::create(lse_count);
    auto ws = DeviceBuffer<char>::create(backward ? std::max<std::size_t>(attention_backward_workspace_bytes(shape), 1) : 1);
    for (const Status& s : {q.status(), k.status(), v.status(), o.status(), dout.status(), dq.status(), dk.status(),
                            dv.status(), lse.status(), ws.status()}) {
      if (!s) return s.error();
    }
    Set set{std::move(*q), std::move(*k), std::move(*v), std::move(*o), std::move(*dout), std::move(*dq),
            std::move(*dk), std::move(*dv), std::move(*lse), std::move(*ws)};
    const std::uint64_t seed = 100 + 10 * static_cast<std::uint64_t>(i);
    for (const Status& s : {fill_random_bf16(set.q.get(), q_count, seed, 1.0f),
                            fill_random_bf16(set.k.get(), kv_count, seed + 1, 1.0f),
                            fill_random_bf16(set.v.get(), kv_count, seed + 2, 1.0f),
                            fill_random_bf16(set.dout.get(), set.dout.count(), seed + 3, 1.0f)}) {
      if (!s) return s.error();
    }
    if (backward) {
      if (Status s = attention_forward(shape, set.q.get(), set.k.get(), set.v.get(), set.o.get(), set.lse.get()); !s) {
        return s.error();
      }
    }
    buffers.push_back(std::move(set));
  }
  if (Status s = cuda_check(cudaDeviceSynchronize(), "attention inputs"); !s) return s.error();
  auto t = time_kernel(
      [&](int i) {
        Set& s = buffers[static_cast<std::size_t>(i)];
        if (!backward) return attention_forward(shape, s.q.get(), s.k.get(), s.v.get(), s.o.get(), s.lse.get());
        return attention_backward(shape, s.q.get(), s.k.get(), s.v.get(), s.o.get(), s.dout.get(), s.lse.get(),
                                  s.dq.get(), s.dk.get(), s.dv.get(), s.workspace.get());
      },
      timing_options(sets));
  if (t) {
    if (Status s = rest_after(*t); !s) return s.error();
  }
  return t;
}

Expected<Percentiles> Calibrator::measure(const model::MemoryBoundShape& shape) {
  const auto op = model::memory_bound_op_from_string(shape.op);
  if (!op) return Error{"unknown memory-bound op " + shape.op};
  const auto T = static_cast<std::size_t>(shape.tokens), W = static_cast<std::size_t>(shape.width);
  const double bytes = static_cast<double>(model::memory_bound_min_bytes(*op, T, W));
  const MemoryBoundPlan plan = memory_bound_plan(*op, T, W);
  // Cross-entropy targets index the row's width; embedding ids the table's vocabulary.
  const bool ids_index_width = *op == MemoryBoundOp::cross_entropy_forward || *op == MemoryBoundOp::cross_entropy_backward;
  const std::size_t id_bound = ids_index_width ? W : kEmbeddingVocab;
  const int sets = rotations_for(bytes);
  std::vector<std::vector<DeviceBuffer<char>>> owned(static_cast<std::size_t>(sets));
  std::vector<std::vector<void*>> pointers(static_cast<std::size_t>(sets));
  for (int i = 0; i < sets; ++i) {
    for (std::size_t j = 0; j < plan.buffers.size(); ++j) {
      auto b = DeviceBuffer<char>::create(plan.buffers[j].bytes);
      if (!b) return b.error();
      if (Status s = fill(b->get(), plan.buffers[j], 1000 + 16 * static_cast<std::uint64_t>(i) + j, id_bound); !s) {
        return s.error();
      }
      pointers[static_cast<std::size_t>(i)].push_back(b->get());
      owned[static_cast<std::size_t>(i)].push_back(std::move(*b));
    }
  }
  if (Status s = cuda_check(cudaDeviceSynchronize(), "memory-bound inputs"); !s) return s.error();
  return time_kernel([&](int i) { return plan.launch(pointers[static_cast<std::size_t>(i)]); }, timing_options(sets));
}

Expected<double> Calibrator::copy_bytes_per_s(std::size_t bytes) {
  auto src = DeviceBuffer<char>::create(bytes);
  auto dst = DeviceBuffer<char>::create(bytes);
  if (!src) return src.error();
  if (!dst) return dst.error();
  if (Status s = fill_random_bf16(reinterpret_cast<std::uint16_t*>(src->get()), bytes / 2, 7, 1.0f); !s) {
    return s.error();
  }
  TimingOptions o = timing_options(1);
  o.timed_runs = 20;
  auto t = time_kernel(
      [&](int) {
        return cuda_check(cudaMemcpyAsync(dst->get(), src->get(), bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
      },
      o);
  if (!t) return t.error();
  return 2.0 * static_cast<double>(bytes) / (t->p50_ms * 1e-3);
}

}  // namespace commbound::kernels
