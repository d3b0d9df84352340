//! A verdict as data: what one row of a comparison decided of one metric
//! of one mode, and why — typed, so that renderers, the summary and the
//! calibration read the decision, never its wording (`words`).

use std::path::PathBuf;

use serde::Serialize;

use crate::bench::core::metric::MetricKind;
use crate::stats::{Judged, Rule};

/// What a row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Within what the baseline allows (or no significant difference).
    Ok,
    /// Higher, past the rule: the only status that fails.
    Regressed,
    /// Lower, past the rule: passes.
    Improved,
    /// The baseline's mode was not run (left out with --modes).
    NotCompared,
    /// The run has the metric, the baseline does not: not judged.
    NotInBaseline,
    /// Could not be judged on this machine (`Unjudgeable` says why).
    /// Passes, and is said: "could not judge" has an exit code of its own.
    Withheld,
}

impl Status {
    pub fn pass(self) -> bool {
        self != Status::Regressed
    }
}

/// What a metric was judged against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Against {
    /// The recorded runs, raised by their own band (highest ÷ median):
    /// on the baseline's machine, quiet, and wherever the workload alone
    /// drives the metric.
    Own { up: f64, runs: usize },
    /// What a machine not seen yet may show, from the machines the
    /// baseline holds (`stats::machines`).
    Machines(Allowance),
}

/// How far a machine not seen yet may lie from the machines seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allowance {
    /// Relative to the machines' centre: how far up a run set's mean may
    /// lie (0.08: +8 %), and down.
    pub up: f64,
    pub down: f64,
    /// The machines' centre, in the metric's unit (per second where
    /// clocked).
    pub centre: f64,
    /// The same allowance in the metric's unit, above the centre.
    pub width: f64,
    /// Machines and runs the band holds.
    pub machines: usize,
    pub runs: usize,
    /// Whether the pooled proportion (machine-to-machine spread in
    /// proportion to run-to-run spread) set it, rather than the metric's
    /// own machines.
    pub pooled: bool,
    /// Standard deviations of the prediction, and the metrics judged so
    /// in the comparison (z = the 1 %-family-wise quantile over them).
    pub z: f64,
    pub family: usize,
}

/// Why a verdict could not be given here.
#[derive(Debug, Clone, PartialEq)]
pub enum Unjudgeable {
    /// The baseline holds runs of its recording machine only.
    OneMachine,
    /// A clocked metric whose recorded runs do not say their windows'
    /// lengths.
    NoWindows,
    /// A clocked metric whose runs on other machines do not line up with
    /// their windows' lengths.
    UnalignedWindows,
    /// Runs on other machines that do not line up with the conditions
    /// the baseline lists (a metric some of them lacked).
    UnalignedRuns,
    /// What the machines allow is wider than the change the metric must
    /// be seen at, and than its floor.
    TooWide {
        allowance: Allowance,
        must_see: f64,
        floor: f64,
        /// Machines that would narrow it enough, at the spread seen so
        /// far (None: more than any reasonable number).
        needed: Option<usize>,
    },
}

/// Why a v1 (single-value) baseline's tolerance said what it did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    ZeroAsBefore,
    NoneBefore { now: f64 },
    Relative { change: f64, allowed: f64 },
    UnderFloor { floor: f64 },
    WithinNoise { ratio: f64, delta: f64, floor: f64 },
    Above { ratio: f64, hi: f64 },
    Faster { ratio: f64 },
    InBand { ratio: f64, lo: f64, hi: f64 },
}

/// Why a row says what it says.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// The baseline's mode was not run (`--modes`); it had `metrics`.
    ModeNotRun { metrics: usize },
    /// Kept by an older harness, not a metric of this workload's runs.
    NotThisWorkload,
    /// The run did not measure it.
    NotMeasured,
    /// The run has it, the baseline does not.
    NotInBaseline,
    /// A single-value (v1) baseline's hand-set tolerance.
    SingleValue { said: Tolerance, unit: String },
    /// A count the scenario fixes, against the recorded runs' range.
    Exact {
        low: f64,
        high: f64,
        runs: usize,
        outside: Vec<f64>,
    },
    /// Judged by the rule: against what, and with which minimum effect
    /// and floor (in `unit`).
    Judged {
        against: Against,
        rule: Rule,
        unit: String,
    },
    /// A request class no run of any machine of the baseline ever made,
    /// now made at least `floor` times a run: new behaviour.
    NewClass { floor: f64 },
    /// Could not be judged here; the smallest change it could have seen
    /// where there was a band.
    Withheld {
        why: Unjudgeable,
        could_see: Option<f64>,
    },
    /// What the workload judges of its runs on its own, in its words.
    Workload(String),
}

/// Why a judged row is shown without its verdict counting.
#[derive(Debug, Clone, PartialEq)]
pub enum NotJudged {
    /// Latencies, times and CPU shown, as asked (`--counts-only`).
    CountsOnly,
    /// A request-latency p99 of too few requests (`thin`).
    Thin(crate::bench::core::thin::Thin),
}

/// A regression a second run was asked to confirm.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    /// The second run's verdict of the same mode and metric (None: it
    /// did not measure it).
    pub second: Option<Box<Verdict>>,
    pub confirmed: bool,
}

/// One row.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub mode: String,
    pub metric: String,
    pub kind: MetricKind,
    /// The baseline's median (v2) or value (v1); per second where the
    /// clock drives it.
    pub baseline: f64,
    /// The run's median over its repeats (per second likewise).
    pub current: Option<f64>,
    pub status: Status,
    /// The interval of run ÷ the recorded runs (v2, noisy metrics).
    pub judged: Option<Judged>,
    pub reason: Reason,
    /// Whether its values are per second of their windows.
    pub per_second: bool,
    /// Shown, not judged: why, and what it would have said.
    pub shown: Option<(NotJudged, Status)>,
    pub confirmation: Option<Confirmation>,
}

impl Verdict {
    /// A row of `mode` and `metric` with `reason`; its figures empty.
    pub fn new(
        mode: &str,
        metric: &str,
        kind: MetricKind,
        status: Status,
        reason: Reason,
    ) -> Verdict {
        Verdict {
            mode: mode.into(),
            metric: metric.into(),
            kind,
            baseline: f64::NAN,
            current: None,
            status,
            judged: None,
            reason,
            per_second: false,
            shown: None,
            confirmation: None,
        }
    }

    pub fn pass(&self) -> bool {
        self.status.pass()
    }

    /// Whether the rule judged it (not withheld, not only shown, not a
    /// row the baseline or the run lacks).
    pub fn judged_here(&self) -> bool {
        matches!(
            self.status,
            Status::Ok | Status::Improved | Status::Regressed
        ) && self.shown.is_none()
    }

    /// Whether it was judged against the machines the baseline holds.
    pub fn against_machines(&self) -> bool {
        matches!(
            self.reason,
            Reason::Judged {
                against: Against::Machines(_),
                ..
            }
        )
    }

    /// Show it without judging it: it passes, and says what it would have.
    pub fn show_only(&mut self, why: NotJudged) {
        let would = self.status;
        self.shown = Some((why, would));
        if matches!(self.status, Status::Regressed | Status::Withheld) {
            self.status = Status::Ok;
        }
    }
}

/// A run checked against its stored baseline.
pub struct Comparison {
    pub baseline: PathBuf,
    pub verdicts: Vec<Verdict>,
    /// Ok(why) this machine is the baseline's and was quiet, so every
    /// metric is judged against its recorded runs; Err(why not), so what
    /// the pace or the clock drives is judged against the machines the
    /// baseline holds (`place`).
    pub timing: std::result::Result<String, String>,
    /// The machines the baseline holds, its recording one first, as a
    /// reader is told of them (`band::Machines::labels`).
    pub machines: Vec<String>,
    /// Latencies, times and CPU shown, not judged, as asked.
    pub counts_only: bool,
    /// What must stay in its recorded range, in words (the workload's
    /// `Run::IN_RANGE`).
    pub in_range: &'static str,
    /// The metrics that total clients' requests (`Run::REQUEST_TOTALS`).
    pub request_totals: &'static [&'static str],
    /// What judges a change on this machine alone (`Run::HERE`).
    pub here: &'static str,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.verdicts.iter().any(|v| !v.pass())
    }

    /// The verdicts withheld here.
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
