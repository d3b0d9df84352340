#!/usr/bin/env bash
# One shard of a run set: `ci/rounds-shard.sh K N OUT ARGS…` runs
# `harness ARGS… --shard K/N --out OUT/shard-K` (ARGS: `bench thor …` or
# `measure …`, with --repeat and --seed, the same for every shard).
# $HARNESS is the harness to run (default: cargo run --release).
set -euo pipefail
k=${1:?usage: ci/rounds-shard.sh K N OUT ARGS...}
n=${2:?usage: ci/rounds-shard.sh K N OUT ARGS...}
out=${3:?usage: ci/rounds-shard.sh K N OUT ARGS...}
shift 3
if [ -n "${HARNESS:-}" ]; then
  read -r -a harness <<<"$HARNESS"
else
  harness=(cargo run --locked --release -q -p harness --)
fi
mkdir -p "$out"
exec "${harness[@]}" "$@" --shard "$k/$n" --out "$out/shard-$k"
