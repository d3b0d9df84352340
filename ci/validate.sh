#!/usr/bin/env bash
# Offline validation for CI: JUnit and Markdown reports in $REPORTS
# (default reports/validate), the Markdown also on the job's summary page.
# Exit status: harness validate's (1 when a file has a problem).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${REPORTS:-reports/validate}
mkdir -p "$out"
cargo build --locked -q -p harness
harness=${CARGO_TARGET_DIR:-target}/debug/harness
status=0
"$harness" validate --format junit >"$out/validate-junit.xml" || status=$?
"$harness" validate --format markdown >"$out/validate.md" || true
if [ "$status" -gt 1 ]; then
  echo "harness validate failed to run (exit $status)" >&2
  exit "$status"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$out/validate.md" >>"$GITHUB_STEP_SUMMARY"
fi
cat "$out/validate.md"
exit "$status"
