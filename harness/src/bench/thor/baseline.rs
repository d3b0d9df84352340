//! Stored results (baselines/<provider>/<k8s-minor>/<scenario>.json) and
//! their schema. Counts are near-deterministic and get tight relative
//! tolerances; latencies are noisy and get ratio bands with a noise floor.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::yaml::Seg;

fn k(s: &str) -> Seg {
    Seg::Key(s.to_string())
}

pub const SCHEMA: &str = "harness.baseline/v1";
pub const PROVIDERS: &[&str] = &["local", "kind", "existing"];
pub const UNITS: &[&str] = &[
    "requests",
    "writes",
    "objects",
    "pods",
    "containers",
    "ms",
    "s",
    "bytes",
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    pub schema: String,
    pub provider: String,
    pub k8s_minor: String,
    /// Path of the scenario file, relative to the repository root.
    pub scenario: String,
    /// RFC 3339 time of recording.
    pub recorded: String,
    pub harness_version: String,
    /// mode → metric name → metric
    pub modes: BTreeMap<String, BTreeMap<String, Metric>>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// Request, write, object counts: near-deterministic.
    Count,
    /// Latencies and durations: noisy.
    Latency,
    /// Sizes.
    Bytes,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Metric {
    pub value: f64,
    pub unit: String,
    pub kind: MetricKind,
    pub tolerance: Tolerance,
}

/// How far a new value may move before it counts as a change.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Tolerance {
    /// |new − old| / old allowed (counts, bytes), e.g. 0.05.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<f64>,
    /// [low, high] bounds of new / old (latencies), e.g. [0.66, 1.5].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<[f64; 2]>,
    /// Absolute noise, in the metric's unit (e.g. 50 ms for API latency,
    /// 1000 ms for pod start-up): a value at or under it, or a change no
    /// larger than it, is noise whatever the ratio. Server-side latencies
    /// come from histogram buckets (…, 25, 50, 100, 200 ms); a p99 near an
    /// edge moves by a bucket width when a handful of requests are slow,
    /// so a ratio alone would call that a regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
}

impl Baseline {
    /// Semantic problems as (field path, message). Schema and types are
    /// the decoder's job.
    pub fn problems(&self) -> Vec<(Vec<Seg>, String)> {
        let mut out = Vec::new();
        if self.schema != SCHEMA {
            out.push((
                vec![k("schema")],
                format!("expected {SCHEMA:?}, found {:?}", self.schema),
            ));
        }
        if !PROVIDERS.contains(&self.provider.as_str()) {
            out.push((
                vec![k("provider")],
                format!("{:?} is not one of {}", self.provider, PROVIDERS.join(", ")),
            ));
        }
        if crate::k8s::facts::for_minor(&self.k8s_minor).is_none() {
            out.push((
                vec![k("k8sMinor")],
                format!("unknown Kubernetes minor {:?}", self.k8s_minor),
            ));
        }
        if self.modes.is_empty() {
            out.push((vec![k("modes")], "no modes recorded".into()));
        }
        for (mode, metrics) in &self.modes {
            if crate::workload::thor::Mode::parse(mode).is_none() {
                out.push((vec![k("modes"), k(mode)], format!("unknown mode {mode:?}")));
            }
            if metrics.is_empty() {
                out.push((vec![k("modes"), k(mode)], "no metrics".into()));
            }
            for (name, m) in metrics {
                let at = |rest: &[&str]| -> Vec<Seg> {
                    let mut v = vec![k("modes"), k(mode), k(name)];
                    v.extend(rest.iter().map(|r| k(r)));
                    v
                };
                if !m.value.is_finite() || m.value < 0.0 {
                    out.push((
                        at(&["value"]),
                        format!("{} is not a finite, non-negative number", m.value),
                    ));
                }
                if !UNITS.contains(&m.unit.as_str()) {
                    out.push((
                        at(&["unit"]),
                        format!("unknown unit {:?}; one of {}", m.unit, UNITS.join(", ")),
                    ));
                }
                let t = &m.tolerance;
                match m.kind {
                    MetricKind::Count | MetricKind::Bytes => match t.relative {
                        Some(r) if r > 0.0 && r <= 1.0 => {}
                        Some(r) => out.push((
                            at(&["tolerance", "relative"]),
                            format!("{r} is not in (0, 1]"),
                        )),
                        None => out.push((
                            at(&["tolerance"]),
                            "a count needs a relative tolerance (e.g. relative: 0.05)".into(),
                        )),
                    },
                    MetricKind::Latency => match t.ratio {
                        Some([lo, hi]) if lo > 0.0 && lo < 1.0 && hi > 1.0 && hi.is_finite() => {}
                        Some([lo, hi]) => out.push((
                            at(&["tolerance", "ratio"]),
                            format!("[{lo}, {hi}] must satisfy 0 < low < 1 < high"),
                        )),
                        None => out.push((
                            at(&["tolerance"]),
                            "a latency needs a ratio band (e.g. ratio: [0.66, 1.5])".into(),
                        )),
                    },
                }
                if let Some(f) = t.floor
                    && !(f.is_finite() && f >= 0.0)
                {
                    out.push((
                        at(&["tolerance", "floor"]),
                        format!("{f} is not a non-negative number"),
                    ));
                }
            }
        }
        out
    }
}

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::result::{ModeResult, ThorResult};
use crate::error::bad_input;

/// "1.37" for "1.37.1".
fn minor_of_version(v: &str) -> String {
    v.rsplit_once('.').map_or(v, |(minor, _)| minor).to_string()
}

/// `baselines/<provider>/<k8s minor>/<scenario>.json`
pub fn path_for(root: &Path, r: &ThorResult) -> PathBuf {
    let minor = minor_of_version(&r.k8s_version);
    root.join("baselines")
        .join(&r.provider)
        .join(minor)
        .join(format!("{}.json", r.scenario))
}

/// Load and check a baseline; a broken file is a usage error naming it.
pub fn load(path: &Path) -> Result<Baseline> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad_input(format!(
            "baseline {}: {e} (record one with --record)",
            path.display()
        ))
    })?;
    let b: Baseline = serde_json::from_str(&text).map_err(|e| {
        bad_input(format!(
            "baseline {}: line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    if let Some((p, m)) = b.problems().into_iter().next() {
        return Err(bad_input(format!(
            "baseline {}: {}: {m}",
            path.display(),
            crate::yaml::path_string(&p)
        )));
    }
    Ok(b)
}

/// The metrics a baseline keeps, with the tolerance each gets.
fn metric_specs(r: &ModeResult) -> Vec<(String, f64, &'static str, MetricKind, Tolerance)> {
    let count = |rel: f64| Tolerance {
        relative: Some(rel),
        ratio: None,
        floor: None,
    };
    let latency = |floor: f64| Tolerance {
        relative: None,
        ratio: Some([0.66, 1.5]),
        floor: Some(floor),
    };
    let mut v = vec![
        (
            "api_requests_total".to_string(),
            r.window.api_requests_total as f64,
            "requests",
            MetricKind::Count,
            count(0.10),
        ),
        // Its status polls back off (100 ms doubling) and kubectl's
        // discovery races on a cold cache, so the total moves with timing:
        // 93–98 over four jobset repeats here. The writes do not.
        (
            "thor_agent_requests".into(),
            r.thor_agent_requests as f64,
            "requests",
            MetricKind::Count,
            count(0.15),
        ),
        (
            "thor_agent_writes".into(),
            r.thor_agent_writes as f64,
            "requests",
            MetricKind::Count,
            count(0.01),
        ),
        (
            "etcd_writes_total".into(),
            r.window.etcd_writes_total as f64,
            "writes",
            MetricKind::Count,
            count(0.15),
        ),
        (
            "pods_created".into(),
            r.pods_created as f64,
            "pods",
            MetricKind::Count,
            count(0.01),
        ),
        (
            "containers_created".into(),
            r.containers_created as f64,
            "containers",
            MetricKind::Count,
            count(0.01),
        ),
        (
            "pod_startup_ms.p99".into(),
            r.pod_startup_ms.p99,
            "ms",
            MetricKind::Latency,
            latency(1000.0),
        ),
        (
            "instance_start_ms.p99".into(),
            r.instance_start_ms.p99,
            "ms",
            MetricKind::Latency,
            latency(1000.0),
        ),
        (
            "wall_s".into(),
            r.wall_s,
            "s",
            MetricKind::Latency,
            latency(5.0),
        ),
    ];
    // Events are recorded with rate limiting and aggregation: their count
    // is not a property of the workload, so it is not kept.
    for (res, n) in r
        .window
        .objects_created
        .iter()
        .filter(|(res, _)| res.as_str() != "events")
    {
        v.push((
            format!("objects_created.{res}"),
            *n as f64,
            "objects",
            MetricKind::Count,
            count(0.01),
        ));
    }
    for (class, p) in &r.window.api_latency_ms {
        v.push((
            format!("api_latency_ms.{class}.p99"),
            p.p99,
            "ms",
            MetricKind::Latency,
            latency(50.0),
        ));
    }
    v
}

/// The current value of a baseline metric in a run.
pub fn metric_value(r: &ModeResult, name: &str) -> Option<f64> {
    metric_specs(r)
        .into_iter()
        .find(|(n, ..)| n == name)
        .map(|(_, v, ..)| v)
        .or_else(|| {
            // An object kind the run did not create at all counts as zero.
            name.strip_prefix("objects_created.").map(|_| 0.0)
        })
}

pub fn from_result(r: &ThorResult, scenario_file: &str) -> Baseline {
    let modes = r
        .modes
        .iter()
        .map(|(mode, s)| {
            let metrics = metric_specs(&s.result)
                .into_iter()
                .map(|(name, value, unit, kind, tolerance)| {
                    (
                        name,
                        Metric {
                            value,
                            unit: unit.into(),
                            kind,
                            tolerance,
                        },
                    )
                })
                .collect();
            (mode.clone(), metrics)
        })
        .collect();
    Baseline {
        schema: SCHEMA.into(),
        provider: r.provider.clone(),
        k8s_minor: minor_of_version(&r.k8s_version),
        scenario: scenario_file.into(),
        recorded: r.started.clone(),
        harness_version: r.harness_version.clone(),
        modes,
    }
}

/// Write a baseline atomically (temp file + rename).
pub fn record(path: &Path, r: &ThorResult, scenario_file: &str) -> Result<()> {
    let b = from_result(r, scenario_file);
    crate::output::write_atomic(path, serde_json::to_string_pretty(&b)? + "\n")
}

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
    use crate::bench::thor::result::{ModeSummary, ThorResult};

    fn result(requests: u64, p99: f64) -> ThorResult {
        let mut m = ModeResult {
            mode: "baseline".into(),
            instances: 4,
            window: crate::metrics::WindowFigures {
                api_requests_total: requests,
                etcd_writes_total: 200,
                ..Default::default()
            },
            thor_agent_requests: 100,
            thor_agent_writes: 12,
            pods_created: 12,
            containers_created: 24,
            wall_s: 20.0,
            ..Default::default()
        };
        m.pod_startup_ms.p99 = p99;
        m.instance_start_ms.p99 = 500.0;
        m.window.objects_created.insert("jobs".into(), 8);
        ThorResult {
            schema: crate::bench::thor::result::RESULT_SCHEMA.into(),
            scenario: "smoke".into(),
            scenario_file: "suites/thor/smoke.yaml".into(),
            provider: "local".into(),
            k8s_version: "1.37.1".into(),
            harness_version: "0.1.0".into(),
            started: "2026-11-21T00:00:00Z".into(),
            num_workers: 2,
            num_workers_per_pod: 1,
            max_graphs: 2,
            graph_duration: "3s".into(),
            harness_peak_rss_kib: 0,
            modes: [(
                "baseline".to_string(),
                ModeSummary {
                    result: m.clone(),
                    repeats: vec![m],
                    spread_pct: Default::default(),
                },
            )]
            .into(),
        }
    }

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

    #[test]
    fn a_corrupt_baseline_is_a_usage_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smoke.json");
        std::fs::write(&path, "{\"schema\": \"harness.baseline/v1\", \"modes\": ").unwrap();
        let e = load(&path).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(
            format!("{e:#}").contains(&path.display().to_string()),
            "{e:#}"
        );
        let e = load(&dir.path().join("missing.json")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        // Valid JSON, insane content.
        let mut b = from_result(&result(300, 2000.0), "s.yaml");
        b.modes
            .get_mut("baseline")
            .unwrap()
            .get_mut("api_requests_total")
            .unwrap()
            .tolerance
            .relative = None;
        std::fs::write(&path, serde_json::to_string(&b).unwrap()).unwrap();
        let e = load(&path).unwrap_err();
        assert!(
            format!("{e:#}").contains("needs a relative tolerance"),
            "{e:#}"
        );
    }

    #[test]
    fn record_writes_atomically_where_compare_looks() {
        let dir = tempfile::tempdir().unwrap();
        let r = result(300, 2000.0);
        let path = path_for(dir.path(), &r);
        assert!(
            path.ends_with("baselines/local/1.37/smoke.json"),
            "{}",
            path.display()
        );
        record(&path, &r, "suites/thor/smoke.yaml").unwrap();
        let b = load(&path).unwrap();
        assert!(compare(&b, &r).iter().all(|v| v.pass));
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temp files left: {leftovers:?}");
    }
}
