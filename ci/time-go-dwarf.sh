#!/usr/bin/env bash
# What the compiler's DWARF costs in a build from Go modules: the harness
# builds stripped binaries (`-ldflags -s -w`), and since it also passes
# `-gcflags=all=-dwarf=false` the compiler no longer makes the DWARF the
# linker throws away (harness/src/tools/build.rs `go_build`). This times
# one component's `go build`, as the harness runs it, with an empty Go
# build cache each time (the module cache as it is), with and without
# that flag, alternated, and records the runs with `harness report timings
# --record docs/src/timings/go-dwarf.json`. Run it on an idle machine.
#
#   bash ci/time-go-dwarf.sh WORKDIR [REPEATS]
#
# The component is jobset-controller v0.12.0 (a controller-runtime build
# of the Kubernetes libraries, about a minute cold here): its wrapper
# module is prepared by `harness tools install` into WORKDIR's cache.
set -euo pipefail
work=${1:?usage: bash ci/time-go-dwarf.sh WORKDIR [REPEATS]}
repeats=${2:-3}
ci=$(cd "$(dirname "$0")" && pwd)
repo_dir=$(dirname "$ci")
mkdir -p "$work"
work=$(cd "$work" && pwd)
export HARNESS_CACHE_DIR=$work/cache
harness() { (cd "$repo_dir" && cargo run -q -p harness -- "$@"); }
# Prepares the wrapper module (go.mod, go.sum) and builds it once.
harness tools install --only jobset-controller --source build > "$work/install.log" 2>&1 \
  || { cat "$work/install.log" >&2; exit 1; }
tree=$HARNESS_CACHE_DIR/go/jobset-0.12.0
[ -f "$tree/go.mod" ] || { echo "no wrapper module at $tree" >&2; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off
build="go build -trimpath GCFLAGS -ldflags '-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=v0.12.0' -o $work/out sigs.k8s.io/jobset"
logs=()
for i in $(seq 1 "$repeats"); do
  for variant in with-dwarf no-dwarf; do
    flags=""
    [ "$variant" = with-dwarf ] || flags="-gcflags all=-dwarf=false"
    rm -rf "$work/gocache" "$work/out"
    log=$work/$variant-$i.log
    GOCACHE=$work/gocache bash "$ci/timed.sh" "$log" \
      "jobset-controller v0.12.0, empty build cache, $variant ($i of $repeats)" "$repo_dir" \
      "cd $tree && ${build/GCFLAGS/$flags}"
    logs+=("$log")
  done
done
rm -rf "$work/gocache" "$work/out"
harness report timings \
  --title "A Go build with and without the compiler's DWARF (stripped either way)" \
  --record "$repo_dir/docs/src/timings/go-dwarf.json" "${logs[@]}"
