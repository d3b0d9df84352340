#!/usr/bin/env bash
# The matrix of a run set's shards for GitHub Actions (.github/workflows/
# rounds.yml): `ci/rounds-matrix.sh N` prints {"shard":[1,…,N]}.
set -euo pipefail
n=${1:?usage: ci/rounds-matrix.sh SHARDS}
case "$n" in
  ''|*[!0-9]*) echo "rounds-matrix: SHARDS must be a whole number, got $n" >&2; exit 2 ;;
esac
if [ "$n" -lt 1 ] || [ "$n" -gt 256 ]; then
  echo "rounds-matrix: 1 to 256 shards (a matrix makes at most 256 jobs), got $n" >&2
  exit 2
fi
printf '{"shard":['
for k in $(seq 1 "$n"); do
  [ "$k" = 1 ] || printf ','
  printf '%s' "$k"
done
printf ']}\n'
