#!/usr/bin/env bash
# Module structure, run by .ci/run (the layer order, the cycle check over
# every `crate::` path and module files that only declare are
# harness/tests/architecture.rs, run by cargo test):
# 1. cargo-cycles (crates.io, pinned in harness/src/tools/versions.rs,
#    installed once under the harness cache dir) finds no import cycle;
# 2. code imports by absolute path (`crate::a::b`), never `super::` or
#    `self::` outside test modules, so cargo-cycles sees every `use` edge.
#    Test modules may `use super::*;` (the module they test).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(bash ci/pinned.sh CARGO_CYCLES_VERSION)
root="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness}/ci-lint/cargo-cycles-$version"
if [ ! -x "$root/bin/cargo-cycles" ]; then
  echo "check-modules: installing cargo-cycles v$version from crates.io" >&2
  cargo install --locked --quiet cargo-cycles --version "$version" --root "$root" >&2
fi
cycles="$root/bin/cargo-cycles"
report=$("$cycles" 2>&1) || true
if grep -Eq "Found [0-9]+ circular" <<<"$report"; then
  echo "$report" >&2
  echo "check-modules: module import cycles (see above)" >&2
  exit 1
fi
glob_of_parent="uses relative path \`super::*\`"
relative=$("$cycles" --check-absolute-paths 2>&1 | grep "uses relative path" | grep -vF "$glob_of_parent" || true)
if [ -n "$relative" ]; then
  echo "check-modules: imports by relative path (write crate::…, so the cycle check sees them):" >&2
  echo "$relative" >&2
  exit 1
fi
echo "check-modules: cargo-cycles $version finds no import cycle; every import is by absolute path"
