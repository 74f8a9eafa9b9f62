#!/usr/bin/env python3
"""The four training steps captured on one H200 (scenarios/traces/h200/), three ways: as the GPU ran
them, replayed from their profiler traces, and built by commbound from the model and the framework's
recipe, priced by the measured H200 table (calibration/h200.toml).

    python3 bench/h200_steps.py build          # build: the folder holding bin/commbound

For each capture it prints: the step measured without the profiler (median of 5, CUDA events) and
with it (median of the 3 profiled steps), `commbound run` of the trace scenario (every kernel at its
traced duration, ProfilerStep#6), and `commbound run` of the same model, batch and GPU with
training.framework = pytorch-eager or pytorch-compile and no trace (kernel_table = "auto"), each
with its error against the unprofiled step (positive: commbound is slower than the GPU was).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CAPTURES = ["llama2-7b-4layers-eager", "llama2-7b-4layers-compile", "llama2-1b-eager", "llama2-1b-compile"]


def iteration_s(commbound, scenario):
    out = subprocess.run([commbound, "run", scenario, "--format", "json"], capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["rows"][0]["iteration_s"])


def built_scenario(trace_scenario, framework, folder):
    """The trace scenario without its [workload] (the model's own program), priced by the table."""
    text = open(trace_scenario).read()
    text = text.split("\n[workload]")[0]
    text = re.sub(r'kernel_table = "roofline".*', 'kernel_table = "auto"', text)
    text = text.replace("[training]\n", f'[training]\nframework = "{framework}"\n', 1)
    path = os.path.join(folder, os.path.basename(trace_scenario))
    open(path, "w").write(text)
    return path


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    commbound = os.path.join(sys.argv[1], "bin", "commbound")
    print(f"{'capture':<28} {'measured':>9} {'profiled':>9} {'replay':>9} {'err':>7} {'built':>9} {'err':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for name in CAPTURES:
            base = os.path.join(ROOT, "scenarios", "traces", "h200", name)
            step = json.load(open(base + ".step.json"))
            measured_ms = step["step_ms_median"]
            replay_ms = 1e3 * iteration_s(commbound, base + ".toml")
            framework = "pytorch-compile" if name.endswith("compile") else "pytorch-eager"
            built_ms = 1e3 * iteration_s(commbound, built_scenario(base + ".toml", framework, folder))
            print(f"{name:<28} {measured_ms:8.2f}  {step['profiled_step_ms_median']:8.2f}  {replay_ms:8.2f} "
                  f"{100 * (replay_ms / measured_ms - 1):+6.1f}% {built_ms:8.2f} {100 * (built_ms / measured_ms - 1):+6.1f}%")
    print("ms per step; err against the step measured without the profiler")


if __name__ == "__main__":
    main()
