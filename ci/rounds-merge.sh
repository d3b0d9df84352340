#!/usr/bin/env bash
# The shards of one run set joined: `ci/rounds-merge.sh OUT SHARD_DIR…`
# runs `harness report merge SHARD_DIR… --out OUT` (result.json, report.md
# led by its headline table, report.html, junit.xml in OUT).
# $HARNESS is the harness to run (default: cargo run --release).
set -euo pipefail
out=${1:?usage: ci/rounds-merge.sh OUT SHARD_DIR...}
shift
[ "$#" -ge 1 ] || { echo "rounds-merge: no shard dir given" >&2; exit 2; }
if [ -n "${HARNESS:-}" ]; then
  read -r -a harness <<<"$HARNESS"
else
  harness=(cargo run --locked --release -q -p harness --)
fi
exec "${harness[@]}" report merge "$@" --out "$out"
