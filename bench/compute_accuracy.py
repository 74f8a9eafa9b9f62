#!/usr/bin/env python3
"""Compute accuracy: `commbound profile` against real PyTorch eager layer timings on H100.

Every row of docs/reference/pytorch-h100/layer_fwd_bwd.csv (one Llama decoder layer, forward and
forward+backward, at several sizes, batches, sequence lengths and tensor-parallel shards) is
profiled with [training] framework = "pytorch-eager" at the same shape, each part alone on an idle
GPU as the measurement ran it, and printed beside the real time with the error. The row marked
'host' is the one the eager host cost was derived from (calibration/frameworks.toml).

    bench/compute_accuracy.py [build dir, default build] [--framework NAME] [--set KEY=VALUE ...]
"""
import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"1b": "llama2-1b", "7b": "llama2-7b", "13b": "llama2-13b"}
SCENARIO = "scenarios/examples/dgx-h100-ib-ndr.toml"  # one DGX H100 node: tp up to 8
HOST_ROW = ("7b", "8", "1", "2048")  # the row frameworks.toml's eager host cost comes from


def profile(binary, framework, row, extra_sets):
    sets = [*extra_sets, f"model.name={MODELS[row['model']]}", f"training.framework={framework}", f"parallel.tp={row['tp']}",
            f"training.local_batch={row['batch']}", f"training.seq_len={row['seq']}"]
    cmd = [str(binary), "profile", SCENARIO, "--format", "json"]
    for s in sets:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"compute_accuracy: {' '.join(cmd)}: {done.stdout}{done.stderr}")
    return {p["part"]: p for p in json.loads(done.stdout)["parts"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--framework", default="pytorch-eager")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a scenario key for every row, as `commbound profile --set` takes it")
    args = parser.parse_args()
    binary = ROOT / args.build / "bin" / "commbound"
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
