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
    pub relative: Option<f64>,
    /// [low, high] bounds of new / old (latencies), e.g. [0.66, 1.5].
    pub ratio: Option<[f64; 2]>,
    /// Below this absolute value (in the metric's unit) differences are
    /// noise (e.g. 50 ms for API latency, 1000 ms for pod start-up).
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
        if crate::validate::facts::for_minor(&self.k8s_minor).is_none() {
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
