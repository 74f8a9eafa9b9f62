#!/usr/bin/env python3
"""[[pytorch_elementwise]] rows for a calibration table from bench/eager_measure.py's elementwise.csv.

    bench/elementwise_rows.py elementwise.csv >> calibration/<gpu>.toml

Every timed row becomes one table row (path, op, elements, bytes, queued_us), except the ops whose
kernel is not the one a Llama layer launches on that path (SKIPPED, with the reason) and rows whose
kernel is not of the row's path (a chunk of a single row is contiguous, so PyTorch vectorizes it;
a transpose of a dimension of one is no copy at all).
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
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = [r for r in csv.DictReader(open(sys.argv[1]))
            if r["case"] not in SKIPPED and r.get("queued_us") and KERNEL_OF_PATH[r["path"]] in r.get("kernel", "")]
    for r in rows:
        print(f'[[pytorch_elementwise]]\npath = "{r["path"]}"\nop = "{r["case"]}"\nelements = {int(r["elements"])}\n'
              f'bytes = {float(r["bytes"]):.1f}\nqueued_us = {float(r["queued_us"])}\n')


if __name__ == "__main__":
    main()
