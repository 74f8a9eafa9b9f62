#!/usr/bin/env bash
# Runs libFuzzer targets side by side, JOBS at a time (each target is one process on one core):
# each over its seed corpus (tests/fuzz/corpus/<reader>/), then mutating for SECONDS, keeping what
# it finds in BUILD/fuzz/<reader>/corpus; a crash leaves its input and the sanitizer's report in
# BUILD/fuzz/<reader>/reports/. Prints each target's executions; exits 1 if any target failed,
# showing its log and report.
#   usage: tests/fuzz/run_targets.sh BUILD SECONDS JOBS TARGET...
set -uo pipefail
build=$(cd "$1" && pwd) seconds=$2 jobs=$3
shift 3

run_one() {
  local t=$1 out=$build/fuzz/$1
  rm -rf "$out/reports"; mkdir -p "$out/corpus" "$out/reports"
  ASAN_OPTIONS=log_path=$out/reports/asan UBSAN_OPTIONS=log_path=$out/reports/ubsan:print_stacktrace=1 \
    "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -dict="tests/fuzz/$t.dict" -artifact_prefix="$out/reports/" -print_final_stats=1 \
      "$out/corpus" "tests/fuzz/corpus/$t" > "$out/reports/fuzz.log" 2>&1
  echo $? > "$out/reports/status"
}

running=0
for t in "$@"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=""
for t in "$@"; do
  out=$build/fuzz/$t
  echo "fuzz_$t: $(grep -E '^(#[0-9]+\s+DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$out/reports/fuzz.log" | tr '\n' ' ')"
  [ "$(cat "$out/reports/status")" = 0 ] || failed="$failed $t"
done
for t in $failed; do
  echo "fuzz_$t FAILED: see $build/fuzz/$t/reports/"
  tail -n 30 "$build/fuzz/$t/reports/fuzz.log"
  cat "$build/fuzz/$t/reports/"*san.* 2>/dev/null | head -n 60
done
[ -z "$failed" ]
