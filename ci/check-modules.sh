#!/usr/bin/env bash
# Module structure checks, run by .ci/run:
# 1. no import cycles between modules (cargo-cycles, from crates.io);
# 2. the code imports by absolute path (`crate::a::b`), never `super::`
#    or `self::` outside test modules — cargo-cycles resolves `crate::`
#    paths, so this keeps every edge visible to it. Test modules may
#    `use super::*;` (the module they test).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo-cycles 2>&1 | tee /tmp/cargo-cycles.$$ >&2
if grep -Eq "Found [0-9]+ circular" /tmp/cargo-cycles.$$; then
  rm -f /tmp/cargo-cycles.$$
  echo "module import cycles found (see above)" >&2
  exit 1
fi
rm -f /tmp/cargo-cycles.$$
bad=$(cargo-cycles --check-absolute-paths 2>&1 | grep "uses relative path" | grep -v "uses relative path \`super::\*\`" || true)
if [ -n "$bad" ]; then
  echo "imports by relative path (use crate::…, so the cycle check sees them):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "modules: no import cycles; every import is by absolute path"
