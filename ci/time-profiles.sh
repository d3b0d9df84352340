#!/usr/bin/env bash
# Time building the harness from an empty target directory with cargo's
# dev and release profiles (the cargo registry as it is), one after the
# other, and record both with `harness report timings --record
# docs/src/timings/build-profiles.json`: why the README's first command
# uses the dev profile. About 13 minutes on 2 cores; run it idle.
#
#   bash ci/time-profiles.sh WORKDIR
set -euo pipefail
work=${1:?usage: bash ci/time-profiles.sh WORKDIR}
ci=$(cd "$(dirname "$0")" && pwd)
repo_dir=$(dirname "$ci")
mkdir -p "$work"
work=$(cd "$work" && pwd)
logs=()
for profile in dev release; do
  flag=""
  [ "$profile" = dev ] || flag="--release "
  rm -rf "$work/target-$profile"
  CARGO_TARGET_DIR=$work/target-$profile bash "$ci/timed.sh" "$work/build-$profile.log" \
    "the harness, $profile profile, empty target/" "$repo_dir" "cargo build ${flag}-p harness"
  logs+=("$work/build-$profile.log")
  rm -rf "$work/target-$profile"
done
(cd "$repo_dir" && cargo run -q -p harness -- report timings \
  --title "Building the harness from an empty target directory, registry warm" \
  --record "$repo_dir/docs/src/timings/build-profiles.json" "${logs[@]}")
