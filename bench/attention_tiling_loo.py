#!/usr/bin/env python3
"""How well each candidate tiling carries a kernel table's attention rows to each other.

Every causal, head_dim-128 row of one implementation (multi-head rows: kv_heads = heads) is
predicted from its nearest other row (log-distance over batch, heads and seq, as the table picks
it) in two ways: scaled by the two shapes' FLOPs, and by the ratio of the two grids' drain times
for a tiling (calibration/table/attention_tiling.hpp: CTAs handed out in launch order to
sm_count x ctas_per_sm slots, a causal CTA's score tiles as FlashAttention counts them). Prints,
per direction and tiling, the median, mean and 90th-percentile |error| over the rows. This is how
cudnn_tiling was chosen among the tilings cuDNN's kernel names allow; it reads the table only.

  python3 bench/attention_tiling_loo.py [--table calibration/h100-sxm5.toml] [--implementation cudnn]
"""
import argparse
import heapq
import math
import tomllib

CANDIDATES = [  # (query rows a CTA, key rows a CTA, CTAs an SM)
    (64, 128, 1), (128, 128, 1), (256, 128, 1), (64, 64, 1), (128, 64, 2),
    (64, 128, 2), (128, 128, 2), (128, 256, 1), (64, 256, 1),
]
MAX_SIMULATED_CTAS = 1 << 18


def flops(row):
    f = 4 * row["batch"] * row["heads"] * row["seq"] ** 2 * row["head_dim"] / 2
    return f * (2.5 if row["direction"] == "backward" else 1)


def drain_tiles(row, block_m, block_n, slots):
    """The causal grid's drain time in score tiles, as attention_drain_tiles computes it."""
    s = row["seq"]
    m_tiles, n_tiles = -(-s // block_m), -(-s // block_n)
    if row["direction"] == "forward":
        group = [-(-min((m + 1) * block_m, s) // block_n) for m in range(m_tiles)]
    else:
        group = [m_tiles - n * block_n // block_m for n in range(n_tiles)]
    groups = row["batch"] * row["heads"]
    ctas = groups * len(group)
    if ctas <= slots:
        return max(group)
    if ctas > MAX_SIMULATED_CTAS:
        return sum(group) * groups / slots
    free_at = [0] * slots
    last = 0
    for _ in range(groups):
        for tiles in group:
            done = heapq.heappop(free_at) + tiles
            heapq.heappush(free_at, done)
            last = max(last, done)
    return last


def errors(rows, scale):
    out = []
    for row in rows:
        others = [o for o in rows if o is not row]
        near = min(others, key=lambda o: sum(math.log(o[k] / row[k]) ** 2 for k in ("batch", "heads", "seq")))
        out.append(abs(near["p50_ms"] * scale(row, near) / row["p50_ms"] - 1))
    out.sort()
    return out


def summary(errs):
    return "median {:5.1%}  mean {:5.1%}  p90 {:5.1%}".format(
        errs[len(errs) // 2], sum(errs) / len(errs), errs[int(0.9 * len(errs))])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default="calibration/h100-sxm5.toml")
    parser.add_argument("--implementation", default="cudnn")
    args = parser.parse_args()
    with open(args.table, "rb") as f:
        table = tomllib.load(f)
    sms = table["provenance"]["sm_count"]
    rows = [r for r in table.get("attention", []) if r["implementation"] == args.implementation
            and r["head_dim"] == 128 and r.get("causal", True) and r.get("kv_heads", r["heads"]) == r["heads"]]
    print(f"{args.table}: {args.implementation}, causal head_dim-128 rows, {sms} SMs; each row from its nearest other row")
    for direction in ("forward", "backward"):
        subset = [r for r in rows if r["direction"] == direction]
        print(f"{direction} ({len(subset)} rows)")
        print(f"  by FLOPs                  {summary(errors(subset, lambda r, o: flops(r) / flops(o)))}")
        for m, n, per_sm in CANDIDATES:
            def scale(r, o, m=m, n=n, per_sm=per_sm):
                return drain_tiles(r, m, n, sms * per_sm) / drain_tiles(o, m, n, sms * per_sm)
            print(f"  drain {m:3d} x {n:3d}, {per_sm} a SM   {summary(errors(subset, scale))}")


if __name__ == "__main__":
    main()
