#!/usr/bin/env python3
"""How well a fixed output tile carries a kernel table's GEMM rows to each other, against FLOPs.

Every [[gemm]] row of one layout is predicted from its nearest other row (log-distance over m, n,
k, as the table picks it): scaled by the two products' FLOPs, and by the ratio of their drain
times for a fixed tile (calibration/table/gemm_tiling.hpp: whole waves of ceil(m / block_m) x
ceil(n / block_n) tiles on sm_count slots, each ceil(k / 64) steps). Prints the median, mean and
90th-percentile |error| per layout and tile. cuBLAS picks its tile per shape, so a fixed one
carries single products worse than FLOPs do; this is why only grouped products (whose tiles pad
each expert) use the drain time, and only for the group against its merged product.

  python3 bench/gemm_tiling_loo.py [--table calibration/h100-sxm5.toml]
"""
import argparse
import math
import tomllib

TILES = [(128, 256), (256, 128), (128, 128), (192, 192)]
BLOCK_K = 64


def ceil_div(a, b):
    return -(-a // b)


def drain_steps(row, block_m, block_n, slots):
    tiles = ceil_div(row["m"], block_m) * ceil_div(row["n"], block_n)
    return ceil_div(tiles, slots) * ceil_div(row["k"], BLOCK_K)


def errors(rows, scale):
    out = []
    for row in rows:
        near = min((o for o in rows if o is not row),
                   key=lambda o: sum(math.log(o[x] / row[x]) ** 2 for x in "mnk"))
        out.append(abs(near["p50_ms"] * scale(row, near) / row["p50_ms"] - 1))
    out.sort()
    return "median {:5.1%}  mean {:5.1%}  p90 {:5.1%}".format(
        out[len(out) // 2], sum(out) / len(out), out[int(0.9 * len(out))])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default="calibration/h100-sxm5.toml")
    args = parser.parse_args()
    with open(args.table, "rb") as f:
        table = tomllib.load(f)
    sms = table["provenance"]["sm_count"]
    print(f"{args.table}: GEMM rows, {sms} SMs; each row from its nearest other row")
    for layout in ("forward", "dgrad", "wgrad"):
        rows = [r for r in table.get("gemm", []) if r["layout"] == layout]
        print(f"{layout} ({len(rows)} rows)")
        print(f"  by FLOPs              {errors(rows, lambda r, o: r['m'] * r['n'] * r['k'] / (o['m'] * o['n'] * o['k']))}")
        for bm, bn in TILES:
            def scale(r, o, bm=bm, bn=bn):
                return drain_steps(r, bm, bn, sms) / drain_steps(o, bm, bn, sms)
            print(f"  drain {bm:3d} x {bn:3d} tiles  {errors(rows, scale)}")


if __name__ == "__main__":
    main()
