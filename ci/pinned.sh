#!/usr/bin/env bash
# Print a pinned version from the one version table,
# harness/src/tools/versions.rs:  bash ci/pinned.sh HELM_VERSION
set -euo pipefail
name=${1:?usage: ci/pinned.sh CONST_NAME}
table="$(dirname "$0")/../harness/src/tools/versions.rs"
# pub const NAME: &str = "value";   (the value may sit on the next line)
value=$(sed -n "/pub const ${name}: &str =/{s/.*= *\"\\([^\"]*\\)\";.*/\\1/p;n;s/^ *\"\\([^\"]*\\)\";.*/\\1/p}" "$table" | head -n 1)
if [ -z "$value" ] || [ "${value#pub const}" != "$value" ]; then
  echo "ci/pinned.sh: $table has no 'pub const $name: &str' (pin it there)" >&2
  exit 3
fi
echo "$value"
