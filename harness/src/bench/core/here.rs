//! A verdict that holds on any machine: the run set and a run set of the
//! baseline's own versions, interleaved round by round on this machine,
//! judged against each other — the benchstat way (`--compare --here`).
//! Where the stored baseline cannot judge a metric here (another machine:
//! its allowance too wide), this can: both sides meet the same machine,
//! its speed and its load, so machine-to-machine spread is not in the
//! comparison at all.
//!
//! Each metric that `--compare` keeps is judged by the one rule of
//! `crate::stats` on the rounds paired (paired t on the per-round log
//! ratios, the metric's minimum effect and floor); Holm's rule over all
//! of them answers "did anything change?" family-wise (`stats::holm`),
//! and only what Holm keeps counts as a regression.

use std::fmt::Write as _;

use crate::bench::core::charts::fmt_num;
use crate::bench::core::metric::{self, Drive, Spec, Views, spec_of};
use crate::bench::core::result::{Results, Run};
use crate::bench::core::verdict::scale::Scale;
use crate::stats::{self, Direction, Family, Judged};

/// One metric of one mode judged here: this build ÷ the baseline's
/// versions.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub mode: String,
    pub metric: String,
    pub reference: f64,
    pub this: f64,
    pub judged: Judged,
}

/// What the A/B here says.
#[derive(Debug, Clone, PartialEq)]
pub struct Here {
    pub rows: Vec<Row>,
    pub family: Family,
    /// Rounds each side ran.
    pub rounds: usize,
}

impl Here {
    /// The rows Holm keeps as higher: regressions.
    pub fn regressed(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| {
                r.judged.verdict == Direction::Higher && self.family.differ.contains(&key(r))
            })
            .collect()
    }

    pub fn exit_code(&self) -> i32 {
        if self.regressed().is_empty() {
            0
        } else {
            crate::error::EXIT_FAILED
        }
    }
}

fn key(r: &Row) -> String {
    format!("{} {}", r.mode, r.metric)
}

/// `this` against `reference`, their runs paired by round (the i-th
/// repeat of each mode in each), every metric kept in baselines.
pub fn judge<R: Run>(reference: &Results<R>, this: &Results<R>) -> Here {
    let declared = R::metrics();
    let specs: Vec<Spec> = declared.iter().map(|m| m.spec).collect();
    let mut rows = Vec::new();
    let mut rounds = usize::MAX;
    for (mode, a) in &reference.modes {
        let Some(b) = this.modes.get(mode) else {
            continue;
        };
        let (a, b) = (a.runs(), b.runs());
        let n = a.len().min(b.len());
        rounds = rounds.min(n);
        let names: std::collections::BTreeSet<String> = a
            .iter()
            .chain(b)
            .flat_map(|r| metric::values_in(&declared, r, Views::KEPT))
            .map(|(k, _)| k)
            .collect();
        for name in names {
            let Some(spec) = spec_of(&specs, &name) else {
                continue;
            };
            // What the clock drives, per second of its window (as
            // `--compare` judges it).
            let scale = Scale::of(spec.drive_of(&name).unwrap_or(Drive::Pace("")));
            let values = |runs: &[R]| -> Option<Vec<f64>> {
                let cur: Option<Vec<(f64, f64)>> = runs[..n]
                    .iter()
                    .map(|r| Some((metric::value_of(&declared, r, &name)?, r.figures().wall_s)))
                    .collect();
                Some(scale.run(&cur?))
            };
            let (Some(va), Some(vb)) = (values(a), values(b)) else {
                continue;
            };
            let Some(j) = stats::judge(&va, &vb, true, spec.rule()) else {
                continue;
            };
            rows.push(Row {
                mode: mode.clone(),
                metric: name,
                reference: stats::median(&va),
                this: stats::median(&vb),
                judged: j,
            });
        }
    }
    let keys: Vec<String> = rows.iter().map(key).collect();
    let family = stats::holm(
        keys.iter()
            .map(String::as_str)
            .zip(rows.iter().map(|r| &r.judged)),
    );
    Here {
        rows,
        family,
        rounds: if rounds == usize::MAX { 0 } else { rounds },
    }
}

/// here.md: what was compared, the family's answer, and every row that
/// differs on its own (the rest are counted).
pub fn markdown(h: &Here, what: &str) -> String {
    let mut s = format!(
        "## Judged here: {what}, interleaved on this machine, {} rounds\n\n",
        h.rounds
    );
    let _ = writeln!(
        s,
        "Both sides ran on this machine, round by round in alternating order, so its speed and load fall on each alike; each metric is this build ÷ the baseline's versions, paired t on the per-round log ratios with its minimum effect and floor; Holm's rule over the {} metrics says which differ family-wise (5 %).\n",
        h.rows.len()
    );
    let _ = writeln!(s, "{}\n", h.family.sentence());
    let regressed = h.regressed();
    let _ = writeln!(
        s,
        "{}\n",
        if regressed.is_empty() {
            "No regression family-wise.".to_string()
        } else {
            format!("**{} regression(s) family-wise.**", regressed.len())
        }
    );
    let shown: Vec<&Row> = h
        .rows
        .iter()
        .filter(|r| r.judged.verdict != Direction::Same)
        .collect();
    if shown.is_empty() {
        return s;
    }
    s.push_str("| mode | metric | baseline's versions | this build | this ÷ baseline's | family-wise |\n|---|---|---:|---:|---|---|\n");
    for r in shown {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            r.mode,
            r.metric,
            fmt_num(r.reference),
            fmt_num(r.this),
            r.judged.cell(),
            if h.family.differ.contains(&key(r)) {
                "kept"
            } else {
                "not kept"
            }
        );
    }
    s
}
