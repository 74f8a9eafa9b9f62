#!/usr/bin/env bash
# One GPU session's work, in one command: build kernels/ alone (no SimGrid), run the GPU tests,
# real NCCL collectives (commbound-nccl-bench), the kernel benchmarks, our attention beside
# PyTorch SDPA, the calibration, and the replays.
# Logs go to a work folder, packed at the end into $OUT/session.tar.gz; the summary and the
# calibration table are also copied to $OUT (default ./gpu-out). Each stage has its own time
# limit, cut to what is left of the session's (SESSION_S, default 570 s), so that a hang in one
# still leaves the others' results.
#
#   bench/gpu_session.sh [quick|full]     (quick: --quick calibration grid)
#   bench/gpu_session.sh traces           (only the PyTorch profiler captures: bench/capture_traces.py,
#                                          eager and torch.compile, into $OUT/traces; docs/traces.md)
#   bench/gpu_session.sh all              (full, then the captures with the time left)
#   SHAPES=shapes.toml bench/gpu_session.sh full   (also the shapes of `commbound shapes SCENARIO...`)
#
# Where toml++ or GoogleTest are not installed (a bare GPU box), their sources can sit in
# .carry/include/toml++ and .carry/googletest (both from Debian: libtomlplusplus-dev, libgtest-dev);
# CLI11's headers (libcli11-dev) in .carry/include/CLI for commbound-nccl-bench, which finds NCCL
# in the toolkit, the system or PyTorch's nvidia-nccl wheel.
set -u
MODE=${1:-full}
FINAL=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d /tmp/commbound-gpu.XXXX)
BUILD=${BUILD:-build-gpu}
DEADLINE=$(( $(date +%s) + ${SESSION_S:-570} ))
mkdir -p "$FINAL"
log() { echo "== $(date +%T) $*" | tee -a "$OUT/summary.txt"; }
# Seconds for a stage: `want`, or what is left before the deadline less 15 s for packing.
lim() { local left=$(( DEADLINE - $(date +%s) - 15 )); [ "$left" -lt 1 ] && left=1; echo $(( $1 < left ? $1 : left )); }
# $FINAL gets few flat files (a device tool brings back 8 at most, 2 folders down): the logs in one
# archive, the summary, the calibration table, and one archive per captured trace.
pack() {
  tar czf "$FINAL/session.tar.gz" --exclude=./traces -C "$OUT" . 2>/dev/null
  cp "$OUT/summary.txt" "$FINAL/" 2>/dev/null
  [ -f "$OUT/calibration.toml" ] && cp "$OUT/calibration.toml" "$FINAL/"
  for d in "$OUT"/traces/*/; do
    [ -d "$d" ] && tar cf "$FINAL/trace-$(basename "$d").tar" -C "$OUT/traces" "$(basename "$d")"
  done
}
trap pack EXIT

extra=()
[ -d .carry/include/toml++ ] && extra+=(-DCOMMBOUND_TOMLPLUSPLUS_INCLUDE_DIR=$PWD/.carry/include)
[ -d .carry/googletest ] && extra+=(-DCOMMBOUND_GTEST_SOURCE_DIR=$PWD/.carry/googletest)
[ -f .carry/commit ] && extra+=(-DCOMMBOUND_GIT_COMMIT=$(cat .carry/commit))
nccl_wheel=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
[ -f "$nccl_wheel/include/nccl.h" ] && extra+=(-DNCCL_ROOT=$nccl_wheel)

log "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>&1)"
captures() {
  log "traces: Llama-2 7B (4 layers) and 1B, batch 2 x 4096, bf16 autocast, fused AdamW; eager and torch.compile"
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  launch=(python3); [ "$gpus" -gt 1 ] && launch=(torchrun --nproc-per-node "$gpus")
  PYTHONUNBUFFERED=1 timeout $(lim 540) "${launch[@]}" bench/capture_traces.py --out "$OUT/traces" >"$OUT/traces.log" 2>&1
  echo "capture exit $? on $gpus GPU(s)" | tee -a "$OUT/summary.txt"
  tail -5 "$OUT/traces.log"
  cat "$OUT"/traces/*/rank0.json 2>/dev/null | tee -a "$OUT/summary.txt"
}
if [ "$MODE" = traces ]; then
  captures
  exit 0
fi
log "configure + build ($BUILD)"
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
if ! { cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCOMMBOUND_KERNELS_ONLY=ON "${extra[@]}" \
       && cmake --build "$BUILD" -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  log "BUILD FAILED"
  exit 1
fi

log "tests (kernels: unit + gpu)"
(cd "$BUILD" && timeout $(lim 150) ctest --output-on-failure -j 1) >"$OUT/tests.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*|SKIPPED" "$OUT/tests.log" | tail -20 | tee -a "$OUT/summary.txt"

log "commbound-nccl-bench: allreduce and allgather on every GPU, 1M..1G (nccl-tests format, for fit-fabric)"
if [ -x "$BUILD/bin/commbound-nccl-bench" ]; then
  for op in allreduce allgather; do
    timeout $(lim 60) "$BUILD/bin/commbound-nccl-bench" --op $op -b 1M -e 1G --force --out "$OUT/nccl_$op.txt" \
      >/dev/null 2>"$OUT/nccl_$op.err"
    echo "nccl-bench $op exit $?: $(grep -h 'Avg bus bandwidth' "$OUT/nccl_$op.txt" 2>/dev/null) $(cat "$OUT/nccl_$op.err")" \
      | tee -a "$OUT/summary.txt"
  done
else
  log "commbound-nccl-bench not built (no NCCL or CLI11; see build.log)"
fi

log "bench_kernels"
timeout $(lim 60) "$BUILD/bin/bench_kernels" 2>&1 | tee "$OUT/bench_kernels.txt" | tee -a "$OUT/summary.txt"
log "bench_attention"
timeout $(lim 60) "$BUILD/bin/bench_attention" 2>&1 | tee "$OUT/bench_attention.txt" | tee -a "$OUT/summary.txt"

log "attention vs PyTorch SDPA (flash, cuDNN)"
quick=(); [ "$MODE" = quick ] && quick=(--quick)
[ -n "${SHAPES:-}" ] && quick+=(--shapes "$SHAPES")
"$BUILD/bin/commbound-calibrate" --models calibration/models.toml --list-shapes "${quick[@]}" >"$OUT/grid_shapes.toml"
PYTHONUNBUFFERED=1 timeout $(lim 150) python3 bench/attention_vs_sdpa.py --bench "$BUILD/bin/bench_attention" \
  --shapes "$OUT/grid_shapes.toml" --rows-out "$OUT/cudnn_rows.toml" >"$OUT/sdpa.txt" 2>"$OUT/sdpa.err"
cat "$OUT/sdpa.txt" | tee -a "$OUT/summary.txt"
tail -3 "$OUT/sdpa.err"

log "calibration ($MODE)"
add=(); [ -s "$OUT/cudnn_rows.toml" ] && add=(--add-rows "$OUT/cudnn_rows.toml")
# GEMMs and attention timed 40% of the time, copies between, as the shipped table's (docs/calibration.md).
timeout $(lim 330) "$BUILD/bin/commbound-calibrate" --models calibration/models.toml --out "$OUT/calibration.toml" --force \
  --gemm-duty 0.4 "${quick[@]}" "${add[@]}" 2>"$OUT/calibrate.log"
echo "calibrate exit $?" | tee -a "$OUT/summary.txt"
grep -E "copy|power|contention|wrote|error|commbound-calibrate:" "$OUT/calibrate.log" | tee -a "$OUT/summary.txt"

tbl=(); [ -s "$OUT/calibration.toml" ] && tbl=(--table "$OUT/calibration.toml")
log "replay: Llama-2 7B layer, micro-batch 2 x 4096, tp 1"
timeout $(lim 60) "$BUILD/bin/commbound-calibrate" --models calibration/models.toml --replay llama2-7b --micro-batch 2 \
  --seq 4096 --tp 1 --layers 1 "${tbl[@]}" 2>&1 | tee "$OUT/replay_7b_layer.txt" | tail -5 | tee -a "$OUT/summary.txt"
log "replay: Llama-2 1B full step with AdamW, micro-batch 1 x 2048"
timeout $(lim 90) "$BUILD/bin/commbound-calibrate" --models calibration/models.toml --replay llama2-1b --micro-batch 1 \
  --seq 2048 --tp 1 --full-model "${tbl[@]}" 2>&1 | tee "$OUT/replay_1b_full.txt" | tail -5 | tee -a "$OUT/summary.txt"
[ "$MODE" = all ] && captures
log "done"
