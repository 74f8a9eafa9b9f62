#!/usr/bin/env python3
"""[[pytorch_elementwise]] rows for a calibration table from bench/eager_measure.py's CSV files.

    bench/elementwise_rows.py elementwise.csv reductions.csv >> calibration/<gpu>.toml
    bench/elementwise_rows.py --warm elementwise_warm.csv reductions_warm.csv >> calibration/<gpu>.toml

Every timed row becomes one table row (path, op, elements, bytes, queued_us; a reduction's width;
`l2 = "warm"` with --warm, for the files timed over one input set), except the ops whose kernel is
not the one a Llama layer launches on that path (SKIPPED, with the reason) and rows whose kernel is
not of the row's path (a chunk of a single row is contiguous, so PyTorch vectorizes it; a transpose
of a dimension of one is no copy at all). A reduction over the rows (`reduced` = column) is the
table's path column_reduction.
"""
import csv
import sys

# stack_rope ran CatArrayBatchedCopy (our inputs' layout let cat take its batched kernel); the
# layer's stack copies each input with the indexed elementwise kernel instead.
SKIPPED = {"stack_rope"}
# The kernel each path runs (ATen's Loops.cuh, CUDALoops.cuh, Reduce.cuh).
KERNEL_OF_PATH = {"vectorized": "vectorized_elementwise_kernel", "unrolled": "unrolled_elementwise_kernel",
                  "indexed": "elementwise_kernel<128", "reduction": "reduce_kernel"}


def main():
    args = sys.argv[1:]
    warm = "--warm" in args
    files = [a for a in args if a != "--warm"]
    if not files:
        sys.exit(__doc__)
    for name in files:
        rows = [r for r in csv.DictReader(open(name))
                if r["case"] not in SKIPPED and r.get("queued_us") and KERNEL_OF_PATH[r["path"]] in r.get("kernel", "")]
        for r in rows:
            path = "column_reduction" if r.get("reduced") == "column" else r["path"]
            print(f'[[pytorch_elementwise]]\npath = "{path}"\nop = "{r["case"]}"\n' + ('l2 = "warm"\n' if warm else "") +
                  f'elements = {int(r["elements"])}\n' + (f'width = {int(r["width"])}\n' if r.get("width") else "") +
                  f'bytes = {float(r["bytes"]):.1f}\nqueued_us = {float(r["queued_us"])}\n')


if __name__ == "__main__":
    main()
