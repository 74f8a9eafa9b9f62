// GPU kernels: the memory-bound ones against the device's copy bandwidth, measured in the same run
// (the kernels issue asks for at least 70%), and the GEMM shape in TFLOP/s (target 700 on
// an H100). Memory-bound: AdamW over a 256M-parameter fp32 shard, RMSNorm and
// SwiGLU on Llama-7B activation shapes (8192 tokens). Median of 20 timed runs after 3 warm-ups
// (kernels/timing.hpp).
// Needs a GPU; prints one line and exits 0 without one.
//
//   build/bin/bench_kernels
#include "kernels/cuda_support.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

using namespace commbound;
using namespace commbound::kernels;

namespace {

// Median milliseconds of `launch` over 20 runs after 3 warm-ups, or a negative value on error.
float median_millis(const std::function<Status()>& launch) {
  auto t = time_kernel([&](int) { return launch(); }, TimingOptions{});
  if (!t) {
    std::printf("%s\n", t.error().message.c_str());
    return -1;
  }
  return static_cast<float>(t->p50_ms);
}

// Zeroes the buffers (inputs of defined value); false, with the error printed, on failure.
template <class... Buffers>
bool zero(const Buffers&... buffers) {
  for (const Status& s : {buffers.fill_bytes(0)...}) {
    if (!s) {
      std::printf("%s\n", s.error().message.c_str());
      return false;
    }
  }
  return true;
}

void report(const char* what, double bytes, float ms, double copy_bytes_per_s) {
  const double rate = bytes / (ms * 1e-3);
  std::printf("%-44s %8.3f ms  %7.1f GB/s  %5.1f%% of copy\n", what, ms, rate / 1e9, 100 * rate / copy_bytes_per_s);
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
  const float copy_ms = median_millis([&] {
    return cuda_check(cudaMemcpy(dst->get(), src->get(), copy_bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  });
  const double copy_rate = 2.0 * copy_bytes / (copy_ms * 1e-3);  // read + write
  std::printf("%-44s %8.3f ms  %7.1f GB/s\n", "device-to-device copy, 1 GiB (read + write)", copy_ms, copy_rate / 1e9);

  const std::size_t params = std::size_t{1} << 28;
  auto p = DeviceBuffer<float>::create(params);
  auto g = DeviceBuffer<float>::create(params);
  auto m = DeviceBuffer<float>::create(params);
  auto v = DeviceBuffer<float>::create(params);
  auto b = DeviceBuffer<std::uint16_t>::create(params);
  if (!p || !g || !m || !v || !b) return 1;
  if (!zero(*p, *g, *m, *v)) return 1;
  AdamWParams ap;
  const float adam_ms = median_millis([&] { return adamw_step(p->get(), g->get(), m->get(), v->get(), b->get(), params, ap); });
  report("AdamW, 256M fp32 params (30 B/param)", 30.0 * params, adam_ms, copy_rate);

  const std::size_t tokens = 8192, hidden = 4096, ffn = 11008;
  auto x = DeviceBuffer<std::uint16_t>::create(tokens * hidden);
  auto w = DeviceBuffer<std::uint16_t>::create(hidden);
  auto y = DeviceBuffer<std::uint16_t>::create(tokens * hidden);
  if (!x || !w || !y) return 1;
  if (!zero(*x, *w)) return 1;
  const float norm_ms = median_millis([&] { return rmsnorm_forward(x->get(), w->get(), tokens, hidden, 1e-5f, y->get()); });
  report("RMSNorm forward, 8192 x 4096 bf16", 2.0 * 2 * tokens * hidden, norm_ms, copy_rate);

  auto gate = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  auto up = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  auto out = DeviceBuffer<std::uint16_t>::create(tokens * ffn);
  if (!gate || !up || !out) return 1;
  if (!zero(*gate, *up)) return 1;
  const float swiglu_ms = median_millis([&] { return swiglu_forward(gate->get(), up->get(), tokens * ffn, out->get()); });
  report("SwiGLU forward, 8192 x 11008 bf16", 3.0 * 2 * tokens * ffn, swiglu_ms, copy_rate);

  // The GEMM target: 8192 x 4096 x 12288 bf16 at >= 700 TFLOP/s on an H100.
  const kernels::GemmShape big{8192, 4096, 12288, false, false};
  auto ga = DeviceBuffer<std::uint16_t>::create(big.m * big.k);
  auto gb = DeviceBuffer<std::uint16_t>::create(big.k * big.n);
  auto gc = DeviceBuffer<std::uint16_t>::create(big.m * big.n);
  if (!ga || !gb || !gc || !zero(*ga, *gb)) return 1;
  auto plan = kernels::GemmPlan::create(big, std::size_t{32} << 20);
  if (!plan) {
    std::printf("%s\n", plan.error().message.c_str());
    return 1;
  }
  const float gemm_ms = median_millis([&] { return plan->run(ga->get(), gb->get(), gc->get()); });
  std::printf("%-44s %8.3f ms  %7.1f TFLOP/s\n", "GEMM 8192 x 4096 x 12288 bf16 (cuBLASLt)", gemm_ms,
              2.0 * big.m * big.n * big.k / (gemm_ms * 1e-3) / 1e12);
  return 0;
}
