#!/usr/bin/env bash
# Regenerates the golden outputs of scenarios/paper (after a deliberate model change: say which in
# the commit message). Usage: tests/golden/update.sh [build dir, default build]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/bin/commbound"
for f in scenarios/paper/*.toml; do
  "$bin" run "$f" --format csv --out "tests/golden/paper/$(basename "$f" .toml).csv" --force
done
