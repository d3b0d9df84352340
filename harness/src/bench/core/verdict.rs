//! A verdict: what one row of a comparison says of one metric of one
//! mode — against a stored baseline (`compare`), or of a run set on its
//! own (Thor's calls against its plan).

use serde::Serialize;

use crate::bench::core::metric::MetricKind;
use crate::stats;

/// What a row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Within the baseline's band (or no significant difference).
    Ok,
    /// Higher, past the rule.
    Regressed,
    /// Lower, past the rule: passes.
    Improved,
    /// The baseline's mode was not run (left out with --modes).
    NotCompared,
    /// The run has the metric, the baseline does not: not judged.
    NotInBaseline,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub mode: String,
    pub metric: String,
    pub kind: MetricKind,
    /// The baseline's median (v2) or value (v1).
    pub baseline: f64,
    /// The run's median over its repeats.
    pub current: Option<f64>,
    pub pass: bool,
    pub status: Status,
    /// The interval and verdict of run ÷ baseline (v2, noisy metrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<stats::Judged>,
    pub note: String,
}
