#!/usr/bin/env python3
"""Compute accuracy: `commbound profile` against real PyTorch eager layer timings on H100.

Every row of docs/reference/pytorch-h100/layer_fwd_bwd.csv (one Llama decoder layer, forward and
forward+backward, at several sizes, batches, sequence lengths and tensor-parallel shards) is
profiled with [training] framework = "pytorch-eager" at the same shape, each part alone on an idle
GPU as the measurement ran it, and printed beside the real time with the error. The row marked
'host' is the one the eager host cost was derived from (calibration/frameworks.toml).

    bench/compute_accuracy.py [build dir, default build] [--framework NAME] [--set KEY=VALUE ...]

Two checks of the parts of that figure (PyTorch eager only):
  --held         the GPU alone: each shape's kernels as `commbound profile` prices them, the power
                 limit taken back out of GEMMs and attention, summed, against the same layer's GPU
                 time held behind a sleep kernel on an H100 (docs/reference/pytorch-h100-profiled/
                 held.csv, 32 shapes);
  --host-replay  the host: the forward rows replayed through the engine's issue rule (a kernel
                 starts once issued and once the one before it ended) with other host costs than
                 one per op: the host time per op measured in the layer's own code
                 (host_layer_ops.csv), and each op's single-op cost by its kind (host_ops.csv: a
                 view, an elementwise op, F.linear, SDPA). Each set is scaled so the sum of the
                 host-bound row's costs is that row's real forward time. Last column: the scale of
                 the per-kind costs at which the row would come out as measured (none where no
                 scale from 0.2 to 3 does); one host would need one scale.
  --adamw        torch.optim.AdamW.step() on one fp32 parameter of 50M and 200M elements, foreach
                 and fused (docs/reference/pytorch-h100/adamw.csv), against the AdamW kernels of
                 `commbound profile`'s optimizer part for a model of exactly that many parameters
                 (the gradient norm left out: the measurement has none), with each side split
                 into a cost per parameter and a fixed cost by the two sizes.
"""
import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"1b": "llama2-1b", "7b": "llama2-7b", "13b": "llama2-13b", "70b": "llama3.1-70b", "405b": "llama3.1-405b"}
SCENARIO = "scenarios/examples/dgx-h100-ib-ndr.toml"  # one DGX H100 node: tp up to 8
HOST_ROW = ("7b", "8", "1", "2048")  # the row frameworks.toml's eager host cost comes from


def run_profile(binary, framework, row, extra_sets):
    """`commbound profile --format json` of one shape: every part and kernel."""
    sets = [*extra_sets, f"model.name={MODELS[row['model']]}", f"training.framework={framework}", f"parallel.tp={row['tp']}",
            f"training.local_batch={row['batch']}", f"training.seq_len={row['seq']}"]
    cmd = [str(binary), "profile", SCENARIO, "--format", "json"]
    for s in sets:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"compute_accuracy: {' '.join(cmd)}: {done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def profile(binary, framework, row, extra_sets):
    return {p["part"]: p for p in run_profile(binary, framework, row, extra_sets)["parts"]}


PROFILED = ROOT / "docs/reference/pytorch-h100-profiled"


def kernels_of(binary, row, extra_sets):
    return run_profile(binary, "pytorch-eager", row, extra_sets)


def held(binary, extra_sets):
    print("GPU alone: commbound's kernels (power limit taken out) vs the real layer held behind a sleep kernel (ms)")
    errors = []
    for r in csv.DictReader(open(PROFILED / "held.csv")):
        d = kernels_of(binary, r, extra_sets)
        parts = {p["part"]: p for p in d["parts"]}
        line = f"{r['model']:5} {r['tp']:>2} {r['batch']:>2} {r['seq']:>5}"
        for part, column in (("layer.forward", "held_fwd_ms"), ("layer.forward+backward", "held_fwd_bwd_ms")):
            slow = parts[part]["power_limit_slowdown"]
            gpu_ms = sum(k["gpu_us"] / (slow if k["shape"].startswith(("gemm", "attention")) else 1)
                         for k in d["kernels"] if k["part"] == part) / 1e3
            err = (gpu_ms / float(r[column]) - 1) * 100
            errors.append(err)
            line += f" | {float(r[column]):8.3f} {gpu_ms:8.3f} {err:+6.1f}%"
        print(line)
    inside = sum(-0.5 <= e <= 5 for e in errors)
    print(f"error: median {statistics.median(errors):+.1f}%, min {min(errors):+.1f}%, max {max(errors):+.1f}%, "
          f"{inside} of {len(errors)} within -0.5%..+5%")


# Which measured ops (host_layer_ops.csv) issue each recipe kernel of the forward: the ops since the
# kernel before it (views with the next kernel); stack launches both of its copies.
def host_of(name, cost, nth_fp32):
    n = name.split(".fwd.", 1)[1]
    if n.startswith(("rmsnorm.", "rmsnorm2.")):
        norm = "norm1." if n.startswith("rmsnorm.") else "norm2."
        op = n.split(".", 1)[1]
        if op == "to_fp32":
            return cost[norm + ("to_fp32" if nth_fp32 == 1 else "to_fp32_2")]
        return cost[norm + op]
    fixed = {
        "qkv": ["qkv_linear"],
        "rope_q.mul_x1_cos": ["split", "view_q", "view_k", "view_v", "transpose_q", "transpose_k", "transpose_v",
                              "rope_q.slice1", "rope_q.slice2", "rope_q.mul1"],
        "rope_k.mul_x1_cos": ["rope_q.flatten", "rope_k.slice1", "rope_k.slice2", "rope_k.mul1"],
        "attention": ["rope_k.flatten", "sdpa"], "attention.reshape_copy": ["transpose_out", "reshape_copy"],
        "o_proj": ["o_linear"], "residual": ["residual"], "gate_up": ["gate_up_linear"],
        "swiglu.silu": ["chunk", "silu"], "swiglu.mul": ["swiglu_mul"], "down": ["down_linear"],
        "residual2": ["residual"],  # the last addition is not marked: the first one's cost
    }
    if n in fixed:
        return sum(cost[k] for k in fixed[n])
    rope, op = n.split(".", 1)
    if op.startswith("stack."):
        return cost[rope + ".stack"] / 2
    return cost[rope + "." + {"mul_x2_sin": "mul2", "sub": "sub", "mul_x1_sin": "mul3", "mul_x2_cos": "mul4",
                              "add": "add"}[op]]


# Each forward op of host_layer_ops.csv by the kind host_ops.csv timed it as (tiny tensors, one op
# at a time): the norms' casts, the RoPE products of a strided slice, the fused projections.
OP_KIND = {"to_fp32": "to_fp32", "to_fp32_2": "to_fp32", "to_bf16": "to_fp32", "pow": "pow", "mean": "mean",
           "add_eps": "add_scalar", "rsqrt": "rsqrt", "mul": "mul_broadcast", "mul_weight": "mul_broadcast",
           "qkv_linear": "linear", "o_linear": "linear", "gate_up_linear": "linear", "down_linear": "linear",
           "split": "split3", "view_q": "view", "view_k": "view", "view_v": "view", "flatten": "view",
           "transpose_q": "transpose", "transpose_k": "transpose", "transpose_v": "transpose",
           "transpose_out": "transpose", "slice1": "slice_step2", "slice2": "slice_step2",
           "mul1": "mul_strided", "mul2": "mul_strided", "mul3": "mul_strided", "mul4": "mul_strided",
           "sub": "mul", "add": "mul", "residual": "mul", "swiglu_mul": "mul", "stack": "stack2", "sdpa": "sdpa",
           "reshape_copy": "reshape_copy", "chunk": "chunk2", "silu": "silu"}


def host_replay(binary, extra_sets):
    measured = {}
    for r in csv.DictReader(open(PROFILED / "host_layer_ops.csv")):
        measured.setdefault(r["op"], []).append(float(r["host_us"]))
    in_layer = {op: statistics.median(v) for op, v in measured.items()}
    single_op = {r["op"]: float(r["per_op_us"]) for r in csv.DictReader(open(PROFILED / "host_ops.csv"))
                 if r["direction"] == "forward"}
    by_kind = {op: single_op[OP_KIND[op.split(".")[-1]]] for op in in_layer}

    def forward(row):
        d = kernels_of(binary, row, extra_sets)
        ks = [k for k in d["kernels"] if k["part"] == "layer.forward"]
        seen = {}
        hosts = {"in_layer": [], "by_kind": []}
        for k in ks:
            norm = k["kernel"].split(".fwd.", 1)[1].split(".")[0]
            if k["kernel"].endswith(".to_fp32"):
                seen[norm] = seen.get(norm, 0) + 1
            hosts["in_layer"].append(host_of(k["kernel"], in_layer, seen.get(norm, 0)))
            hosts["by_kind"].append(host_of(k["kernel"], by_kind, seen.get(norm, 0)))
        part = next(p for p in d["parts"] if p["part"] == "layer.forward")
        return ks, hosts, part["time_ms"]

    def replay(ks, hosts, scale):
        issued = end = 0.0
        for k, h in zip(ks, hosts):
            issued += h * scale
            end = max(issued, end) + k["gpu_us"]
        return end / 1e3

    def scale_for(ks, hosts, real_ms):  # replay() grows with the scale: bisect
        lo, hi = 0.2, 3.0
        if not replay(ks, hosts, lo) <= real_ms <= replay(ks, hosts, hi):
            return None
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if replay(ks, hosts, mid) < real_ms else (lo, mid)
        return (lo + hi) / 2

    rows = list(csv.DictReader(open(ROOT / "docs/reference/pytorch-h100/layer_fwd_bwd.csv")))
    host_row = next(r for r in rows if (r["model"], r["tp"], r["batch"], r["seq"]) == HOST_ROW)
    ks, hosts, _ = forward(host_row)
    scale = {name: float(host_row["fwd_ms"]) * 1e3 / sum(h) for name, h in hosts.items()}
    for name, what in (("in_layer", "measured in the layer"), ("by_kind", "single-op by kind")):
        print(f"host replay: {what}, forward host costs sum to {sum(hosts[name]):.0f} us at the host-bound row; "
              f"x {scale[name]:.3f}")
    errors = {"one cost per op": [], "measured in the layer": [], "by kind": []}
    for r in rows:
        ks, hosts, today_ms = forward(r)
        real = float(r["fwd_ms"])
        errs = {"one cost per op": today_ms / real - 1,
                "measured in the layer": replay(ks, hosts["in_layer"], scale["in_layer"]) / real - 1,
                "by kind": replay(ks, hosts["by_kind"], scale["by_kind"]) / real - 1}
        needed = scale_for(ks, hosts["by_kind"], real)
        line = f"{r['model']:5} {r['tp']:>2} {r['batch']:>2} {r['seq']:>5} | real {real:7.3f}"
        for name, e in errs.items():
            errors[name].append(abs(e) * 100)
            line += f" | {name} {e * 100:+6.1f}%"
        line += f" | by kind exact at x {needed / scale['by_kind']:.2f}" if needed else " | by kind exact at none"
        print(line)
    for name, e in errors.items():
        print(f"{name}: |error| median {statistics.median(e):.1f}%, {sum(x <= 5 for x in e)} of {len(e)} within 5%")


def adamw_model(params):
    """A one-layer model of exactly `params` parameters: hidden h = 1000, 8 heads, untied embedding
    and head, so params = h (2 vocab + 3 + 4 h + 3 ffn) (two norms a layer, a final one)."""
    h = 1000
    rest = params // h - 3 - 4 * h
    vocab = rest // 4
    while (rest - 2 * vocab) % 3:
        vocab -= 1
    ffn = (rest - 2 * vocab) // 3
    assert h * (2 * vocab + 3 + 4 * h + 3 * ffn) == params
    return (f"[cluster]\nnode_type = \"workstation-1gpu\"\n[model]\nlayers = 1\nhidden = {h}\nheads = 8\n"
            f"kv_heads = 8\nffn = {ffn}\nvocab = {vocab}\n[training]\nframework = \"pytorch-eager\"\n"
            f"global_batch = 1\nseq_len = 512\n")


def adamw(binary):
    import tempfile
    rows = list(csv.DictReader(open(ROOT / "docs/reference/pytorch-h100/adamw.csv")))
    print("torch.optim.AdamW.step(), one fp32 parameter, real on H100 vs commbound profile's AdamW kernels (ms)")
    print(f"{'params':>11} {'impl':7} | {'real':>6} {'sim':>6} {'err':>7} | sim: {'kernels':>7} {'host':>6}")
    fit = {}
    for r in rows:
        params, impl = int(r["fp32_params"]), "fused" if r["fused"] == "True" else "foreach"
        with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
            f.write(adamw_model(params))
            f.flush()
            cmd = [str(binary), "profile", f.name, "--format", "json", "--set", f"training.adamw={impl}"]
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            sys.exit(f"compute_accuracy: {' '.join(cmd)}: {done.stdout}{done.stderr}")
        kernels = [k for k in json.loads(done.stdout)["kernels"] if k["part"] == "optimizer" and "adamw" in k["kernel"]]
        # The measured call starts on an idle GPU: its first kernel waits for its own issue.
        gpu = sum(k["gpu_us"] for k in kernels) / 1e3
        host = kernels[0]["host_us"] / 1e3
        real, sim = float(r["ms"]), gpu + host
        fit.setdefault(impl, []).append((params, real, sim))
        print(f"{params:>11} {impl:7} | {real:6.3f} {sim:6.3f} {(sim / real - 1) * 100:+6.1f}% | "
              f"{len(kernels):>3} {gpu:7.3f} {host:6.3f}")
    print("each side as fixed + per parameter, through the two sizes:")
    for impl, points in fit.items():
        (p0, r0, s0), (p1, r1, s1) = sorted(points)[:2]
        for side, a, b in (("real", r0, r1), ("sim", s0, s1)):
            slope = (b - a) / (p1 - p0)
            print(f"  {impl:7} {side:4}: {a - slope * p0:6.3f} ms fixed + {slope * 1e9:6.2f} ms per 1e9 parameters")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--framework", default="pytorch-eager")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a scenario key for every row, as `commbound profile --set` takes it")
    parser.add_argument("--held", action="store_true", help="the GPU alone against held.csv (eager only)")
    parser.add_argument("--host-replay", action="store_true", help="the forward rows with other host costs per op")
    parser.add_argument("--adamw", action="store_true", help="AdamW's step, foreach and fused, against adamw.csv")
    args = parser.parse_args()
    binary = ROOT / args.build / "bin" / "commbound"
    if args.adamw:
        return adamw(binary)
    if args.held:
        return held(binary, args.set)
    if args.host_replay:
        return host_replay(binary, args.set)
    rows = list(csv.DictReader(open(ROOT / "docs/reference/pytorch-h100/layer_fwd_bwd.csv")))
    print(f"framework {args.framework}: one decoder layer, real PyTorch eager on H100 vs commbound profile (ms)")
    print(f"{'model':5} {'tp':>2} {'b':>2} {'seq':>5} | {'fwd real':>8} {'sim':>7} {'err':>7} {'bound':>5} | "
          f"{'f+b real':>8} {'sim':>7} {'err':>7} {'bound':>5}")
    errors = []
    for r in rows:
        parts = profile(binary, args.framework, r, args.set)
        line = f"{r['model']:5} {r['tp']:>2} {r['batch']:>2} {r['seq']:>5}"
        for column, part in (("fwd_ms", "layer.forward"), ("fwd_bwd_ms", "layer.forward+backward")):
            real, p = float(r[column]), parts[part]
            err = (p["time_ms"] / real - 1) * 100
            errors.append(abs(err))
            line += f" | {real:8.3f} {p['time_ms']:7.3f} {err:+6.1f}% {p['bound_by']:>5}"
        if (r["model"], r["tp"], r["batch"], r["seq"]) == HOST_ROW:
            line += "  (host cost derived here)"
        print(line)
    within = sum(e <= 5 for e in errors)
    print(f"|error|: median {statistics.median(errors):.1f}%, max {max(errors):.1f}%, "
          f"{within} of {len(errors)} within 5%")


if __name__ == "__main__":
    main()
