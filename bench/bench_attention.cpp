// Flash attention (kernels/device/attention.hpp) forward and backward in TFLOP/s, causal, batch 2. The
// attention issue's acceptance shape is 32 heads, seq 4096, head_dim 128 on an H100 SXM: forward
// and forward + backward at >= 0.6 of PyTorch SDPA's flash backend (FlashAttention-2: about
// 300-350 TFLOP/s forward, 200-250 backward there). Also seq 2048 and 8192, head_dim 64, and GQA
// (8 KV heads). Random inputs (kernels/device/random_fill.hpp); median of 20 timed runs after 3 warm-ups
// (kernels/device/timing.hpp).
//
// FLOPs, FlashAttention's convention: forward 4 b h s^2 d (Q K^T and P V, 2 s^2 d each per head),
// halved for causal (the unmasked half); backward 2.5 x the forward (five products).
// Needs a GPU; prints one line and exits 0 without one.
//
//   build/bin/bench_attention          a table
//   build/bin/bench_attention --csv    direction,batch,heads,kv_heads,seq,head_dim,p50_ms,tflops
//                                      (read by bench/attention_vs_sdpa.py)
#include "bench/bench_support.hpp"
#include "kernels/device/attention.hpp"
#include "kernels/device/cuda_support.hpp"
#include "kernels/device/random_fill.hpp"
#include "kernels/device/timing.hpp"

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <tuple>

using namespace commbound;
using namespace commbound::kernels;
using commbound::bench::all_ok;
using commbound::bench::median_millis;

namespace {

// Executed FLOPs of each pass: model/'s formula (model/kernel_shape.hpp).
double pass_flops(AttentionShape s, Direction direction) {
  s.direction = direction;
  return s.flops();
}

// Times one shape's forward and backward and prints its line; false on error.
bool bench_shape(const AttentionShape& s, bool csv) {
  const std::size_t q_count = static_cast<std::size_t>(s.batch) * s.seq * s.heads * s.head_dim;
  const std::size_t kv_count = static_cast<std::size_t>(s.batch) * s.seq * s.kv_heads * s.head_dim;
  auto q = DeviceBuffer<std::uint16_t>::create(q_count);
  auto k = DeviceBuffer<std::uint16_t>::create(kv_count);
  auto v = DeviceBuffer<std::uint16_t>::create(kv_count);
  auto o = DeviceBuffer<std::uint16_t>::create(q_count);
  auto dout = DeviceBuffer<std::uint16_t>::create(q_count);
  auto dq = DeviceBuffer<std::uint16_t>::create(q_count);
  auto dk = DeviceBuffer<std::uint16_t>::create(kv_count);
  auto dv = DeviceBuffer<std::uint16_t>::create(kv_count);
  auto lse = DeviceBuffer<float>::create(static_cast<std::size_t>(s.batch) * s.heads * s.seq);
  auto workspace = DeviceBuffer<unsigned char>::create(attention_backward_workspace_bytes(s));
  if (!all_ok({q.status(), k.status(), v.status(), o.status(), dout.status(), dq.status(), dk.status(), dv.status(),
               lse.status(), workspace.status()})) {
    return false;
  }
  if (!all_ok({fill_random_bf16(q->get(), q_count, 1, 1.0f), fill_random_bf16(k->get(), kv_count, 2, 1.0f),
               fill_random_bf16(v->get(), kv_count, 3, 1.0f), fill_random_bf16(dout->get(), q_count, 4, 1.0f)})) {
    return false;
  }
  auto forward = [&] { return attention_forward(s, q->get(), k->get(), v->get(), o->get(), lse->get()); };
  auto backward = [&] {
    return attention_backward(s, q->get(), k->get(), v->get(), o->get(), dout->get(), lse->get(), dq->get(), dk->get(),
                              dv->get(), workspace->get());
  };
  const double fwd_ms = median_millis(forward);  // also leaves o and lse for the backward
  if (fwd_ms < 0) return false;
  const double bwd_ms = median_millis(backward);
  if (bwd_ms < 0) return false;
  const double fwd = pass_flops(s, Direction::forward);
  const double bwd = pass_flops(s, Direction::backward);
  if (csv) {
    for (auto [direction, ms, flops] : {std::tuple{"forward", fwd_ms, fwd}, std::tuple{"backward", bwd_ms, bwd}}) {
      std::printf("%s,%d,%d,%d,%d,%d,%.6g,%.6g\n", direction, s.batch, s.heads, s.kv_heads, s.seq, s.head_dim, ms,
                  flops / (ms * 1e-3) / 1e12);
    }
    return true;
  }
  std::printf("b%d h%-2d kv%-2d s%-5d d%-3d %-6s  fwd %7.3f ms %6.1f TFLOP/s  bwd %7.3f ms %6.1f TFLOP/s  "
              "fwd+bwd %6.1f TFLOP/s\n",
              s.batch, s.heads, s.kv_heads, s.seq, s.head_dim, s.causal ? "causal" : "full", fwd_ms,
              fwd / (fwd_ms * 1e-3) / 1e12, bwd_ms, bwd / (bwd_ms * 1e-3) / 1e12,
              (fwd + bwd) / ((fwd_ms + bwd_ms) * 1e-3) / 1e12);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool csv = argc > 1 && std::string(argv[1]) == "--csv";
  if (cuda_device_count() == 0) {
    std::printf("bench_attention: no CUDA device, nothing measured\n");
    return 0;
  }
  const AttentionShape shapes[] = {
      {Direction::forward, 2, 32, 32, 4096, 128, true},  // the acceptance shape
      {Direction::forward, 2, 32, 32, 2048, 128, true}, {Direction::forward, 2, 32, 32, 8192, 128, true}, {Direction::forward, 2, 32, 32, 4096, 64, true},
      {Direction::forward, 2, 32, 8, 4096, 128, true},   // GQA
  };
  if (csv) std::printf("direction,batch,heads,kv_heads,seq,head_dim,p50_ms,tflops\n");
  for (const AttentionShape& s : shapes) {
    if (!bench_shape(s, csv)) return 1;
  }
  return 0;
}
