#!/usr/bin/env bash
# The local-provider job: .ci/run (toolchains, fmt, clippy, binaries,
# validate, cargo test --workspace), then the Thor smoke benchmark compared
# with its stored baseline (counts judged by what drives them, against the
# band across machines and loads where this runner is not the recording
# machine; latencies shown, not judged), reports in $REPORTS (default
# reports/local): result.json, report.md, report.html, junit.xml,
# compare.md, compare-summary.md, compare-junit.xml, and from the suites
# that cargo test runs, suites-timing-all.md (their longest trials, each
# lane's span and critical path; suites/src/timing.rs). The comparison's
# summary leads the job's summary page; exit 4 ("could not judge
# everything here") is a warning there, not a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${REPORTS:-reports/local}
mkdir -p "$out"
# The suites' runner writes its timing report into $REPORTS.
export REPORTS="$out"
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
    [ -f "$out/bench/compare-summary.md" ] && cat "$out/bench/compare-summary.md"
    echo
    [ -f "$out/bench/report.md" ] && cat "$out/bench/report.md"
    echo
    [ -f "$out/bench/compare.md" ] && cat "$out/bench/compare.md"
  } >>"$GITHUB_STEP_SUMMARY"
fi
if [ "$status" = 4 ]; then
  echo "::warning title=Thor smoke vs baseline::some verdicts could not be given on this runner (see compare-summary.md)"
  status=0
fi
exit "$status"
