#!/usr/bin/env bash
# Time the README's two commands as a newcomer's fresh machine runs them:
# a fresh clone of HEAD and every cache empty (cargo registry, Go module
# and build caches, the harness's cache and state; no Docker engine, so
# the kind suite's trials are listed as ignored). Rust, Go and GNU time
# must be installed, as the README asks.
#
#   bash ci/time-fresh.sh WORKDIR
#
# Writes WORKDIR/first.log and WORKDIR/tests.log (timed logs, see
# ci/timed.sh), then records them with `harness report timings --record
# docs/src/timings/fresh-machine.json` (the README's and the quick
# start's table render that file). Takes the machine for about 45
# minutes on 2 cores: run it on an otherwise idle machine.
set -euo pipefail
work=${1:?usage: bash ci/time-fresh.sh WORKDIR}
ci=$(cd "$(dirname "$0")" && pwd)
repo_dir=$(dirname "$ci")
mkdir -p "$work"
work=$(cd "$work" && pwd)
[ ! -e "$work/repo" ] || { echo "$work/repo exists: name an empty WORKDIR" >&2; exit 2; }
git clone -q "$repo_dir" "$work/repo"
home=$work/home
mkdir -p "$home/cargo"
# rustup's proxies stay on PATH; a fresh CARGO_HOME has no registry.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CARGO_HOME=$home/cargo GOPATH=$home/go GOCACHE=$home/gocache \
  HARNESS_CACHE_DIR=$home/harness-cache HARNESS_STATE_DIR=$home/harness-state
unset DOCKER_HOST CARGO_TARGET_DIR HARNESS_MINORS HARNESS_KIND_MINORS HARNESS_PRERELEASE_MINORS

bash "$ci/timed.sh" "$work/first.log" "the main job" "$work/repo" \
  "cargo run -p harness -- up" || true
(cd "$work/repo" && cargo run -q -p harness -- down) || true
bash "$ci/timed.sh" "$work/tests.log" "the tests, right after" "$work/repo" \
  "cargo run -q -p harness -- validate && cargo test --workspace" || true
(cd "$work/repo" && cargo run -q -p harness -- report timings \
  --title "A fresh machine: a fresh clone, every cache empty, no Docker engine" \
  --record "$repo_dir/docs/src/timings/fresh-machine.json" \
  "$work/first.log" "$work/tests.log")
