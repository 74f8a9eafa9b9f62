#!/usr/bin/env python3
"""Achieved TFLOP/s of every GEMM of one Llama layer (and its LM head), read from a calibration
table, at tensor parallelism 1, 2, 4, 8: the figures the kernels issue asks for.

  python3 bench/layer_gemms.py [--table calibration/h100-sxm5.toml] [--model llama2-7b]
                               [--tokens 8192] [--tp 1,2,4,8]

A linear layer Y = X W^T (X [T x in], W [out x in]) has three GEMMs (row-major m x n x k):
forward T x out x in, dgrad T x in x out, wgrad out x in x T; FLOPs 2 m n k each.
"""
import argparse
import sys
import tomllib


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--table", default="calibration/h100-sxm5.toml")
    p.add_argument("--models", default="calibration/models.toml")
    p.add_argument("--model", default="llama2-7b")
    p.add_argument("--tokens", type=int, default=8192, help="micro-batch x sequence length (default 2 x 4096)")
    p.add_argument("--tp", default="1,2,4,8")
    a = p.parse_args()
    with open(a.table, "rb") as f:
        table = tomllib.load(f)
    with open(a.models, "rb") as f:
        m = tomllib.load(f)[a.model]
    rows = {(r["m"], r["n"], r["k"], r["layout"]): r["p50_ms"] for r in table.get("gemm", [])}
    prov = table.get("provenance", {})
    print(f"{a.table}: {prov.get('gpu')} ({'DERIVED' if prov.get('derived') else 'measured'} {prov.get('date')}); "
          f"{a.model}, {a.tokens} tokens; TFLOP/s of the p50 time\n")
    d = m["hidden"] // m["heads"]
    T, h = a.tokens, m["hidden"]
    print(f"{'tp':>3} {'linear':>8} {'out x in':>13} {'forward':>9} {'dgrad':>9} {'wgrad':>9}")
    missing = 0
    for tp in (int(x) for x in a.tp.split(",")):
        linears = {
            "qkv": ((m["heads"] + 2 * m["kv_heads"]) * d // tp, h),
            "o_proj": (h, h // tp),
            "gate_up": (2 * m["ffn"] // tp, h),
            "down": (h, m["ffn"] // tp),
            "lm_head": (m["vocab"] // tp, h),
        }
        for name, (out, inp) in linears.items():
            cells = []
            for shape in ((T, out, inp, "forward"), (T, inp, out, "dgrad"), (out, inp, T, "wgrad")):
                ms = rows.get(shape)
                if ms is None:
                    missing += 1
                    cells.append(f"{'-':>9}")
                else:
                    cells.append(f"{2.0 * shape[0] * shape[1] * shape[2] / (ms * 1e-3) / 1e12:9.1f}")
            print(f"{tp:>3} {name:>8} {f'{out} x {inp}':>13} {' '.join(cells)}")
    if missing:
        print(f"\n{missing} shapes not in the table (measure them: commbound-calibrate --shapes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
