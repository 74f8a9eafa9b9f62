#!/usr/bin/env python3
"""How far a derived kernel table is from the same GPU measured: row by row, by kind.

    build/bin/commbound derive-table --from calibration/h100-sxm5.toml --gpu h200 --out /tmp/h200-derived.toml
    python3 bench/derive_accuracy.py /tmp/h200-derived.toml calibration/h200.toml

For every shape both tables hold (GEMMs by m, n, k and layout; attention by implementation,
direction and shape; memory-bound kernels by op, tokens and width; PyTorch's elementwise kernels by
path, op, elements, width and L2 state) it prints error = derived p50 / measured p50 - 1, per kind:
the rows matched, the median error, the median |error|, p10 and p90. Positive: the derived table
prices the kernel slower than the GPU ran it. [device] and [power] are compared figure by figure.
No GPU needed.
"""
import statistics
import sys
import tomllib

KEYS = {
    "gemm": ("m", "n", "k", "layout"),
    "attention": ("implementation", "direction", "batch", "heads", "kv_heads", "seq", "head_dim", "causal"),
    "memory_bound": ("op", "tokens", "width"),
}


def pct(x):
    return f"{100 * x:+.1f}%"


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def by_key(rows, keys):
    return {tuple(r.get(k) for k in keys): r for r in rows}


def elementwise_key(r):
    return (r["path"], r["op"], r["elements"], r.get("width"), r.get("l2", "cold"))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    derived, measured = (tomllib.load(open(p, "rb")) for p in sys.argv[1:])
    print(f"derived:  {sys.argv[1]} ({derived['provenance'].get('derived_from', '?')})")
    print(f"measured: {sys.argv[2]} ({measured['provenance']['gpu']}, {measured['provenance']['date']})")
    print(f"{'kind':<36} {'rows':>5} {'median':>8} {'|median|':>9} {'p10':>8} {'p90':>8}")
    groups = []
    for kind, keys in KEYS.items():
        d, m = by_key(derived.get(kind, []), keys), by_key(measured.get(kind, []), keys)
        if kind == "attention":
            for impl in sorted({k[0] for k in m}):
                groups.append((f"attention {impl}", [(d[k], m[k]) for k in m if k in d and k[0] == impl]))
        else:
            groups.append((kind, [(d[k], m[k]) for k in m if k in d]))
    d = {elementwise_key(r): r for r in derived.get("pytorch_elementwise", [])}
    m = {elementwise_key(r): r for r in measured.get("pytorch_elementwise", [])}
    for path in sorted({k[0] for k in m}):
        groups.append((f"pytorch_elementwise {path}", [(d[k]["queued_us"], m[k]["queued_us"]) for k in m
                                                       if k in d and k[0] == path]))
    for name, pairs in groups:
        if not pairs:
            print(f"{name:<36} {0:>5}")
            continue
        errs = [(a if isinstance(a, float) else a["p50_ms"]) / (b if isinstance(b, float) else b["p50_ms"]) - 1
                for a, b in pairs]
        print(f"{name:<36} {len(errs):>5} {pct(statistics.median(errs)):>8} "
              f"{100 * statistics.median(abs(e) for e in errs):>8.1f}% {pct(quantile(errs, 0.1)):>8} "
              f"{pct(quantile(errs, 0.9)):>8}")
    for section, fields in (("device", ("copy_GBps", "gemm_TFLOPs")),
                            ("power", ("idle_W", "gemm_W", "memory_bound_W", "mixed_W"))):
        for f in fields:
            a, b = derived.get(section, {}).get(f), measured.get(section, {}).get(f)
            if a is not None and b is not None:
                print(f"[{section}] {f:<24} derived {a:9.1f}  measured {b:9.1f}  {pct(a / b - 1)}")


if __name__ == "__main__":
    main()
