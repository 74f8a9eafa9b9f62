#!/usr/bin/env bash
# Regenerates docs/figures/<scenario>/ for every scenario of scenarios/paper and scenarios/studies:
# runs it (`commbound run --format csv`) and draws its figures (`commbound plot`).
#   docs/figures/update.sh [BUILD_DIR]      (default: build, as `make` builds)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/bin/commbound"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for scenario in scenarios/paper/*.toml scenarios/studies/*.toml; do
  name="$(basename "$scenario" .toml)"
  echo "== $name" >&2
  "$bin" run "$scenario" --format csv --out "$tmp/$name.csv"
  "$bin" plot "$tmp/$name.csv" --out-dir "docs/figures/$name" --title "$name" --force
done
