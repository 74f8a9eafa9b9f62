// GPU kernels: the memory-bound ones against the device's copy bandwidth, measured in the same run
// (the kernels issue asks for at least 70%), and the GEMM shape in TFLOP/s (target 700 on
// an H100), fresh and under sustained load. Memory-bound: every kernel of kernels/device/elementwise.hpp on Llama-7B shapes (8192 tokens,
// hidden 4096, ffn 11008, 32 + 32 heads of 128, vocab 32000; AdamW and the gradient norm over a
// 256M-parameter fp32 shard), on random inputs (kernels/device/random_fill.hpp), each rated by the fewest
// bytes it must move (model/memory_bound_op.hpp states the formula of each). Median of 20 timed
// runs after 3 warm-ups (kernels/device/timing.hpp).
// Needs a GPU; prints one line and exits 0 without one.
//
//   build/bin/bench_kernels
#include "bench/bench_support.hpp"
#include "model/memory_bound_op.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/elementwise.hpp"
#include "kernels/device/gemm.hpp"
#include "kernels/host/power_sampler.hpp"
#include "kernels/device/random_fill.hpp"
#include "kernels/device/timing.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

using namespace commbound;
using namespace commbound::kernels;
using commbound::bench::all_ok;
using commbound::model::MemoryBoundOp;
using commbound::model::memory_bound_min_bytes;
using commbound::bench::median_millis;

namespace {

// Times `launch` and prints its line: ms, and the rate at which it moves the op's fewest bytes at
// (tokens x width), memory_bound_min_bytes, in GB/s and as a share of the copy's. False on error.
bool bench_memory_bound(MemoryBoundOp op, std::size_t tokens, std::size_t width, const char* shape,
                        double copy_bytes_per_s, const std::function<Status()>& launch) {
  const double ms = median_millis(launch);
  if (ms < 0) return false;
  const double rate = static_cast<double>(memory_bound_min_bytes(op, tokens, width)) / (ms * 1e-3);
  const std::string what = std::string(to_string(op)) + ", " + shape;
  std::printf("%-44s %8.3f ms  %7.1f GB/s  %5.1f%% of copy\n", what.c_str(), ms, rate / 1e9,
              100 * rate / copy_bytes_per_s);
  return true;
}

}  // namespace

int main() {
  if (cuda_device_count() == 0) {
    std::printf("bench_kernels: no CUDA device, nothing measured\n");
    return 0;
  }
  const std::size_t copy_bytes = std::size_t{1} << 30;
  auto src = DeviceBuffer<char>::create(copy_bytes);
  auto dst = DeviceBuffer<char>::create(copy_bytes);
  if (!src || !dst) return 1;
  const double copy_ms = median_millis([&] {
    return cuda_check(cudaMemcpy(dst->get(), src->get(), copy_bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  });
  const double copy_rate = 2.0 * copy_bytes / (copy_ms * 1e-3);  // read + write
  std::printf("%-44s %8.3f ms  %7.1f GB/s\n", "device-to-device copy, 1 GiB (read + write)", copy_ms, copy_rate / 1e9);

  // Optimizer over a 256M-parameter fp32 shard: AdamW (30 B a parameter) and the gradient norm
  // (4 B a parameter).
  const std::size_t params = std::size_t{1} << 28;
  auto p = DeviceBuffer<float>::create(params);
  auto g = DeviceBuffer<float>::create(params);
  auto m = DeviceBuffer<float>::create(params);
  auto v = DeviceBuffer<float>::create(params);
  auto b = DeviceBuffer<std::uint16_t>::create(params);
  auto partials = DeviceBuffer<double>::create(kGradNormPartials);
  auto sum_sq = DeviceBuffer<double>::create(1);
  if (!p || !g || !m || !v || !b || !partials || !sum_sq) return 1;
  if (!all_ok({fill_random_f32(p->get(), params, 1, 0.02f), fill_random_f32(g->get(), params, 2, 1e-3f),
               fill_random_f32(m->get(), params, 3, 1e-3f), fill_random_f32(v->get(), params, 4, 1e-6f, true)})) {
    return 1;
  }
  AdamWParams ap;
  if (!bench_memory_bound(MemoryBoundOp::adamw, 1, params, "256M fp32 params", copy_rate, [&] {
        return adamw_step(p->get(), g->get(), m->get(), v->get(), b->get(), params, ap);
      }) ||
      !bench_memory_bound(MemoryBoundOp::grad_norm, 1, params, "256M fp32 params", copy_rate,
                          [&] { return grad_norm_squared(g->get(), params, partials->get(), sum_sq->get()); })) {
    return 1;
  }

  // Activations of Llama-7B at 8192 tokens (batch 2 x seq 4096), bf16.
  const std::size_t tokens = 8192, seq = 4096, hidden = 4096, ffn = 11008, vocab = 32000;
  auto x = DeviceBuffer<std::uint16_t>::create(tokens * hidden);
  auto dy = DeviceBuffer<std::uint16_t>::create(tokens * hidden);
  auto y = DeviceBuffer<std::uint16_t>::create(tokens * hidden);
  auto w = DeviceBuffer<std::uint16_t>::create(hidden);
  auto dw = DeviceBuffer<float>::create(hidden);
  if (!x || !dy || !y || !w || !dw) return 1;
  if (!all_ok({fill_random_bf16(x->get(), x->count(), 5, 1.0f), fill_random_bf16(dy->get(), dy->count(), 6, 1.0f),
               fill_random_bf16(w->get(), hidden, 7, 0.5f), dw->fill_bytes(0)})) {
    return 1;
  }
  // rmsnorm_backward accumulates into dw on every run: its value grows, its cost does not.
  if (!bench_memory_bound(MemoryBoundOp::rmsnorm_forward, tokens, hidden, "8192 x 4096 bf16", copy_rate,
                          [&] { return rmsnorm_forward(x->get(), w->get(), tokens, hidden, 1e-5f, y->get()); }) ||
      !bench_memory_bound(MemoryBoundOp::rmsnorm_backward, tokens, hidden, "8192 x 4096 bf16", copy_rate, [&] {
        return rmsnorm_backward(dy->get(), x->get(), w->get(), tokens, hidden, 1e-5f, y->get(), dw->get());
      }) ||
      !bench_memory_bound(MemoryBoundOp::residual_add, tokens, hidden, "8192 x 4096 bf16", copy_rate,
                          [&] { return residual_add(x->get(), dy->get(), tokens * hidden, y->get()); })) {
    return 1;
  }

  // RoPE on q and k, 32 heads each (Llama-7B has no grouped KV), in place.
  const RopeShape rope_shape{tokens, seq, 32, 32, 128};
  const std::size_t rope_width = (rope_shape.heads + rope_shape.kv_heads) * rope_shape.head_dim;
  auto q = DeviceBuffer<std::uint16_t>::create(tokens * rope_shape.heads * rope_shape.head_dim);
  auto k = DeviceBuffer<std::uint16_t>::create(tokens * rope_shape.kv_heads * rope_shape.head_dim);
  const std::vector<float> table = rope_table(seq, rope_shape.head_dim);
  auto cos_sin = DeviceBuffer<float>::create(table.size());
  if (!q || !k || !cos_sin) return 1;
  if (!all_ok({fill_random_bf16(q->get(), q->count(), 8, 1.0f), fill_random_bf16(k->get(), k->count(), 9, 1.0f),
               cos_sin->upload(table.data())})) {
    return 1;
  }
  if (!bench_memory_bound(MemoryBoundOp::rope_forward, tokens, rope_width, "8192 x (32 + 32) x 128 bf16", copy_rate,
                          [&] { return rope_forward(q->get(), k->get(), cos_sin->get(), rope_shape); }) ||
      !bench_memory_bound(MemoryBoundOp::rope_backward, tokens, rope_width, "8192 x (32 + 32) x 128 bf16", copy_rate,
                          [&] { return rope_backward(q->get(), k->get(), cos_sin->get(), rope_shape); })) {
    return 1;
  }

  auto gate = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  auto up = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  auto dout = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  auto out = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  auto dup = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  if (!gate || !up || !dout || !out || !dup) return 1;
  if (!all_ok({fill_random_bf16(gate->get(), gate->count(), 10, 2.0f), fill_random_bf16(up->get(), up->count(), 11, 1.0f),
               fill_random_bf16(dout->get(), dout->count(), 12, 1.0f)})) {
    return 1;
  }
  if (!bench_memory_bound(MemoryBoundOp::swiglu_forward, tokens, ffn, "8192 x 11008 bf16", copy_rate,
                          [&] { return swiglu_forward(gate->get(), up->get(), tokens * ffn, out->get()); }) ||
      !bench_memory_bound(MemoryBoundOp::swiglu_backward, tokens, ffn, "8192 x 11008 bf16", copy_rate, [&] {
        return swiglu_backward(dout->get(), gate->get(), up->get(), tokens * ffn, out->get(), dup->get());
      })) {
    return 1;
  }

  // Embedding: gather rows of a [32000 x 4096] bf16 table; the backward scatter-adds into fp32.
  auto ids = DeviceBuffer<std::int32_t>::create(tokens);
  auto embed = DeviceBuffer<std::uint16_t>::create(vocab * hidden);
  auto dembed = DeviceBuffer<float>::create(vocab * hidden);
  if (!ids || !embed || !dembed) return 1;
  if (!all_ok({fill_random_ids(ids->get(), tokens, 13, static_cast<std::int32_t>(vocab)),
               fill_random_bf16(embed->get(), embed->count(), 14, 1.0f), dembed->fill_bytes(0)})) {
    return 1;
  }
  if (!bench_memory_bound(MemoryBoundOp::embedding_forward, tokens, hidden, "8192 of 32000 x 4096 bf16", copy_rate,
                          [&] { return embedding_forward(ids->get(), embed->get(), tokens, vocab, hidden, y->get()); }) ||
      !bench_memory_bound(MemoryBoundOp::embedding_backward, tokens, hidden, "8192 of 32000 x 4096 fp32", copy_rate,
                          [&] {
                            return embedding_backward(dy->get(), ids->get(), tokens, vocab, hidden, dembed->get());
                          })) {
    return 1;
  }

  // Cross-entropy over the LM head's bf16 logits [8192 x 32000], gradient scaled by 1 / tokens.
  auto logits = DeviceBuffer<std::uint16_t>::create(tokens * vocab);
  auto dlogits = DeviceBuffer<std::uint16_t>::create(tokens * vocab);
  auto targets = DeviceBuffer<std::int32_t>::create(tokens);
  auto loss = DeviceBuffer<float>::create(tokens);
  auto lse = DeviceBuffer<float>::create(tokens);
  if (!logits || !dlogits || !targets || !loss || !lse) return 1;
  if (!all_ok({fill_random_bf16(logits->get(), logits->count(), 15, 2.0f),
               fill_random_ids(targets->get(), tokens, 16, static_cast<std::int32_t>(vocab))})) {
    return 1;
  }
  const float grad_scale = 1.0f / static_cast<float>(tokens);
  if (!bench_memory_bound(MemoryBoundOp::cross_entropy_forward, tokens, vocab, "8192 x 32000 bf16", copy_rate, [&] {
        return cross_entropy_forward(logits->get(), targets->get(), tokens, vocab, loss->get(), lse->get());
      }) ||
      !bench_memory_bound(MemoryBoundOp::cross_entropy_backward, tokens, vocab, "8192 x 32000 bf16", copy_rate, [&] {
        return cross_entropy_backward(logits->get(), targets->get(), lse->get(), tokens, vocab, grad_scale,
                                      dlogits->get());
      })) {
    return 1;
  }

  // The GEMM target: 8192 x 4096 x 12288 bf16 at >= 700 TFLOP/s on an H100, in the three
  // layouts of a linear layer, on random inputs. An H100 SXM at its 700 W limit lowers its clocks
  // under sustained random-data GEMMs, so each layout is timed twice: right after 2 s of idle
  // ("fresh") and after 3 s of back-to-back GEMMs ("sustained"), with the SM clock NVML reads
  // then. One line on zero inputs shows how much zeros flatter a GEMM (less switching power).
  const std::size_t gm = 8192, gn = 4096, gk = 12288;
  auto ga = DeviceBuffer<std::uint16_t>::create(gm * gk);
  auto gb = DeviceBuffer<std::uint16_t>::create(gk * std::max(gn, gm));
  auto gc = DeviceBuffer<std::uint16_t>::create(gm * std::max(gn, gm));
  if (!all_ok({ga.status(), gb.status(), gc.status()})) return 1;
  auto nvml = Nvml::open(0);
  auto clock = [&]() { return nvml ? nvml->sm_clock_mhz().has_value() ? *nvml->sm_clock_mhz() : 0.0 : 0.0; };
  auto gemm_line = [&](const char* what, const GemmShape& shape, bool random) -> bool {
    if (!all_ok({random ? fill_random_bf16(ga->get(), ga->count(), 31, 1.0f) : ga->fill_bytes(0),
                 random ? fill_random_bf16(gb->get(), gb->count(), 32, 1.0f) : gb->fill_bytes(0)})) {
      return false;
    }
    auto plan = GemmPlan::create(shape, std::size_t{32} << 20);
    if (!plan) {
      std::printf("%s\n", plan.error().message.c_str());
      return false;
    }
    auto run = [&] { return plan->run(ga->get(), gb->get(), gc->get()); };
    const double flops = shape.flops();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double fresh_ms = median_millis(run);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 20; ++i) {
        if (!all_ok({run()})) return false;
      }
      if (!all_ok({cuda_check(cudaDeviceSynchronize(), "sync")})) return false;
    }
    const double sustained_ms = median_millis(run);
    const double mhz = clock();
    if (fresh_ms < 0 || sustained_ms < 0) return false;
    std::printf("%-44s fresh %6.1f TFLOP/s, sustained %6.1f TFLOP/s at %4.0f MHz\n", what,
                flops / (fresh_ms * 1e-3) / 1e12, flops / (sustained_ms * 1e-3) / 1e12, mhz);
    return true;
  };
  auto shape = [](std::size_t m, std::size_t n, std::size_t k, GemmLayout layout) {
    return GemmShape{static_cast<std::int64_t>(m), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k), layout};
  };
  const bool gemms_ok =
      gemm_line("GEMM 8192x4096x12288 forward (A B^T)", shape(gm, gn, gk, GemmLayout::forward), true) &&
      gemm_line("GEMM 8192x4096x12288 dgrad (A B)", shape(gm, gn, gk, GemmLayout::dgrad), true) &&
      gemm_line("GEMM 8192x4096x12288 wgrad (A^T B)", shape(gm, gn, gk, GemmLayout::wgrad), true) &&
      gemm_line("GEMM 8192x8192x8192 forward", shape(gm, gm, gm, GemmLayout::forward), true) &&
      gemm_line("GEMM 8192x4096x12288 dgrad, ZERO inputs", shape(gm, gn, gk, GemmLayout::dgrad), false);
  if (!gemms_ok) return 1;
  return 0;
}
