#!/usr/bin/env bash
# Regenerates docs/figures/:
#   scenarios    docs/figures/<scenario>/ for every scenario of scenarios/paper and scenarios/studies:
#                runs it (`commbound run --format csv`) and draws its figures (`commbound plot`);
#   collectives  docs/figures/collectives/ (the AllGather and AllReduce of `make demo`: 1 GiB on 1 to
#                256 DGX H100 nodes) and docs/figures/{allgather,allreduce}_by_size/ (64 KiB to 2 GiB
#                on 1, 8, 64 and 256 nodes): `commbound collective --format csv`, then `commbound plot`.
#   train        docs/figures/train_7b/: the time to train the study's 7B FSDP job on 2 trillion tokens at
#                128 to 16384 GPUs (`commbound train --format csv`, then `commbound plot`);
#                docs/figures/train_405b/: Llama 3.1 405B on 15.6 trillion tokens at 16384 to 131072
#                GPUs, the global batch grown with the data-parallel degree (docs/train.md).
#   docs/figures/update.sh [BUILD_DIR] [all|scenarios|collectives|train]   (default: build, as `make` builds; all)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/bin/commbound"
what="${2:-all}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [[ "$what" == all || "$what" == scenarios ]]; then
  for scenario in scenarios/paper/*.toml scenarios/studies/*.toml; do
    name="$(basename "$scenario" .toml)"
    echo "== $name" >&2
    # The figures' title: the scenario's own description (its `description = "..."` line), else its name.
    title="$(sed -n 's/^description = "\(.*\)"$/\1/p' "$scenario")"
    "$bin" run "$scenario" --format csv --out "$tmp/$name.csv"
    "$bin" plot "$tmp/$name.csv" --out-dir "docs/figures/$name" --title "${title:-$name}" --force
  done
fi
if [[ "$what" == all || "$what" == collectives ]]; then
  demo=scenarios/examples/dgx-h100-ib-ndr.toml  # the Makefile's DEMO_SCENARIO
  echo "== collectives" >&2
  for op in allgather allreduce; do
    "$bin" collective "$demo" --op "$op" --nodes 1:256 --bytes 1G --format csv --out "$tmp/demo-$op.csv"
    "$bin" collective "$demo" --op "$op" --nodes 1,8,64,256 --bytes 64K,512K,4M,32M,256M,2G --format csv \
      --out "$tmp/$op-by-size.csv"
    "$bin" plot "$tmp/$op-by-size.csv" --out-dir "docs/figures/${op}_by_size" --force \
      --title "$op on DGX H100 + IB NDR (rail-optimized, adaptive)"
  done
  # One CSV, one header: AllGather's rows, then AllReduce's.
  { cat "$tmp/demo-allgather.csv"; tail -n +2 "$tmp/demo-allreduce.csv"; } > "$tmp/demo.csv"
  "$bin" plot "$tmp/demo.csv" --out-dir docs/figures/collectives --force \
    --title "1 GiB on DGX H100 + IB NDR (rail-optimized, adaptive)"
fi
if [[ "$what" == all || "$what" == train ]]; then
  echo "== train" >&2
  "$bin" train scenarios/paper/weak_scaling_7b.toml --tokens 2e12 --nodes 16:2048 --format csv --out "$tmp/train.csv"
  "$bin" plot "$tmp/train.csv" --out-dir docs/figures/train_7b --force \
    --title "Llama-2 7B FSDP, 2T tokens, Llama 3's failure rates"
  "$bin" train scenarios/published/llama3.1_405b_dgxc_bf16.toml --tokens 15.6e12 --set cluster.nodes=2048 \
    --set training.global_batch=2048 --set 'sweep.values=[[2048, 2048], [4096, 4096], [8192, 8192], [16384, 16384]]' \
    --set fabric.switch_radix=128 --set parallel.pp=16 --set parallel.virtual_stages=1 --set parallel.cp=1 \
    --set parallel.pp_first_stage_layers=7 --set parallel.pp_last_stage_layers=7 \
    --set training.activation_checkpointing=full --format csv --out "$tmp/train405.csv"
  "$bin" plot "$tmp/train405.csv" --out-dir docs/figures/train_405b --force \
    --title "Llama 3.1 405B TP8 PP16, 15.6T tokens, Llama 3's failure rates"
fi
