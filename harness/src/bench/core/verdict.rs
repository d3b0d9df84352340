//! A verdict: what one row of a comparison says of one metric of one
//! mode — against a stored baseline (`compare`), or of a run set on its
//! own (what its workload expects of every run: `Run::own_verdicts`).

use serde::Serialize;

use std::path::PathBuf;

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
    /// Could not be judged on this machine: what drives it moves here by
    /// more than the change it must be seen at, or the baseline holds no
    /// runs to say how far (`bench::core::across`). Passes, and is said:
    /// "could not judge" has an exit code of its own.
    Withheld,
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

/// A run checked against its stored baseline.
pub struct Comparison {
    pub baseline: PathBuf,
    pub verdicts: Vec<Verdict>,
    /// Ok(why) this machine is the baseline's kind and was quiet, so
    /// every metric is judged against its recorded runs; Err(why not), so
    /// what the pace or the clock drives is judged against the band
    /// across machines and loads (`bench::core::gate`, `compare::Place`).
    pub timing: std::result::Result<String, String>,
    /// The conditions that band was measured under (the baseline's).
    pub across: Vec<crate::bench::core::condition::Condition>,
    /// Latencies, times and CPU shown, not judged, as asked.
    pub counts_only: bool,
    /// What must stay in its recorded range, in words (the workload's
    /// `Run::IN_RANGE`).
    pub in_range: &'static str,
    /// The metrics that total clients' requests (the workload's
    /// `Run::REQUEST_TOTALS`).
    pub request_totals: &'static [&'static str],
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.verdicts.iter().any(|v| !v.pass)
    }

    /// The verdicts withheld here (`Status::Withheld`).
    pub fn withheld(&self) -> usize {
        self.verdicts
            .iter()
            .filter(|v| v.status == Status::Withheld)
            .count()
    }

    /// 1 on a regression, [`crate::error::EXIT_UNJUDGED`] when nothing
    /// regressed but a verdict was withheld, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.regressed() {
            crate::error::EXIT_FAILED
        } else if self.withheld() > 0 {
            crate::error::EXIT_UNJUDGED
        } else {
            0
        }
    }
}
