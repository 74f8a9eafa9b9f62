#!/usr/bin/env python3
"""Collective accuracy by node count and by source: `commbound validate` against every real point.

Runs `commbound validate SCENARIO --format csv` for each scenario (default: the InfiniBand DGX H100
and the AWS p5 EFA examples; each is compared with the points measured over its link's transport,
and a one-node point, which every H100 scenario sees, is counted once, from the first) on the
shipped reference tables (the published points, the 1-4-node points the fabric fits were made from,
and the public runs at 8-248 nodes no fit reads) and prints the median and max |error| and the most
optimistic error for the bands that decide whether the collective model holds beyond the fitted
nodes:

  1-4 nodes, all collectives            (where the fits were made)
  1 node, AllGather/ReduceScatter 32 MiB - 1 GiB
  8+ nodes, all; AllGather/ReduceScatter; each collective; each source

Error = simulated busbw / measured busbw - 1 (positive: the model is optimistic). Points of a
broken fabric (the CSV's `excluded` column) are left out, as validate's own summary does.

    bench/collective_accuracy.py [build dir, default build] [--scenario FILE ...] [--set KEY=VALUE ...]
"""
import argparse
import csv
import io
import statistics
import subprocess
import sys

LARGE_BYTES = 8 * 2**30  # validate simulates "large" at 8 GiB
MULTI_NODES = 8          # and "multi" at 8 nodes


def nodes_of(row):
    return MULTI_NODES if row["nodes"] == "multi" else int(row["nodes"])


def bytes_of(row):
    return LARGE_BYTES if row["bytes"] == "large" else float(row["bytes"])


def source_of(row):
    """The publisher of a point: the repository or issue its source names first."""
    s = row["source"]
    if "xxrjun" in s and "of 8 GPUs per node" in s:
        return "10-node H100 cluster (xxrjun), 1, 2, 4 of 8 GPUs a node"
    for key, name in (("aws-gpu-communication-benchmark", "AWS p5 EFA (crazyguitar)"),
                      ("xxrjun", "10-node H100 cluster (xxrjun)"),
                      ("NVIDIA/nccl-tests issue 322", "128 nodes, Ring/LL128 forced (NVIDIA/nccl-tests issue 322)"),
                      ("coreweave", "CoreWeave SHARP (node count inferred)"),
                      ("NVIDIA/nccl issue 1218", "NVIDIA/nccl issue 1218 (approx.)"),
                      ("NVIDIA/nccl issue 1229", "NVIDIA/nccl issue 1229 (approx.)"),
                      ("arXiv 2411.13055", "arXiv 2411.13055 (plot)")):
        if key in s:
            return name
    return "other"


def band(label, rows):
    if not rows:
        print(f"{label:<72} {0:>6}")
        return
    errors = [float(r["error"]) for r in rows]
    abs_errors = [abs(e) for e in errors]
    print(f"{label:<72} {len(rows):>6} {100 * statistics.median(abs_errors):>10.1f}% "
          f"{100 * max(abs_errors):>9.1f}% {100 * max(errors):>+12.1f}%")


def validate(build, scenario, sets):
    command = [f"{build}/bin/commbound", "validate", scenario, "--format", "csv"]
    for s in sets:
        command += ["--set", s]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(run.stdout + run.stderr)
    print("$ " + " ".join(command))
    return [r for r in csv.DictReader(io.StringIO(run.stdout)) if not r["excluded"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--scenario", action="append", default=[])
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    scenarios = args.scenario or ["scenarios/examples/dgx-h100-ib-ndr.toml", "scenarios/examples/aws-p5-efa.toml"]
    rows = []
    for i, scenario in enumerate(scenarios):
        rows += [r for r in validate(args.build, scenario, args.set) if i == 0 or nodes_of(r) > 1]
    gather = ("allgather", "reducescatter")
    print(f"{'band':<72} {'points':>6} {'median|err|':>11} {'max|err|':>10} {'most optimistic':>13}")
    band("1-4 nodes, all", [r for r in rows if nodes_of(r) <= 4])
    band("1 node, AllGather/ReduceScatter 32 MiB - 1 GiB",
         [r for r in rows if nodes_of(r) == 1 and r["collective"] in gather and 32 * 2**20 <= bytes_of(r) <= 2**30])
    at_scale = [r for r in rows if nodes_of(r) >= 8]
    band("8+ nodes, all", at_scale)
    band("8+ nodes, AllGather/ReduceScatter", [r for r in at_scale if r["collective"] in gather])
    for collective in sorted({r["collective"] for r in at_scale}):
        band("  8+ nodes, " + collective, [r for r in at_scale if r["collective"] == collective])
    for source in sorted({source_of(r) for r in at_scale}):
        band("  8+ nodes, " + source, [r for r in at_scale if source_of(r) == source])


if __name__ == "__main__":
    main()
