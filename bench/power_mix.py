#!/usr/bin/env python3
"""How fast a GEMM runs when the GPU is held at its power limit: sustained mixes of a bf16 GEMM and a
memory-bound copy, the GEMM taking a given share of the GPU's time, each mix run for a few seconds.

A GEMM alone at full clock draws more than an H100 SXM's 700 W limit, so under sustained GEMM work
the board lowers its clock; memory-bound kernels draw far less (about 400 W). A training step mixes
the two, so how much its GEMMs slow down depends on their share of its time. Per mix this prints
the GEMM's median time (CUDA events around each GEMM inside the running stream, over the last two
thirds of the window, after the board has settled), its slowdown against a short burst on a
rested GPU, the copy's, and the board power and SM clock NVML reports (sampled every 20 ms).

Needs a CUDA GPU, PyTorch and nvidia-ml-py:
    PYTHONUNBUFFERED=1 python3 bench/power_mix.py --out DIR [--seconds 3]   -> DIR/power_mix.csv
"""
import argparse
import csv
import os
import statistics
import threading
import time

import torch
import torch.nn.functional as F

BF16 = torch.bfloat16


class PowerSampler:
    """NVML board power (W) and SM clock (MHz) every 20 ms on a thread while the block runs:
    `samples` holds (time, W, MHz); mean_after(t0) averages those taken after t0."""

    def __init__(self):
        import pynvml
        pynvml.nvmlInit()
        self.nvml, self.device = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        self.samples, self.stop = [], threading.Event()

    def _run(self):
        while not self.stop.is_set():
            self.samples.append((time.time(), self.nvml.nvmlDeviceGetPowerUsage(self.device) / 1e3,
                                 self.nvml.nvmlDeviceGetClockInfo(self.device, self.nvml.NVML_CLOCK_SM)))
            time.sleep(0.02)

    def __enter__(self):
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def mean_after(self, t0):
        late = [s for s in self.samples if s[0] > t0]
        if not late:
            return float("nan"), float("nan")
        return statistics.mean(s[1] for s in late), statistics.mean(s[2] for s in late)


def burst_ms(fn, n=20):
    """Median GPU time of fn in a short burst (the board far from its limit)."""
    ev = []
    for _ in range(3):
        fn()
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        ev.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--shares", default="1.0,0.85,0.7,0.55,0.4,0.25")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for M, N, K in ((8192, 8192, 8192), (4096, 12288, 4096)):
        x = torch.randn(M, K, device="cuda", dtype=BF16)
        w = torch.randn(N, K, device="cuda", dtype=BF16)
        src = torch.randn(512 << 20, device="cuda", dtype=BF16)  # 1 GiB
        dst = torch.empty_like(src)
        gemm = lambda: F.linear(x, w)
        copy = lambda: dst.copy_(src)
        time.sleep(1.0)  # let the board cool from what ran before
        g_fast, c_fast = burst_ms(gemm), burst_ms(copy, 5)
        shares = [float(s) for s in a.shares.split(",")] if (M, N, K) == (8192, 8192, 8192) else [1.0, 0.55]
        for share in shares:
            n_g = 4
            n_c = 0 if share >= 1 else max(1, round(n_g * g_fast * (1 - share) / (share * c_fast)))
            with PowerSampler() as power:
                start = time.time()
                gev, cev = [], []
                while time.time() - start < a.seconds:
                    for fn, n, events in ((gemm, n_g, gev), (copy, n_c, cev)):
                        for _ in range(n):
                            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            e0.record()
                            fn()
                            e1.record()
                            events.append((time.time(), e0, e1))
                torch.cuda.synchronize()
            # power samples: wall time after the first third; events: the last two thirds in GPU order
            watts, mhz = power.mean_after(start + a.seconds / 3)
            g = statistics.median(e0.elapsed_time(e1) for _, e0, e1 in gev[len(gev) // 3:])
            c = statistics.median(e0.elapsed_time(e1) for _, e0, e1 in cev[len(cev) // 3:]) if cev else float("nan")
            real_share = n_g * g / (n_g * g + n_c * (c if cev else 0))
            row = dict(m=M, n=N, k=K, target_gemm_share=share, gemm_share=round(real_share, 3), gemms_per_cycle=n_g,
                       copies_per_cycle=n_c, gemm_burst_ms=round(g_fast, 4), gemm_ms=round(g, 4),
                       gemm_slowdown=round(g / g_fast, 4), gemm_tflops=round(2 * M * N * K / g / 1e9, 1),
                       copy_burst_ms=round(c_fast, 4), copy_ms=round(c, 4), copy_slowdown=round(c / c_fast, 4),
                       power_W=round(watts, 1), sm_clock_MHz=round(mhz))
            rows.append(row)
            print(row, flush=True)
            time.sleep(1.0)
        del x, w, src, dst
        torch.cuda.empty_cache()
    with open(os.path.join(a.out, "power_mix.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


if __name__ == "__main__":
    main()
