//! Judging a run against its stored baseline: counts by relative
//! tolerance, latencies by a ratio band above a noise floor, one verdict
//! per metric.

use serde::Serialize;

use crate::bench::thor::baseline::{Baseline, Metric, MetricKind, metric_value};
use crate::bench::thor::result::ThorResult;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub mode: String,
    pub metric: String,
    pub kind: MetricKind,
    pub baseline: f64,
    pub current: Option<f64>,
    pub pass: bool,
    pub note: String,
}

/// Check a run against a baseline, metric by metric.
pub fn compare(b: &Baseline, r: &ThorResult) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (mode, metrics) in &b.modes {
        let run = r.modes.get(mode).map(|s| &s.result);
        for (name, m) in metrics {
            let current = run.and_then(|run| metric_value(run, name));
            let (pass, note) = match current {
                None => (false, format!("{mode} was not measured in this run")),
                Some(cur) => judge(m, cur),
            };
            out.push(Verdict {
                mode: mode.clone(),
                metric: name.clone(),
                kind: m.kind,
                baseline: m.value,
                current,
                pass,
                note,
            });
        }
    }
    out
}

/// Keep latency verdicts as information only: they pass, and their note
/// says what they would have been. For runs on a machine unlike the one
/// that recorded the baseline (`bench --compare --counts-only`, the
/// `cargo test` smoke suite).
pub fn not_judging_latency(verdicts: &mut [Verdict]) {
    for v in verdicts
        .iter_mut()
        .filter(|v| v.kind == MetricKind::Latency)
    {
        let would = if v.pass { "" } else { ", would regress" };
        v.note = format!("not judged (latency{would}): {}", v.note);
        v.pass = true;
    }
}

fn judge(m: &Metric, cur: f64) -> (bool, String) {
    let t = &m.tolerance;
    let floor = t.floor.unwrap_or(0.0);
    match m.kind {
        MetricKind::Count | MetricKind::Bytes => {
            let rel = t.relative.unwrap_or(0.0);
            if m.value == 0.0 {
                return (
                    cur <= floor,
                    if cur <= floor {
                        "zero, as before".into()
                    } else {
                        format!("{cur} where the baseline had none")
                    },
                );
            }
            let change = (cur - m.value) / m.value;
            let ok = change.abs() <= rel;
            (
                ok,
                format!("{:+.1}% (tolerance ±{:.0}%)", change * 100.0, rel * 100.0),
            )
        }
        MetricKind::Latency => {
            if cur <= floor {
                return (true, format!("under the noise floor of {floor} {}", m.unit));
            }
            let [lo, hi] = t.ratio.unwrap_or([0.0, f64::INFINITY]);
            let ratio = if m.value > 0.0 {
                cur / m.value
            } else {
                f64::INFINITY
            };
            if ratio > hi && cur - m.value <= floor {
                (
                    true,
                    format!(
                        "×{ratio:.2}, but +{:.1} {} is within the noise of {floor} {}",
                        cur - m.value,
                        m.unit,
                        m.unit
                    ),
                )
            } else if ratio > hi {
                (
                    false,
                    format!("×{ratio:.2} of baseline (allowed up to ×{hi})"),
                )
            } else if ratio < lo {
                (true, format!("×{ratio:.2}: faster than the baseline band"))
            } else {
                (true, format!("×{ratio:.2} (band ×{lo}–×{hi})"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::thor::baseline::from_result;
    use crate::bench::thor::result::sample_result as result;

    #[test]
    fn a_run_30_percent_worse_in_requests_fails_naming_the_metric() {
        let base = from_result(&result(300, 2000.0), "suites/thor/smoke.yaml");
        assert!(base.problems().is_empty(), "{:?}", base.problems());
        let verdicts = compare(&base, &result(390, 2000.0));
        let failed: Vec<&Verdict> = verdicts.iter().filter(|v| !v.pass).collect();
        assert_eq!(failed.len(), 1, "{failed:#?}");
        assert_eq!(failed[0].metric, "api_requests_total");
        assert!(failed[0].note.contains("+30.0%"), "{}", failed[0].note);
    }

    #[test]
    fn within_tolerance_and_under_the_noise_floor_pass() {
        let base = from_result(&result(300, 2000.0), "s.yaml");
        // +5 % requests; pod start-up ×1.4 (inside the band).
        assert!(compare(&base, &result(315, 2800.0)).iter().all(|v| v.pass));
        // Latency ×3 but under the 1 s floor in both: noise.
        let base = from_result(&result(300, 100.0), "s.yaml");
        assert!(compare(&base, &result(300, 300.0)).iter().all(|v| v.pass));
        // Latency ×3 above the floor: regression.
        let base = from_result(&result(300, 2000.0), "s.yaml");
        let v = compare(&base, &result(300, 6000.0));
        assert!(
            v.iter()
                .any(|v| !v.pass && v.metric == "pod_startup_ms.p99"),
            "{v:#?}"
        );
        // ×2.1 and above the floor, but a change of 800 ms is within the
        // 1 s noise (a p99 that crossed a bucket edge): not a regression;
        // a change of 1.1 s is.
        let base = from_result(&result(300, 700.0), "s.yaml");
        let v = compare(&base, &result(300, 1500.0));
        let p99 = v.iter().find(|v| v.metric == "pod_startup_ms.p99").unwrap();
        assert!(
            p99.pass && p99.note.contains("within the noise"),
            "{p99:#?}"
        );
        assert_eq!(p99.kind, MetricKind::Latency);
        let v = compare(&base, &result(300, 1800.0));
        assert!(
            v.iter()
                .any(|v| !v.pass && v.metric == "pod_startup_ms.p99"),
            "{v:#?}"
        );
        // Not judging latency: the regression passes and says so; a count
        // regression still fails.
        let mut v = compare(&base, &result(390, 1800.0));
        not_judging_latency(&mut v);
        let p99 = v.iter().find(|v| v.metric == "pod_startup_ms.p99").unwrap();
        assert!(p99.pass && p99.note.contains("would regress"), "{p99:#?}");
        let failed: Vec<_> = v.iter().filter(|v| !v.pass).map(|v| &v.metric).collect();
        assert_eq!(failed, ["api_requests_total"]);
        // A mode missing from the run fails.
        let mut r = result(300, 2000.0);
        r.modes.clear();
        assert!(compare(&base, &r).iter().all(|v| !v.pass));
    }
}
