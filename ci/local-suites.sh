#!/usr/bin/env bash
# The local-provider job: .ci/run (toolchains, fmt, clippy, binaries,
# validate, cargo test --workspace), then the Thor smoke benchmark compared
# with its stored baseline (counts judged; latencies shown, not judged: the
# baseline was recorded on another machine), reports in $REPORTS (default reports/local):
# result.json, report.md, report.html, junit.xml, compare.md,
# compare-junit.xml. The Markdown goes to the job's summary page.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${REPORTS:-reports/local}
mkdir -p "$out"
export HARNESS_NO_PROGRESS=1

bash .ci/run

gobin=$(bash ci/ensure-go.sh)
[ -z "$gobin" ] || export PATH="$gobin:$PATH"
export GOTOOLCHAIN=local
status=0
cargo run --locked --release -q -p harness -- \
  bench thor --scenario suites/thor/smoke.yaml --out "$out/bench" --compare --counts-only \
  || status=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  {
    echo "## Thor smoke benchmark (local provider)"
    [ -f "$out/bench/report.md" ] && cat "$out/bench/report.md"
    echo
    [ -f "$out/bench/compare.md" ] && cat "$out/bench/compare.md"
  } >>"$GITHUB_STEP_SUMMARY"
fi
exit "$status"
