#!/usr/bin/env python3
"""Real PyTorch eager on one GPU, measured for the compute model (docs/compute_accuracy.md).

Run on a machine with a GPU and PyTorch (about 4 minutes on one H100):
    PYTHONUNBUFFERED=1 python3 bench/eager_measure.py --out DIR [--deadline-s 420]

Sections, in this order (each stops when the deadline is near, so a slow one leaves the others'
results; every file is written as soon as its section ends):
  layers   One Llama decoder layer in PyTorch eager, written as docs/reference/pytorch-h100/README.md
           describes the reference layer (RMSNorm and interleaved RoPE in plain PyTorch, fused QKV
           and gate+up projections, F.scaled_dot_product_attention, bf16, no autocast), at the
           reference's shapes and others. Per shape:
             wall_*   forward and forward+backward as the reference timed them: median of 10 after
                      3 warm-ups, each call on an idle GPU between CUDA events, synchronised;
             host_*   the CPU time to issue the same calls while a sleep kernel holds the GPU busy
                      (perf_counter around the Python call, nothing waits on the GPU; checked by
                      querying an event behind the sleep), median of 10;
             kernels  a torch.profiler capture of 3 forward+backward passes: every kernel, memset
                      and copy with its GPU time, the aten op or autograd node that launched it, and
                      the CPU time of every top-level op (profiler overhead included).
           -> layers.csv, layers.json.gz, traces.tar.gz (the raw Chrome traces of a few shapes)
  held     The layer's forward and forward+backward in GPU time alone: as `layers` times them, but
           behind a sleep kernel long enough for the host to issue the whole call first (median of
           10 after 3 warm-ups), so the host's issue time and launch latency do not count; against
           the wall time, what the host costs a layer. -> held.csv
  hostlayer  Host time of each op of the layer's forward in its own code path (one op per statement,
           perf_counter between, the GPU held by a sleep kernel), at 3 shapes. -> host_layer_ops.csv
  hostops  Host cost of single ops on tiny tensors while the GPU sleeps: forward ops with autograd
           recording (input requires grad), and the backward of a chain of the same op, per op.
           -> hostops.csv
  sdpa     F.scaled_dot_product_attention per backend (flash, cudnn), causal square and
           non-causal square and rectangular blocks (the pieces of load-balanced ring attention),
           forward and forward+backward, GPU time (CUDA events behind a sleep kernel that holds
           the host's dispatch out), median of 7 after 2 warm-ups. -> sdpa.csv
  gemm     bf16 F.linear timed cold back to back, L2-warm, and rested (idle GPU before each run),
           with the SM clock: why in-layer GEMMs beat the table's rows. -> gemm_regimes.csv
  sustained  the layer's forward+backward from an idle GPU and back to back for 4 s, with NVML's
           power and SM clock: the power limit on a sustained eager step. -> sustained.csv
  elementwise  PyTorch's elementwise kernels on each of their paths (vectorized, unrolled
           dtype-converting copies, the indexed kernel of a strided or broadcast operand, the
           reductions), the ops a Llama layer launches, at 2^12 to 2^27 elements: per kernel
           queued back to back behind a sleep kernel (CUDA events around N launches over input
           sets rotated beyond L2, median of 5; the time a stream of such kernels takes, the gap
           between them included) and each kernel's own CUPTI time and name (torch.profiler, one
           pass). -> elementwise.csv
  reductions  PyTorch's reduce kernel by the width each output reduces (row reductions: RMSNorm's
           mean in fp32; column reductions: a bf16 tensor summed over its tokens, the norm weight's
           gradient) at hidden widths 1024-16384 and 1-16384 rows, timed as `elementwise` times its
           kernels. -> reductions.csv
  warm     the `elementwise` and `reductions` kernels over one input set, not rotated: operands that
           fit in L2 stay there, as a tensor just written by the kernel before is read in a layer;
           2^12 to 2^23 elements. -> elementwise_warm.csv, reductions_warm.csv
  fp8      torch._scaled_mm in float8_e4m3fn with tensorwise and rowwise scales beside the bf16
           product of the same shape, the forward GEMMs of Llama layers. -> fp8.csv
"""
import argparse
import csv
import gzip
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

BF16 = torch.bfloat16
DEV = "cuda"

# (hidden, heads, kv_heads, ffn): calibration/models.toml.
MODELS = {
    "1b": (2048, 16, 16, 5504),
    "7b": (4096, 32, 32, 11008),
    "13b": (5120, 40, 40, 13824),
    "70b": (8192, 64, 8, 28672),
    "405b": (16384, 128, 8, 53248),
}
# The reference's rows (docs/reference/pytorch-h100/layer_fwd_bwd.csv) first, then others.
REFERENCE_SHAPES = [
    ("7b", 1, 1, 4096), ("7b", 1, 2, 4096), ("7b", 1, 1, 2048), ("7b", 1, 1, 8192),
    ("13b", 1, 1, 4096), ("13b", 1, 2, 4096), ("1b", 1, 1, 4096), ("1b", 1, 2, 4096),
    ("7b", 2, 1, 4096), ("7b", 2, 2, 4096), ("7b", 2, 1, 2048), ("7b", 2, 1, 8192),
    ("7b", 8, 1, 4096), ("7b", 8, 2, 4096), ("7b", 8, 1, 2048), ("7b", 8, 1, 8192),
]
OTHER_SHAPES = [
    ("7b", 4, 1, 4096), ("7b", 4, 2, 4096), ("7b", 8, 4, 4096), ("7b", 8, 1, 1024), ("7b", 2, 1, 1024),
    ("13b", 2, 1, 4096), ("13b", 4, 1, 4096), ("13b", 8, 1, 4096), ("13b", 8, 1, 2048),
    ("1b", 2, 1, 4096), ("1b", 1, 1, 2048), ("1b", 1, 4, 4096), ("1b", 4, 1, 2048),
    ("70b", 8, 1, 8192), ("70b", 4, 1, 4096), ("405b", 8, 1, 8192),
]
RAW_TRACES = {("7b", 1, 1, 4096), ("7b", 8, 1, 2048), ("7b", 2, 1, 2048), ("1b", 1, 1, 4096), ("70b", 8, 1, 8192)}


class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(h, dtype=BF16, device=DEV))

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + self.eps)).type_as(x) * self.weight


def rope(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)


class Layer(nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, head_dim):
        super().__init__()
        self.d = head_dim
        self.heads, self.kv = heads, kv_heads
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        lin = lambda i, o: nn.Linear(i, o, bias=False, device=DEV, dtype=BF16)
        self.qkv = lin(hidden, (heads + 2 * kv_heads) * self.d)
        self.o = lin(heads * self.d, hidden)
        self.gate_up = lin(hidden, 2 * ffn)
        self.down = lin(ffn, hidden)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split([self.heads * self.d, self.kv * self.d, self.kv * self.d], -1)
        q = q.view(b, s, self.heads, self.d).transpose(1, 2)
        k = k.view(b, s, self.kv, self.d).transpose(1, 2)
        v = v.view(b, s, self.kv, self.d).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv != self.heads)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, self.heads * self.d))
        g, u = self.gate_up(self.norm2(x)).chunk(2, -1)
        return x + self.down(F.silu(g) * u)


def layer_at(model, tp, b, s):
    """The layer of `model` sharded `tp` ways (seeded), its input [b, s, hidden] requiring grad, an
    output gradient and the rotary tables."""
    hidden, heads, kv, ffn = MODELS[model]
    torch.manual_seed(0)
    layer = Layer(hidden, heads // tp, kv // tp, ffn // tp, hidden // heads)
    for p in layer.parameters():
        nn.init.normal_(p, std=0.02) if p.dim() > 1 else nn.init.ones_(p)
    x = torch.randn(b, s, hidden, device=DEV, dtype=BF16, requires_grad=True)
    grad = torch.randn(b, s, hidden, device=DEV, dtype=BF16)
    cos, sin = rope_tables(s, hidden // heads)
    return layer, x, grad, cos, sin


def clear_grads(layer, x):
    x.grad = None
    for p in layer.parameters():
        p.grad = None


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def events_ms(fn, reps, warmups, hold=False, hold_ms=1.0):
    """fn between two CUDA events, synchronised: median ms of reps after warm-ups. On an idle GPU
    (the host's issue time counts, as the reference layer timings were taken), or with `hold` a
    sleep kernel of hold_ms first keeps the GPU busy while the host issues fn, so that only GPU time
    counts (as long as the host issues fn within hold_ms)."""
    out = []
    for i in range(warmups + reps):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if hold:
            torch.cuda._sleep(int(hold_ms * 1e-3 * CLOCK_HZ))
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        if i >= warmups:
            out.append(a.elapsed_time(b))
    return median(out)


CLOCK_HZ = 1.98e9  # H100 SXM max SM clock (the sleep kernel counts cycles)


def host_ms(fn, reps, warmups, busy_ms):
    """CPU time to issue fn while a sleep kernel of busy_ms holds the GPU: median ms, and whether the
    GPU was still asleep when every call had returned (else the figure includes waiting)."""
    out, ok = [], True
    for i in range(warmups + reps):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(busy_ms * 1e-3 * CLOCK_HZ))
        behind = torch.cuda.Event()
        behind.record()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        asleep = not behind.query()
        torch.cuda.synchronize()
        if i >= warmups:
            out.append((t1 - t0) * 1e3)
            ok = ok and asleep
    return median(out), ok


def rope_tables(s, d):
    pos = torch.arange(s, device=DEV, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d))
    ang = torch.outer(pos, inv)
    return ang.cos().to(BF16), ang.sin().to(BF16)


def parse_trace(path, passes):
    """Kernels (GPU time, launching op) and top-level CPU ops of each profiled pass."""
    with open(path) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    ranges = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
                    if e.get("cat") == "user_annotation" and e["name"].startswith("pass"))
    cpu = [e for e in ev if e.get("cat") == "cpu_op"]
    by_tid = {}
    for e in cpu:
        by_tid.setdefault(e["tid"], []).append(e)
    for v in by_tid.values():
        v.sort(key=lambda e: (e["ts"], -e["dur"]))

    def ops_around(tid, ts):
        inside = [e for e in by_tid.get(tid, []) if e["ts"] <= ts <= e["ts"] + e["dur"]]
        if not inside:
            return "", ""
        outer = min(inside, key=lambda e: e["ts"])
        inner = max(inside, key=lambda e: e["ts"])
        return outer["name"], inner["name"]

    runtime = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
               and "correlation" in e.get("args", {})}
    gpu = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"])

    def which_pass(ts):
        for n, (a, b, _) in enumerate(ranges):
            if a <= ts <= b:
                return n
        return -1

    out = [{"kernels": [], "cpu_ops": []} for _ in range(passes)]
    for k in gpu:
        r = runtime.get(k.get("args", {}).get("correlation"))
        if r is None:
            continue
        p = which_pass(r["ts"])
        if p < 0:
            continue
        outer, inner = ops_around(r["tid"], r["ts"])
        out[p]["kernels"].append({"name": k["name"][:160], "cat": k["cat"], "gpu_us": k["dur"],
                                  "launch_us": r["dur"], "op": outer, "inner_op": inner})
    for tid, evs in by_tid.items():
        end = -1.0
        for e in evs:  # top level: not inside an earlier op of the same thread
            if e["ts"] >= end:
                p = which_pass(e["ts"])
                if p >= 0:
                    out[p]["cpu_ops"].append({"name": e["name"], "cpu_us": e["dur"], "tid": tid})
                end = e["ts"] + e["dur"]
    return out


def measure_layers(args, deadline, log):
    rows, detail = [], []
    raw = io.BytesIO()
    tar = tarfile.open(fileobj=raw, mode="w:gz")
    for model, tp, b, s in REFERENCE_SHAPES + OTHER_SHAPES:
        if time.time() > deadline - 20:
            log(f"layers: deadline, stopped before {model} tp{tp} b{b} s{s}")
            break
        hidden, heads, kv, ffn = MODELS[model]
        try:
            layer, x, grad, cos, sin = layer_at(model, tp, b, s)

            def zero():
                clear_grads(layer, x)

            def fwd():
                layer(x, cos, sin)

            def fwd_bwd():
                layer(x, cos, sin).backward(grad)

            wall_f = events_ms(fwd, 10, 3)
            wall_fb = events_ms(lambda: (zero(), fwd_bwd()), 10, 3)
            busy = 1.5 * wall_fb + 10  # ms: the issue time is under the wall time
            host_f, ok_f = host_ms(fwd, 10, 3, busy)
            host_fb, ok_fb = host_ms(lambda: (zero(), fwd_bwd()), 10, 3, busy)
            # Profiler: 3 passes, each synchronised.
            from torch.profiler import ProfilerActivity, profile, record_function
            zero(); fwd_bwd(); torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for n in range(3):
                    zero()
                    torch.cuda.synchronize()
                    with record_function(f"pass{n}"):
                        fwd_bwd()
                        torch.cuda.synchronize()
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "t.json")
                prof.export_chrome_trace(path)
                passes = parse_trace(path, 3)
                name = f"layer_{model}_tp{tp}_b{b}_s{s}.json"
                if (model, tp, b, s) in RAW_TRACES:
                    tar.add(path, arcname=name)
            counts = [len(p["kernels"]) for p in passes]
            ks = passes[0]["kernels"]
            if len(set(counts)) == 1:
                for i, k in enumerate(ks):
                    k["gpu_us"] = median([p["kernels"][i]["gpu_us"] for p in passes])
            gpu_sum_ms = sum(k["gpu_us"] for k in ks) / 1e3
            row = dict(model=model, hidden=hidden, heads=heads, kv_heads=kv, ffn=ffn, tp=tp, batch=b, seq=s,
                       wall_fwd_ms=round(wall_f, 4), wall_fwd_bwd_ms=round(wall_fb, 4),
                       host_fwd_ms=round(host_f, 4), host_fwd_bwd_ms=round(host_fb, 4),
                       host_checked=ok_f and ok_fb, kernels=len(ks), kernel_counts_equal=len(set(counts)) == 1,
                       gpu_kernel_sum_ms=round(gpu_sum_ms, 4),
                       cpu_top_ops=len(passes[0]["cpu_ops"]))
            rows.append(row)
            detail.append({"shape": row, "kernels": ks, "cpu_ops": passes[0]["cpu_ops"]})
            log(" ".join(f"{k}={v}" for k, v in row.items() if k not in ("hidden", "heads", "kv_heads", "ffn")))
            del layer, x, grad, prof
            torch.cuda.empty_cache()
        except Exception:
            log(f"layers: {model} tp{tp} b{b} s{s} failed:\n{traceback.format_exc()}")
            torch.cuda.empty_cache()
    tar.close()
    with open(os.path.join(args.out, "traces.tar.gz"), "wb") as f:
        f.write(raw.getvalue())
    write_csv(os.path.join(args.out, "layers.csv"), rows)
    with gzip.open(os.path.join(args.out, "layers.json.gz"), "wt") as f:
        json.dump(detail, f)


def measure_held(args, deadline, log):
    """The layer's GPU time alone: the same calls as `layers`, with a sleep kernel holding the GPU
    until the host has issued the whole call, so neither the host nor the launch latency counts."""
    rows = []
    for model, tp, b, s in REFERENCE_SHAPES + OTHER_SHAPES:
        if time.time() > deadline - 5:
            log(f"held: deadline, stopped before {model} tp{tp} b{b} s{s}")
            break
        try:
            layer, x, grad, cos, sin = layer_at(model, tp, b, s)

            def fwd():
                layer(x, cos, sin)

            def fwd_bwd():
                clear_grads(layer, x)
                layer(x, cos, sin).backward(grad)

            wall_fb = events_ms(fwd_bwd, 3, 2)
            hold = 2 * wall_fb + 15  # ms: more than the host's issue time of a forward+backward
            rows.append(dict(model=model, tp=tp, batch=b, seq=s, wall_fwd_bwd_ms=round(wall_fb, 4),
                             held_fwd_ms=round(events_ms(fwd, 10, 3, hold=True, hold_ms=hold), 4),
                             held_fwd_bwd_ms=round(events_ms(fwd_bwd, 10, 3, hold=True, hold_ms=hold), 4)))
            log(f"held {rows[-1]}")
            del layer, x, grad
        except Exception as e:
            rows.append(dict(model=model, tp=tp, batch=b, seq=s, error=str(e).splitlines()[0][:120]))
    write_csv(os.path.join(args.out, "held.csv"), rows)


# The layer's forward written one op per statement, a host timestamp after each (T, with its op's
# label in L): the same ops in the same order as Layer.forward.
def layer_forward_marked(layer, x, cos, sin, T, L):
    t = time.perf_counter_ns
    def mark(label):
        T.append(t()); L.append(label)
    b, s, _ = x.shape
    def norm(mod, x, tag):
        a = x.float(); mark(tag + "to_fp32")
        a2 = a.pow(2); mark(tag + "pow")
        v = a2.mean(-1, keepdim=True); mark(tag + "mean")
        v2 = v + mod.eps; mark(tag + "add_eps")
        r = torch.rsqrt(v2); mark(tag + "rsqrt")
        xf = x.float(); mark(tag + "to_fp32_2")
        y = xf * r; mark(tag + "mul")
        yb = y.type_as(x); mark(tag + "to_bf16")
        out = yb * mod.weight; mark(tag + "mul_weight")
        return out
    def rope(q, tag):
        x1 = q[..., ::2]; mark(tag + "slice1")
        x2 = q[..., 1::2]; mark(tag + "slice2")
        m1 = x1 * cos; mark(tag + "mul1")
        m2 = x2 * sin; mark(tag + "mul2")
        s1 = m1 - m2; mark(tag + "sub")
        m3 = x1 * sin; mark(tag + "mul3")
        m4 = x2 * cos; mark(tag + "mul4")
        a1 = m3 + m4; mark(tag + "add")
        st = torch.stack((s1, a1), -1); mark(tag + "stack")
        return st.flatten(-2)
    T.append(t()); L.append("start")
    h = norm(layer.norm1, x, "norm1.")
    qkv = layer.qkv(h); mark("qkv_linear")
    d = layer.d
    q, k, v = qkv.split([layer.heads * d, layer.kv * d, layer.kv * d], -1); mark("split")
    q = q.view(b, s, layer.heads, d); mark("view_q")
    k = k.view(b, s, layer.kv, d); mark("view_k")
    v = v.view(b, s, layer.kv, d); mark("view_v")
    q = q.transpose(1, 2); mark("transpose_q")
    k = k.transpose(1, 2); mark("transpose_k")
    v = v.transpose(1, 2); mark("transpose_v")
    q = rope(q, "rope_q."); mark("rope_q.flatten")
    k = rope(k, "rope_k."); mark("rope_k.flatten")
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=layer.kv != layer.heads); mark("sdpa")
    at = a.transpose(1, 2); mark("transpose_out")
    ar = at.reshape(b, s, layer.heads * d); mark("reshape_copy")
    o = layer.o(ar); mark("o_linear")
    x = x + o; mark("residual")
    h2 = norm(layer.norm2, x, "norm2.")
    gu = layer.gate_up(h2); mark("gate_up_linear")
    g, u = gu.chunk(2, -1); mark("chunk")
    sg = F.silu(g); mark("silu")
    m = sg * u; mark("swiglu_mul")
    dn = layer.down(m); mark("down_linear")
    return x + dn

def measure_hostlayer(args, deadline, log):
    """Host time of each op of the layer's forward, in the layer's own code path: the forward one op
    per statement with perf_counter between, while a sleep kernel holds the GPU (median of 20 after
    5 warm-ups), beside the module's own forward timed whole."""
    rows = []
    for shape in [("7b", 8, 1, 2048), ("7b", 2, 1, 2048), ("1b", 1, 1, 4096)]:
        if time.time() > deadline - 5:
            break
        layer, x, grad, cos, sin = layer_at(*shape)
        per, whole, marked = {}, [], []
        for rep in range(25):
            torch.cuda.synchronize()
            torch.cuda._sleep(int(40e-3 * CLOCK_HZ))
            t0 = time.perf_counter_ns()
            layer(x, cos, sin)
            t1 = time.perf_counter_ns()
            torch.cuda.synchronize()
            torch.cuda._sleep(int(40e-3 * CLOCK_HZ))
            T, L = [], []
            layer_forward_marked(layer, x, cos, sin, T, L)
            torch.cuda.synchronize()
            if rep < 5:
                continue
            whole.append((t1 - t0) / 1e3)
            marked.append((T[-1] - T[0]) / 1e3)
            for i in range(1, len(T)):
                per.setdefault((i, L[i]), []).append((T[i] - T[i - 1]) / 1e3)
        for (i, label), v in sorted(per.items()):
            rows.append(dict(model=shape[0], tp=shape[1], batch=shape[2], seq=shape[3], index=i, op=label,
                             host_us=round(median(v), 2)))
        log(f"hostlayer {shape}: module forward {median(whole):.1f} us, marked {median(marked):.1f} us")
    write_csv(os.path.join(args.out, "host_layer_ops.csv"), rows)


def measure_hostops(args, deadline, log):
    """Per-op host cost on tiny tensors while the GPU sleeps, forward (with autograd recording) and
    the backward of a chain of N of the same op."""
    N = 100
    x = torch.randn(8, 64, 128, device=DEV, dtype=BF16, requires_grad=True)
    y = torch.randn(8, 64, 128, device=DEV, dtype=BF16, requires_grad=True)
    w = torch.randn(128, device=DEV, dtype=BF16, requires_grad=True)
    W = torch.randn(128, 128, device=DEV, dtype=BF16, requires_grad=True)
    q = torch.randn(1, 4, 64, 128, device=DEV, dtype=BF16, requires_grad=True)
    cos = torch.randn(64, 64, device=DEV, dtype=BF16)
    fwd_ops = {
        "view": lambda t: t.view(-1, 128),
        "transpose": lambda t: t.transpose(1, 2),
        "slice_step2": lambda t: t[..., ::2],
        "split3": lambda t: t.split([32, 32, 64], -1),
        "chunk2": lambda t: t.chunk(2, -1),
        "to_fp32": lambda t: t.float(),
        "pow": lambda t: t.pow(2),
        "mean": lambda t: t.mean(-1, keepdim=True),
        "rsqrt": lambda t: torch.rsqrt(t),
        "add_scalar": lambda t: t + 1e-5,
        "mul": lambda t: t * y,
        "mul_broadcast": lambda t: t * w,
        "mul_strided": lambda t: t[..., ::2] * cos,
        "silu": lambda t: F.silu(t),
        "stack2": lambda t: torch.stack((t, y), -1),
        "reshape_copy": lambda t: t.transpose(0, 1).reshape(64, -1),
        "linear": lambda t: F.linear(t, W),
        "sdpa": lambda t: F.scaled_dot_product_attention(q, q, q, is_causal=True),
    }
    rows = []
    for name, op in fwd_ops.items():
        if time.time() > deadline - 10:
            log("hostops: deadline")
            break
        try:
            us, ok = host_ms(lambda: [op(x) for _ in range(N)], 5, 2, 60)
            rows.append(dict(op=name, direction="forward", per_op_us=round(us * 1e3 / N, 3), checked=ok))
        except Exception:
            log(f"hostops: {name} forward failed:\n{traceback.format_exc()}")
    chain_ops = {
        "to_fp32_bf16": lambda t: t.float().to(BF16),
        "mul": lambda t: t * y,
        "mul_broadcast": lambda t: t * w,
        "pow": lambda t: t.pow(2),
        "silu": lambda t: F.silu(t),
        "linear": lambda t: F.linear(t, W),
        "add": lambda t: t + y,
    }
    for name, op in chain_ops.items():
        if time.time() > deadline - 10:
            break
        try:
            def chain():
                t = x
                for _ in range(N):
                    t = op(t)
                return t
            outs = []
            for _ in range(5):
                x.grad = y.grad = w.grad = W.grad = None
                t = chain()
                g = torch.ones_like(t)
                torch.cuda.synchronize()
                ms, ok = host_ms(lambda: t.backward(g, retain_graph=True), 1, 0, 60)
                outs.append((ms, ok))
            us = median([m for m, _ in outs[1:]]) * 1e3 / N
            rows.append(dict(op=name, direction="backward", per_op_us=round(us, 3), checked=all(o for _, o in outs)))
        except Exception:
            log(f"hostops: {name} backward failed:\n{traceback.format_exc()}")
    for r in rows:
        log(f"hostops {r}")
    write_csv(os.path.join(args.out, "hostops.csv"), rows)


def measure_sdpa(args, deadline, log):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    heads = [(32, 32, 128), (64, 8, 128), (16, 2, 128), (16, 1, 128), (8, 8, 128)]
    rows = []
    for L in (1024, 2048, 4096, 8192, 16384):
        for h, kv, d in heads:
            for kind, (lq, lk, causal) in {"causal": (L, L, True), "full": (L, L, False),
                                           "q_half": (L // 2, L, False), "kv_half": (L, L // 2, False)}.items():
                for bname, backend in backends.items():
                    if time.time() > deadline - 10:
                        log("sdpa: deadline")
                        write_csv(os.path.join(args.out, "sdpa.csv"), rows)
                        return
                    try:
                        q = torch.randn(1, h, lq, d, device=DEV, dtype=BF16, requires_grad=True)
                        k = torch.randn(1, kv, lk, d, device=DEV, dtype=BF16, requires_grad=True)
                        v = torch.randn(1, kv, lk, d, device=DEV, dtype=BF16, requires_grad=True)
                        g = torch.randn(1, h, lq, d, device=DEV, dtype=BF16)
                        gqa = kv != h
                        def f():
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

                        def f_b():
                            q.grad = k.grad = v.grad = None
                            f().backward(g)

                        with sdpa_kernel([backend]):
                            fwd = events_ms(f, 7, 2, hold=True)
                            fb = events_ms(f_b, 7, 2, hold=True)
                        rows.append(dict(batch=1, heads=h, kv_heads=kv, q_len=lq, kv_len=lk, head_dim=d,
                                         causal=causal, backend=bname, fwd_ms=round(fwd, 4), fwd_bwd_ms=round(fb, 4)))
                    except Exception as e:
                        rows.append(dict(batch=1, heads=h, kv_heads=kv, q_len=lq, kv_len=lk, head_dim=d,
                                         causal=causal, backend=bname, fwd_ms="", fwd_bwd_ms="",
                                         error=str(e).splitlines()[0][:120]))
    log(f"sdpa: {len(rows)} rows")
    write_csv(os.path.join(args.out, "sdpa.csv"), rows)


# The elementwise ops of the eager Llama layer, one kernel each, by PyTorch path. Each case gives,
# for E output elements, a builder of one input set and the op; bytes follow the compute model's
# rule (model/framework_recipe.hpp): every operand read once and the output written
# once, a strided read of every other element moves the whole tensor, a small broadcast operand
# counts once.
def _rows(E, width=4096):
    return max(1, E // width), min(E, width)


ELEMENTWISE_CASES = {
    # name: (path, bytes per output element, builder(E) -> inputs, op(inputs))
    "add_bf16": ("vectorized", 6, lambda E: (torch.randn(E, device=DEV, dtype=BF16), torch.randn(E, device=DEV, dtype=BF16)),
                 lambda t: t[0] + t[1]),
    "mul_fp32": ("vectorized", 12, lambda E: (torch.randn(E, device=DEV), torch.randn(E, device=DEV)),
                 lambda t: t[0] * t[1]),
    "pow_fp32": ("vectorized", 8, lambda E: (torch.randn(E, device=DEV),), lambda t: t[0].pow(2)),
    "add_scalar_fp32": ("vectorized", 8, lambda E: (torch.randn(E, device=DEV),), lambda t: t[0] + 1e-5),
    "cast_fp32_to_bf16": ("vectorized", 6, lambda E: (torch.randn(E, device=DEV),), lambda t: t[0].to(BF16)),
    "cast_bf16_to_fp32": ("unrolled", 6, lambda E: (torch.randn(E, device=DEV, dtype=BF16),), lambda t: t[0].float()),
    "mul_fp32_row_broadcast": ("indexed", 8, lambda E: (torch.randn(*_rows(E), device=DEV),
                                                        torch.randn(_rows(E)[0], 1, device=DEV)),
                               lambda t: t[0] * t[1]),
    "mul_bf16_weight_broadcast": ("indexed", 4, lambda E: (torch.randn(*_rows(E), device=DEV, dtype=BF16),
                                                           torch.randn(_rows(E)[1], device=DEV, dtype=BF16)),
                                  lambda t: t[0] * t[1]),
    # RoPE: x[..., ::2] of [s, 32 heads, 128] times a broadcast cos [s, 1, 64]
    "mul_strided_broadcast": ("indexed", 6, lambda E: (torch.randn(max(1, E // 2048), 32, 128, device=DEV, dtype=BF16),
                                                       torch.randn(max(1, E // 2048), 1, 64, device=DEV, dtype=BF16)),
                              lambda t: t[0][..., ::2] * t[1]),
    "silu_chunk": ("indexed", 4, lambda E: (torch.randn(_rows(E)[0], 2 * _rows(E)[1], device=DEV, dtype=BF16),),
                   lambda t: F.silu(t[0][:, : t[0].shape[1] // 2])),
    "mul_chunks": ("indexed", 6, lambda E: (torch.randn(_rows(E)[0], 2 * _rows(E)[1], device=DEV, dtype=BF16),),
                   lambda t: t[0][:, : t[0].shape[1] // 2] * t[0][:, t[0].shape[1] // 2:]),
    "transpose_copy": ("indexed", 4, lambda E: (torch.randn(max(1, E // 4096), 32, 128, device=DEV, dtype=BF16),),
                       lambda t: t[0].transpose(0, 1).contiguous()),
    # RoPE's stack of the two rotated halves, each [b, heads, s, 64] laid out as the transposed q
    "stack_rope": ("indexed", 4, lambda E: tuple(torch.randn(max(1, E // 4096), 32, 64, device=DEV, dtype=BF16).transpose(0, 1)
                                                 for _ in range(2)),
                   lambda t: torch.stack((t[0], t[1]), -1)),
    # a reduction's elements and bytes are its input's
    "mean_fp32": ("reduction", 4, lambda E: (torch.randn(*_rows(E), device=DEV),), lambda t: t[0].mean(-1, keepdim=True)),
}
ELEMENTWISE_SIZES = [1 << p for p in (12, 14, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27)]


def queued_us(op, sets, n, reps=5):
    """Per kernel: n launches of op over the rotated input sets, queued behind a sleep kernel long
    enough for the host to issue them all, between two CUDA events; median of reps."""
    out = []
    for i in range(reps + 1):
        torch.cuda.synchronize()
        torch.cuda._sleep(int((2e-3 + n * 60e-6) * CLOCK_HZ))
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for j in range(n):
            op(sets[j % len(sets)])
        b.record()
        torch.cuda.synchronize()
        if i:
            out.append(a.elapsed_time(b) * 1e3 / n)
    return median(out)


def cupti_kernels(op, sets, n):
    """One pass of the same n queued launches under torch.profiler: each kernel's name and CUPTI
    time, and the idle gap between consecutive kernels."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(int((3e-3 + n * 120e-6) * CLOCK_HZ))
        for j in range(n):
            op(sets[j % len(sets)])
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        ev = json.load(open(f.name))["traceEvents"]
    ks = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel" and "spin_kernel" not in e["name"]),
                key=lambda e: e["ts"])
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(ks, ks[1:])]
    names = sorted({e["name"] for e in ks})
    return median([e["dur"] for e in ks]), median(gaps), len(ks), "|".join(n[:90] for n in names)


def time_cases(cases, sizes, rotate, out_csv, label, deadline, log):
    """Each case at each size: its queued time per kernel and its kernels' CUPTI times. With
    `rotate`, over input sets rotated beyond L2 (cold: every operand from HBM); without, one input
    set again and again (warm: what fits in L2 stays there, as a tensor the previous kernel wrote).
    A case is (path, bytes per output element, builder(E) -> inputs, op(inputs)[, extra columns])."""
    rows = []
    for name, case in cases.items():
        path, bytes_per_element, build, op = case[:4]
        extra = case[4] if len(case) > 4 else {}
        for E in sizes(name):
            if time.time() > deadline - 5:
                log(f"{label}: deadline")
                write_csv(out_csv, rows)
                return
            try:
                one = build(E)
                set_bytes = sum(t.numel() * t.element_size() for t in one)
                sets = [one]
                if rotate:
                    sets += [build(E) for _ in range(min(63, (256 << 20) // max(set_bytes, 1)))]
                elements = one[0].numel() if path == "reduction" else op(one).numel()
                probe = queued_us(op, sets, 3, reps=1)
                n = int(min(100, max(3, 1000 / max(probe, 1e-3))))
                q = queued_us(op, sets, n)
                k_us, gap_us, k_count, names = cupti_kernels(op, sets, n)
                rows.append(dict(case=name, path=path, **extra, elements=elements,
                                 bytes=bytes_per_element * elements, sets=len(sets), launches=n,
                                 queued_us=round(q, 3), kernel_us=round(k_us, 3),
                                 gap_us=round(gap_us, 3) if k_count > 1 else "", kernels=k_count, kernel=names))
                del sets, one
            except Exception as e:
                rows.append(dict(case=name, path=path, **extra, elements=E, error=str(e).splitlines()[0][:120]))
        log(f"{label} {name}: {rows[-1] if rows else '-'}")
        torch.cuda.empty_cache()
    write_csv(out_csv, rows)


def measure_elementwise(args, deadline, log):
    time_cases(ELEMENTWISE_CASES, lambda name: ELEMENTWISE_SIZES, True,
               os.path.join(args.out, "elementwise.csv"), "elementwise", deadline, log)


# Reductions by the width of what each output reduces: a reduction's time is set by its rows
# (one block or warp per output, a chain of dependent loads along the row), not its elements
# alone. Row reductions (RMSNorm's mean and its backward's sum over the hidden width, fp32) and
# column reductions (the norm weight's gradient: a bf16 product summed over the tokens), at the
# hidden widths of calibration/models.toml.
REDUCTION_WIDTHS = (1024, 2048, 4096, 5120, 8192, 16384)
REDUCTION_ROWS = (1, 4, 16, 64, 256, 1024, 2048, 4096, 8192, 16384)


def _reduction_cases():
    cases = {}
    for w in REDUCTION_WIDTHS:
        cases[f"mean_fp32_w{w}"] = ("reduction", 4, lambda E, w=w: (torch.randn(max(1, E // w), w, device=DEV),),
                                    lambda t: t[0].mean(-1, keepdim=True), dict(width=w, reduced="row"))
        cases[f"sum_tokens_bf16_w{w}"] = ("reduction", 2, lambda E, w=w: (torch.randn(max(1, E // w), w, device=DEV, dtype=BF16),),
                                          lambda t: t[0].sum(0), dict(width=w, reduced="column"))
    return cases


REDUCTION_CASES = _reduction_cases()


def reduction_sizes(name):
    w = REDUCTION_CASES[name][4]["width"]
    return [r * w for r in REDUCTION_ROWS if r * w <= (1 << 27)]


def measure_reductions(args, deadline, log):
    time_cases(REDUCTION_CASES, reduction_sizes, True, os.path.join(args.out, "reductions.csv"),
               "reductions", deadline, log)


# L2-warm: the same kernels over one input set, up to the sizes whose operands outgrow L2 (H100:
# 50 MB), beside the cold rows above.
WARM_SIZES = [1 << p for p in (12, 14, 16, 17, 18, 19, 20, 21, 22, 23)]


def measure_warm(args, deadline, log):
    time_cases(ELEMENTWISE_CASES, lambda name: WARM_SIZES, False,
               os.path.join(args.out, "elementwise_warm.csv"), "warm", deadline, log)
    time_cases(REDUCTION_CASES, lambda name: [E for E in reduction_sizes(name) if E <= WARM_SIZES[-1]], False,
               os.path.join(args.out, "reductions_warm.csv"), "warm reductions", deadline, log)


def measure_fp8(args, deadline, log):
    rows = []
    shapes = set()
    for model in ("7b", "70b", "405b"):
        hidden, heads, kv, ffn = MODELS[model]
        d = hidden // heads
        for tp in (1, 2, 4, 8):
            for T in (8192,):
                shapes |= {(T, (heads + 2 * kv) * d // tp, hidden), (T, hidden, heads * d // tp),
                           (T, 2 * ffn // tp, hidden), (T, hidden, ffn // tp)}
    for M, N, K in sorted(shapes):
        if time.time() > deadline - 10:
            log("fp8: deadline")
            break
        try:
            a = torch.randn(M, K, device=DEV, dtype=BF16)
            b = torch.randn(N, K, device=DEV, dtype=BF16)
            bf = events_ms(lambda: a @ b.t(), 10, 3)
            a8 = a.to(torch.float8_e4m3fn)
            b8 = b.to(torch.float8_e4m3fn).t()  # column-major K x N, as _scaled_mm needs
            one = torch.ones((), device=DEV, dtype=torch.float32)
            tw = events_ms(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=BF16), 10, 3)
            sa = torch.ones(M, 1, device=DEV, dtype=torch.float32)
            sb = torch.ones(1, N, device=DEV, dtype=torch.float32)
            rw = events_ms(lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=BF16), 10, 3)
            rows.append(dict(m=M, n=N, k=K, bf16_ms=round(bf, 4), fp8_tensorwise_ms=round(tw, 4),
                             fp8_rowwise_ms=round(rw, 4)))
        except Exception as e:
            rows.append(dict(m=M, n=N, k=K, error=str(e).splitlines()[0][:120]))
    log(f"fp8: {len(rows)} rows; first {rows[:2]}")
    write_csv(os.path.join(args.out, "fp8.csv"), rows)


def measure_gemm(args, deadline, log):
    """One GEMM shape timed three ways, to see why a GEMM inside a layer runs faster than the
    calibration table's back-to-back rows: cold (inputs rotated over 3 sets, more than L2; a sleep
    kernel before each run holds the host's launch out; runs back to back, as commbound-calibrate
    times them), warm (the same buffers every run: L2 may hold the activation) and rested (cold, but
    30 ms of idle GPU before each run, so the clock is not held down by the power limit). The SM
    clock is read by NVML after each sustained block."""
    try:
        import pynvml
        pynvml.nvmlInit()
        nv = pynvml.nvmlDeviceGetHandleByIndex(0)
        clock = lambda: pynvml.nvmlDeviceGetClockInfo(nv, pynvml.NVML_CLOCK_SM)
        power = lambda: pynvml.nvmlDeviceGetPowerUsage(nv) / 1e3
    except Exception as e:
        log(f"gemm: no NVML ({e})")
        clock = power = lambda: float("nan")
    shapes = [(4096, 12288, 4096), (4096, 4096, 4096), (4096, 22016, 4096), (4096, 4096, 11008),
              (8192, 12288, 4096), (8192, 4096, 11008), (2048, 1536, 4096), (2048, 4096, 1376),
              (8192, 8192, 8192)]
    rows = []
    for M, N, K in shapes:
        if time.time() > deadline - 10:
            log("gemm: deadline")
            break
        try:
            sets = [(torch.randn(M, K, device=DEV, dtype=BF16), torch.randn(N, K, device=DEV, dtype=BF16))
                    for _ in range(3)]

            def timed(n, pick, rest_s):
                out = []
                for i in range(n):
                    x, w = sets[pick(i)]
                    if rest_s:
                        torch.cuda.synchronize()
                        time.sleep(rest_s)
                    torch.cuda._sleep(200_000)
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    F.linear(x, w)
                    b.record()
                    out.append((a, b))
                torch.cuda.synchronize()
                return median([a.elapsed_time(b) for a, b in out])

            timed(5, lambda i: i % 3, 0)
            cold = timed(30, lambda i: i % 3, 0)
            cold_clock, cold_power = clock(), power()
            warm = timed(30, lambda i: 0, 0)
            rested = timed(10, lambda i: i % 3, 0.03)
            flop = 2.0 * M * N * K
            rows.append(dict(m=M, n=N, k=K, cold_ms=round(cold, 4), warm_ms=round(warm, 4), rested_ms=round(rested, 4),
                             cold_tflops=round(flop / cold / 1e9, 1), rested_tflops=round(flop / rested / 1e9, 1),
                             sm_clock_after_cold_MHz=cold_clock, power_after_cold_W=cold_power))
            log(f"gemm {rows[-1]}")
            del sets
        except Exception:
            log(f"gemm {M}x{N}x{K} failed:\n{traceback.format_exc()}")
    write_csv(os.path.join(args.out, "gemm_regimes.csv"), rows)


def measure_sustained(args, deadline, log):
    """The eager layer's forward+backward from an idle GPU (as the reference timed it) and run back
    to back for several seconds (as a training loop runs it), with NVML's board power and SM clock:
    how much the power limit slows a sustained eager step."""
    from power_mix import PowerSampler  # bench/power_mix.py, beside this script
    rows = []
    for model, tp, b, s in (("7b", 1, 2, 4096), ("13b", 1, 2, 4096), ("7b", 1, 1, 8192)):
        if time.time() > deadline - 15:
            break
        layer, x, grad, cos, sin = layer_at(model, tp, b, s)

        def step():
            clear_grads(layer, x)
            layer(x, cos, sin).backward(grad)

        time.sleep(1.0)
        idle = events_ms(step, 10, 3)
        with PowerSampler() as power:
            start = time.time()
            marks = []
            while time.time() - start < 4.0:
                e = torch.cuda.Event(enable_timing=True)
                e.record()
                marks.append(e)
                step()
            torch.cuda.synchronize()
        tail = marks[len(marks) // 2:]
        sustained = tail[0].elapsed_time(tail[-1]) / (len(tail) - 1)
        watts, mhz = power.mean_after(start + 2.0)
        rows.append(dict(model=model, tp=tp, batch=b, seq=s, idle_fwd_bwd_ms=round(idle, 4),
                         sustained_fwd_bwd_ms=round(sustained, 4), ratio=round(sustained / idle, 4),
                         power_W=round(watts, 1), sm_clock_MHz=round(mhz)))
        log(f"sustained {rows[-1]}")
        del layer, x, grad
        torch.cuda.empty_cache()
    write_csv(os.path.join(args.out, "sustained.csv"), rows)


def write_csv(path, rows):
    if not rows:
        return
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--deadline-s", type=float, default=420)
    p.add_argument("--sections", default="layers,hostops,sdpa,fp8,gemm")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    logf = open(os.path.join(args.out, "log.txt"), "a")

    def log(msg):
        line = f"[{time.time() - start:6.1f} s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    props = torch.cuda.get_device_properties(0)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    env = dict(torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
               gpu=props.name, sms=props.multi_processor_count, cpu=cpu, cpus=os.cpu_count(),
               python=platform.python_version(), date=time.strftime("%Y-%m-%d"))
    try:
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:
        env["nvidia_smi"] = str(e)
    log(f"env {json.dumps(env)}")
    deadline = start + args.deadline_s
    budgets = {"elementwise": 1.0, "reductions": 0.45, "warm": 1.0, "held": 1.0, "hostlayer": 1.0, "layers": 0.5, "hostops": 0.56, "sdpa": 0.8, "fp8": 1.0, "gemm": 1.0, "sustained": 1.0}  # cumulative share of the time
    for name in args.sections.split(","):
        section_deadline = min(deadline, start + budgets[name] * args.deadline_s)
        try:
            globals()[f"measure_{name}"](args, section_deadline, log)
        except Exception:
            log(f"{name} failed:\n{traceback.format_exc()}")
        log(f"{name} done")


if __name__ == "__main__":
    main()
