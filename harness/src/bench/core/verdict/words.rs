//! Every word a verdict is said in: its note (compare.md's last column,
//! the summary, the JUnit failure), what a withheld verdict lacked, and
//! the line each kind of reason is grouped under in the summary. Nothing
//! reads these words back: deciding is `judge`'s, and renderers group by
//! the typed reason.

use crate::bench::core::charts::fmt_num;
use crate::bench::core::verdict::model::{
    Against, Allowance, Comparison, NotJudged, Reason, Status, Tolerance, Unjudgeable, Verdict,
};
use crate::stats::{self, Judged, Rule};

/// "+8.0 %", "12 %".
fn plus(x: f64) -> String {
    format!("+{}", stats::pct(x))
}

/// "×1.039 [1.017–1.061] +3.9 % (p=0.01 n=1), could see ±3.1 %".
fn interval(j: &Judged) -> String {
    let see = j.could_see();
    format!(
        "×{} [{}–{}] {}{}",
        stats::fmt_ratio(j.ratio.ratio),
        stats::fmt_ratio(j.ratio.ci_low),
        stats::fmt_ratio(j.ratio.ci_high),
        j.brief(),
        if see.is_empty() {
            see
        } else {
            format!(", {see}")
        }
    )
}

/// "(min effect 2 %, floor 30 requests)".
fn minimums(rule: Rule, unit: &str) -> String {
    format!(
        "(min effect {:.0} %{})",
        rule.min_effect * 100.0,
        if rule.floor > 0.0 {
            format!(", floor {} {unit}", fmt_num(rule.floor))
        } else {
            String::new()
        }
    )
}

fn per_second(v: &Verdict) -> &'static str {
    if v.per_second {
        ", per second of the window"
    } else {
        ""
    }
}

impl std::fmt::Display for Allowance {
    /// "a machine not seen yet may lie from −7.6 % to +8.2 % of the 3
    /// machines' centre 191 (50 runs; 3.9 sd, 1 % family-wise over 212
    /// metrics, pooled)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a machine not seen yet may lie from −{} to {} of the {} machines' centre {} ({} runs; {:.1} sd, 1 % family-wise over {} metrics{})",
            stats::pct(self.down),
            plus(self.up),
            self.machines,
            fmt_num(self.centre),
            self.runs,
            self.z,
            self.family,
            if self.pooled {
                "; machine-to-machine spread in proportion to run-to-run spread, pooled over the baseline's paced metrics"
            } else {
                ""
            }
        )
    }
}

impl std::fmt::Display for Unjudgeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unjudgeable::OneMachine => write!(
                f,
                "the baseline holds runs of its recording machine only, so how far another machine moves it is not known"
            ),
            Unjudgeable::NoWindows => write!(
                f,
                "its recorded runs do not say their windows' lengths, so it cannot be put per second (record the baseline again)"
            ),
            Unjudgeable::UnalignedWindows => write!(
                f,
                "its runs on other machines do not line up with their windows' lengths"
            ),
            Unjudgeable::UnalignedRuns => write!(
                f,
                "its runs on other machines do not line up with the runs the baseline lists for them (record the band again)"
            ),
            Unjudgeable::TooWide {
                allowance,
                must_see,
                floor,
                needed,
            } => {
                write!(
                    f,
                    "a machine not seen yet may move it by up to {} (from {} machines), wider than the {} it must be seen at{}; ",
                    plus(allowance.up),
                    allowance.machines,
                    plus(*must_see),
                    if *floor > 0.0 {
                        format!(" and its floor of {}", fmt_num(*floor))
                    } else {
                        String::new()
                    }
                )?;
                match needed {
                    Some(k) => write!(
                        f,
                        "about {k} machines with this spread would give a verdict"
                    ),
                    None => write!(f, "no number of machines with this spread would"),
                }
            }
        }
    }
}

impl Unjudgeable {
    /// The line a withheld verdict is grouped under in the summary.
    pub fn headline(&self) -> String {
        match self {
            Unjudgeable::TooWide {
                allowance,
                must_see,
                ..
            } => format!(
                "what a machine not seen yet may show, from the {} machines the baseline holds, is wider than the {} they must be seen at",
                allowance.machines,
                plus(*must_see)
            ),
            other => other.to_string(),
        }
    }
}

fn tolerance(t: Tolerance, unit: &str) -> String {
    match t {
        Tolerance::ZeroAsBefore => "zero, as before".into(),
        Tolerance::NoneBefore { now } => format!("{now} where the baseline had none"),
        Tolerance::Relative { change, allowed } => format!(
            "{:+.1}% (tolerance ±{:.0}%)",
            change * 100.0,
            allowed * 100.0
        ),
        Tolerance::UnderFloor { floor } => format!("under the noise floor of {floor} {unit}"),
        Tolerance::WithinNoise {
            ratio,
            delta,
            floor,
        } => format!("×{ratio:.2}, but +{delta:.1} {unit} is within the noise of {floor} {unit}"),
        Tolerance::Above { ratio, hi } => format!("×{ratio:.2} of baseline (allowed up to ×{hi})"),
        Tolerance::Faster { ratio } => format!("×{ratio:.2}: faster than the baseline band"),
        Tolerance::InBand { ratio, lo, hi } => format!("×{ratio:.2} (band ×{lo}–×{hi})"),
    }
}

/// What the rule's decision says, by status.
fn word(s: Status) -> &'static str {
    match s {
        Status::Regressed => "higher",
        Status::Improved => "lower",
        _ => "no significant difference",
    }
}

/// The reason alone, as this verdict's status says it.
fn reason(v: &Verdict, status: Status) -> String {
    let now = v.current.map_or("—".into(), fmt_num);
    match &v.reason {
        Reason::ModeNotRun { .. } => format!("not compared: {} was not run (--modes)", v.mode),
        Reason::NotThisWorkload => {
            "not compared: not a metric of this workload's runs (recorded by an older harness)"
                .into()
        }
        Reason::NotMeasured => "not measured in this run".into(),
        Reason::NotInBaseline => "not in the baseline: not judged (re-record to judge it)".into(),
        Reason::SingleValue { said, unit } => {
            format!("single-value baseline: {}", tolerance(*said, unit))
        }
        Reason::Exact {
            low,
            high,
            runs,
            outside,
        } => {
            let recorded = if low == high {
                fmt_num(*low)
            } else {
                format!("{low}–{high}")
            };
            if outside.is_empty() {
                format!("exact: {recorded} as recorded")
            } else {
                format!(
                    "exact count: {} where {runs} runs recorded {recorded}",
                    outside
                        .iter()
                        .map(|x| fmt_num(*x))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        }
        Reason::Judged {
            against,
            rule,
            unit,
        } => {
            let shown = v
                .judged
                .as_ref()
                .map_or(String::new(), |j| format!(": {}", interval(j)));
            let band = match against {
                Against::Own { up, runs } => {
                    format!(
                        "the band {} from {runs} recorded runs{}",
                        plus(*up),
                        per_second(v)
                    )
                }
                Against::Machines(a) => format!("{a}{}", per_second(v)),
            };
            match status {
                Status::Regressed => {
                    format!("higher{shown}, past {band} {}", minimums(*rule, unit))
                }
                s => format!("{}{shown} ({band} {})", word(s), minimums(*rule, unit)),
            }
        }
        Reason::NewClass { floor } => match status {
            Status::Regressed => format!(
                "new: {now} a run, made by no run of any machine the baseline holds (a member never made is new behaviour from {} a run)",
                fmt_num(*floor)
            ),
            _ => format!(
                "made by no run of any machine the baseline holds; {now} a run now, under the {} a new one must reach",
                fmt_num(*floor)
            ),
        },
        Reason::Withheld { why, could_see } => format!(
            "withheld here: {why}{}",
            match could_see {
                Some(s) if s.is_finite() => format!(
                    "; the smallest change it could have seen here: {}",
                    plus(*s)
                ),
                _ => String::new(),
            }
        ),
        Reason::Workload(said) => said.clone(),
    }
}

impl Verdict {
    /// The row's note: what it decided and why, what it would have said
    /// where only shown, and its confirmation.
    pub fn note(&self) -> String {
        let status = self.shown.as_ref().map_or(self.status, |(_, would)| *would);
        let mut note = reason(self, status);
        if let Some((why, would)) = &self.shown {
            let why = match why {
                NotJudged::CountsOnly => "latency".to_string(),
                NotJudged::Thin(t) => t.to_string(),
            };
            let would = if *would == Status::Regressed {
                ", would regress"
            } else {
                ""
            };
            note = format!("not judged ({why}{would}): {note}");
        }
        if let Some(c) = &self.confirmation {
            let second = c
                .second
                .as_ref()
                .map_or("not measured".to_string(), |s| s.note());
            note = if c.confirmed {
                format!("{note}; confirmed by a second run: {second}")
            } else {
                format!("not confirmed (a second run: {second}); the first run alone: {note}")
            };
        }
        note
    }
}

impl Comparison {
    /// Each regressed row as "mode metric: note", for a failure message.
    pub fn regressions(&self) -> Vec<String> {
        self.verdicts
            .iter()
            .filter(|v| !v.pass())
            .map(|v| format!("{} {}: {}", v.mode, v.metric, v.note()))
            .collect()
    }
}
