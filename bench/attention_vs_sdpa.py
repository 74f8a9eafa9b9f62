#!/usr/bin/env python3
"""Our flash attention beside PyTorch's scaled_dot_product_attention, same GPU, same run.

PyTorch's SDPA is restricted in turn to its flash-attention backend (FlashAttention-2, what the
study used) and to its cuDNN backend. Our kernel's times come from `bench_attention --csv` (run
by this script). Prints, per shape, forward and backward milliseconds and TFLOP/s, and the ratios
(our speed / theirs = their time / ours). The kernels issue asks for >= 0.6 of the flash
backend's speed, forward and forward + backward, at batch 2, 32 heads, seq 4096, head dim 128,
causal.

With --shapes FILE --rows-out FILE it also times the cuDNN backend (or, with --rows-backend flash,
the flash backend) at every [[attention]] row of a shapes file (commbound-calibrate
--list-shapes, `commbound shapes`, or a calibration table), causal or not, and writes them as calibration rows (implementation =
"cudnn" or "flash2") for `commbound-calibrate --add-rows`.

  python3 bench/attention_vs_sdpa.py --bench build/bin/bench_attention
  python3 bench/attention_vs_sdpa.py --bench build/bin/bench_attention --shapes grid.toml --rows-out cudnn.toml
  python3 bench/attention_vs_sdpa.py --shapes grid.toml --rows-out cudnn.toml     (the rows alone)

Times are GPU time only: the host's dispatch is held out of them (time_ms).

FLOPs: forward 4 b h s^2 d, halved under a causal mask; backward 2.5x forward (5 matrix products
to the forward's 2, Dao 2023). Needs a CUDA GPU and PyTorch >= 2.5.
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import tomllib

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [  # (batch, heads, kv_heads, seq, head_dim): the shape first
    (2, 32, 32, 4096, 128),
    (2, 32, 32, 2048, 128),
    (2, 32, 32, 8192, 128),
    (2, 32, 32, 4096, 64),
    (2, 32, 8, 4096, 128),
]


def flops(b, h, s, d, causal=True, backward=False):
    f = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    return 2.5 * f if backward else f


def percentiles(samples):
    s = sorted(samples)
    at = lambda q: s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]
    return at(0.1), at(0.5), at(0.9)


HOLD_CYCLES = 2_000_000  # about 1 ms at H100's 1980 MHz: longer than the host takes to issue one SDPA call


def time_ms(fn, warmup=3, runs=20):
    """Per-run milliseconds of GPU time by CUDA events. Before each run a sleep kernel holds the GPU
    while the host issues the start event, the call and the stop event, so that the events bracket
    the kernels and not the host's dispatch (cuDNN SDPA spends 50-150 us of CPU before its first
    kernel, which an idle GPU would count; commbound prices the host side separately). Runs where
    the sleep ended before the host had issued everything are dropped (counted on stderr)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out, late = [], 0
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(HOLD_CYCLES)
        held = torch.cuda.Event()
        held.record()
        start.record()
        fn()
        stop.record()
        if held.query():
            late += 1
        stop.synchronize()
        out.append(start.elapsed_time(stop))
    if late:
        print(f"  time_ms: {late} of {runs} runs issued after the GPU hold ended (host time included)", file=sys.stderr)
    return out


def sdpa_times(backend, b, h, kv, s, d, runs=20, causal=True):
    """(forward samples, backward samples) in ms for one backend, or None if it refuses the shape."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda heads: torch.randn(b, s, heads, d, device="cuda", dtype=torch.bfloat16, generator=gen).transpose(1, 2)
    q, k, v = mk(h).requires_grad_(), mk(kv).requires_grad_(), mk(kv).requires_grad_()
    dout = mk(h)
    gqa = {"enable_gqa": True} if kv != h else {}
    try:
        with sdpa_kernel([backend]):
            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
            out = fwd()
            fwd_ms = time_ms(lambda: fwd(), runs=runs)
            bwd_ms = time_ms(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), runs=runs)
    except RuntimeError as e:
        print(f"  {backend.name}: not available for b{b} h{h}/{kv} s{s} d{d}: {str(e).splitlines()[0][:100]}",
              file=sys.stderr)
        return None
    return fwd_ms, bwd_ms


def ours(bench):
    """{(b, h, kv, s, d): (fwd_ms, bwd_ms)} from `bench_attention --csv`."""
    text = subprocess.run([bench, "--csv"], check=True, capture_output=True, text=True).stdout
    result = {}
    for row in csv.DictReader(io.StringIO(text)):
        key = tuple(int(row[k]) for k in ("batch", "heads", "kv_heads", "seq", "head_dim"))
        result.setdefault(key, {})[row["direction"]] = float(row["p50_ms"])
    return {k: (v.get("forward"), v.get("backward")) for k, v in result.items()}


def compare(bench):
    our = ours(bench)
    print(f"GPU: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    print("causal bf16; ms (TFLOP/s); ratio = our speed / theirs (their time / ours)\n")
    header = f"{'b h/kv s d':>20} {'impl':>8} {'fwd ms':>16} {'bwd ms':>16} {'fwd+bwd ms':>12} {'ratio fwd':>9} {'ratio f+b':>9}"
    print(header)
    for b, h, kv, s, d in SHAPES:
        mine = our.get((b, h, kv, s, d))
        rows = {"ours": mine}
        for backend, name in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):
            t = sdpa_times(backend, b, h, kv, s, d)
            rows[name] = (statistics.median(t[0]), statistics.median(t[1])) if t else None
        for name, t in rows.items():
            label = f"b{b} h{h}/{kv} s{s} d{d}"
            if not t or t[0] is None:
                print(f"{label:>20} {name:>8} {'n/a':>16}")
                continue
            f_ms, b_ms = t
            fb = f_ms + b_ms
            cell = lambda ms, back: f"{ms:7.3f} ({flops(b, h, s, d, backward=back) / ms / 1e9:4.0f})"
            ratio_f = ratio_fb = ""
            if name != "ours" and mine and mine[0] and mine[1]:
                ratio_f = f"{f_ms / mine[0]:9.2f}"
                ratio_fb = f"{fb / (mine[0] + mine[1]):9.2f}"
            print(f"{label:>20} {name:>8} {cell(f_ms, False):>16} {cell(b_ms, True):>16} {fb:12.3f} {ratio_f:>9} {ratio_fb:>9}")


ROW_BACKENDS = {"cudnn": (SDPBackend.CUDNN_ATTENTION, "cudnn", "cuDNN fused attention"),
                "flash": (SDPBackend.FLASH_ATTENTION, "flash2", "FlashAttention-2")}


def sdpa_rows(shapes_path, rows_out, backend_name):
    with open(shapes_path, "rb") as f:
        shapes = tomllib.load(f).get("attention", [])
    seen, text = set(), io.StringIO()
    backend, implementation, what = ROW_BACKENDS[backend_name]
    text.write(f"# {what} through PyTorch {torch.__version__} SDPA (cuDNN {torch.backends.cudnn.version()}), GPU time only,\n")
    text.write(f"# {torch.cuda.get_device_name()}: written by bench/attention_vs_sdpa.py for commbound-calibrate --add-rows\n")
    for row in shapes:
        key = (row["batch"], row["heads"], row["kv_heads"], row["seq"], row["head_dim"])
        causal = row.get("causal", True)
        if (key, causal) in seen:
            continue
        seen.add((key, causal))
        t = sdpa_times(backend, *key, runs=10, causal=causal)
        if t is None:
            continue
        for direction, samples in (("forward", t[0]), ("backward", t[1])):
            p10, p50, p90 = percentiles(samples)
            b, h, kv, s, d = key
            text.write(f'\n[[attention]]\nimplementation = "{implementation}"\ndirection = "{direction}"\nbatch = {b}\n'
                       f"heads = {h}\nkv_heads = {kv}\nseq = {s}\nhead_dim = {d}\ncausal = {str(causal).lower()}\n"
                       f"p10_ms = {p10!r}\np50_ms = {p50!r}\np90_ms = {p90!r}\n")
        print(f"{implementation} b{key[0]} h{key[1]}/{key[2]} s{key[3]} d{key[4]} causal={causal}: fwd {statistics.median(t[0]):.3f} ms, "
              f"bwd {statistics.median(t[1]):.3f} ms", file=sys.stderr)
    tmp = rows_out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text.getvalue())
    os.replace(tmp, rows_out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", help="path of our bench_attention binary (the comparison; left out without it)")
    p.add_argument("--shapes", help="shapes file whose [[attention]] rows get cuDNN timings")
    p.add_argument("--rows-out", help="where to write the rows (with --shapes)")
    p.add_argument("--rows-backend", choices=sorted(ROW_BACKENDS), default="cudnn",
                   help="the SDPA backend the rows time (default cudnn; flash: implementation flash2)")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("attention_vs_sdpa: no CUDA device, nothing measured")
        return 0
    if a.bench:
        compare(a.bench)
    if a.shapes:
        if not a.rows_out:
            p.error("--shapes needs --rows-out")
        sdpa_rows(a.shapes, a.rows_out, a.rows_backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
