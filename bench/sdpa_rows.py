#!/usr/bin/env python3
"""Kernel-table rows from a CSV of PyTorch SDPA timings (docs/reference/pytorch-h100/sdpa_causal_bf16.csv).

Each CSV row is one causal bf16 `F.scaled_dot_product_attention` shape timed per backend: the
median of its forward (fwd_ms) and of forward + backward (fwd_bwd_ms). This writes them as
[[attention]] rows of a calibration table: backend "flash" (FlashAttention-2) as implementation
"flash2", "cudnn" as "cudnn" ("efficient" has no implementation in commbound and is skipped);
forward = fwd_ms, backward = fwd_bwd_ms - fwd_ms. The CSV keeps medians only, so p10 = p50 = p90
(an op priced from such a row draws no jitter). Rows whose shape the table already holds for that
implementation are left out (the table's own measurement stays).

  python3 bench/sdpa_rows.py docs/reference/pytorch-h100/sdpa_causal_bf16.csv --table calibration/h100-sxm5.toml

prints the new rows; with --append they are appended to the table (rewritten atomically). No GPU
needed.
"""
import argparse
import csv
import os
import sys
import tomllib

IMPLEMENTATION = {"flash": "flash2", "cudnn": "cudnn"}


def rows_of(csv_path, existing):
    out = []
    with open(csv_path, newline="") as f:
        for n, r in enumerate(csv.DictReader(f), start=2):
            impl = IMPLEMENTATION.get(r["backend"])
            if impl is None:
                continue
            shape = tuple(int(r[k]) for k in ("batch", "heads", "kv_heads", "seq", "head_dim"))
            fwd, fwd_bwd = float(r["fwd_ms"]), float(r["fwd_bwd_ms"])
            if not 0 < fwd < fwd_bwd:
                sys.exit(f"{csv_path}:{n}: fwd_ms = {fwd}, fwd_bwd_ms = {fwd_bwd}: need 0 < fwd_ms < fwd_bwd_ms")
            for direction, ms in (("forward", fwd), ("backward", fwd_bwd - fwd)):
                if (impl, direction) + shape in existing:
                    continue
                existing.add((impl, direction) + shape)
                out.append((impl, direction, shape, ms))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="SDPA timings: batch,heads,kv_heads,seq,head_dim,backend,fwd_ms,fwd_bwd_ms")
    p.add_argument("--table", required=True, help="the calibration table the rows are for")
    p.add_argument("--append", action="store_true", help="append the new rows to --table")
    a = p.parse_args()
    with open(a.table, "rb") as f:
        table = tomllib.load(f)
    existing = {(r.get("implementation", "commbound"), r["direction"], r["batch"], r["heads"], r["kv_heads"],
                 r["seq"], r["head_dim"]) for r in table.get("attention", []) if r.get("causal", True)}
    text = f"\n# PyTorch SDPA, causal bf16, medians (p10 = p90 = p50): {os.path.basename(a.csv)} (bench/sdpa_rows.py)\n"
    for impl, direction, (b, h, kv, s, d), ms in rows_of(a.csv, existing):
        text += (f'[[attention]]\nimplementation = "{impl}"\ndirection = "{direction}"\nbatch = {b}\nheads = {h}\n'
                 f"kv_heads = {kv}\nseq = {s}\nhead_dim = {d}\ncausal = true\n"
                 f"p10_ms = {ms:.4g}\np50_ms = {ms:.4g}\np90_ms = {ms:.4g}\n\n")
    if not a.append:
        sys.stdout.write(text)
        return 0
    with open(a.table) as f:
        body = f.read()
    tmp = a.table + ".tmp"
    with open(tmp, "w") as f:
        f.write(body.rstrip("\n") + "\n" + text.rstrip("\n") + "\n")
    os.replace(tmp, a.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
