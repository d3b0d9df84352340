//! How the rule does off the recording machine, measured on a baseline's
//! runs under other conditions (`across`: CPU hogs beside the run,
//! another machine): the calibration table's cross-machine columns
//! (`harness report calibrate`).
//!
//! Each condition is held out in turn: for a metric with recorded runs
//! (one idle machine) and runs under k ≥ 2 other conditions, a draw picks
//! a condition, takes n of its runs as "the user's run" and judges them by
//! `--compare` on an unlike machine (`compare::status_across`) against
//! the recorded runs with a band from the *other* conditions only — so
//! the machine being judged is one the band never saw, as a user's is.
//! - **False regressions**: "regressed" between runs of one build.
//! - **Withheld**: the band of the other conditions is too wide to give a
//!   verdict (`across::must_see`).
//! - **Smallest change caught**: the same draws with the run shifted by δ
//!   of `calibrate::GRID`, the smallest δ called "regressed" in
//!   `calibrate::GOAL` of the draws, median over the class's metrics that
//!   were not withheld.
//!
//! A metric the clock drives is put per second of its window first, as
//! `--compare` does.

use std::fmt::Write as _;

use crate::bench::core::across::per_second;
use crate::bench::core::baseline::{Baseline, Metric};
use crate::bench::core::calibrate::{
    CLASSES, GOAL, GRID, SEED, class_of, detect, median_detect, pct, salt, smallest, tallied,
};
use crate::bench::core::compare::{Status, status_across};
use crate::bench::core::figures::WALL;
use crate::bench::core::metric::{Drive, Kind, Spec, spec_of};
use crate::stats::{self, Prng, Rule};

/// One metric of one mode, its recorded runs and its runs under each
/// other condition (per second where the clock drives it).
pub struct Series {
    pub from: String,
    pub mode: String,
    pub metric: String,
    pub kind: Kind,
    pub rule: Rule,
    pub recorded: Metric,
    pub conditions: Vec<Vec<f64>>,
}

/// The table's class of a series.
fn class(s: &Series) -> &'static str {
    class_of(s.kind, s.rule)
}

/// `values` cut into each condition's runs of `mode`; None when they do
/// not add up (a metric some runs lacked).
fn split(b: &Baseline, mode: &str, values: &[f64]) -> Option<Vec<Vec<f64>>> {
    let counts: Vec<usize> = b
        .across
        .iter()
        .map(|c| c.runs.get(mode).copied().unwrap_or(0))
        .collect();
    if counts.iter().sum::<usize>() != values.len() {
        return None;
    }
    let mut at = 0;
    Some(
        counts
            .iter()
            .map(|n| {
                let v = values[at..at + n].to_vec();
                at += n;
                v
            })
            .collect(),
    )
}

/// Every judged metric of `baselines` with recorded runs and runs under
/// at least two other conditions.
/// `specs_of` gives the metrics of the workload that recorded each
/// (`bench::recorded::specs_of`).
pub fn series(
    baselines: &[(String, Baseline)],
    specs_of: fn(&Baseline) -> Vec<Spec>,
) -> Vec<Series> {
    let mut out = Vec::new();
    for (from, b) in baselines {
        if b.across.len() < 2 {
            continue;
        }
        let specs = specs_of(b);
        for (mode, metrics) in &b.modes {
            let wall = metrics.get(WALL.key);
            for (name, m) in metrics {
                let Some(spec) = spec_of(&specs, name) else {
                    continue;
                };
                if m.samples.len() < 2 || m.kind == crate::bench::core::metric::MetricKind::Exact {
                    continue;
                }
                let mut rule = spec.rule();
                let (samples, across) = match spec.drive_of(name) {
                    Some(Drive::Clock(_)) => {
                        let Some(w) = wall else { continue };
                        let (Some(s), Some(a)) = (
                            per_second(&m.samples, &w.samples),
                            per_second(&m.across, &w.across),
                        ) else {
                            continue;
                        };
                        rule.floor /= stats::median(&w.samples).max(1e-9);
                        (s, a)
                    }
                    _ => (m.samples.clone(), m.across.clone()),
                };
                let Some(conditions) = split(b, mode, &across) else {
                    continue;
                };
                out.push(Series {
                    from: from.clone(),
                    mode: mode.clone(),
                    metric: name.clone(),
                    kind: spec.kind,
                    rule,
                    recorded: Metric {
                        value: stats::median(&samples),
                        samples,
                        across: Vec::new(),
                        ..m.clone()
                    },
                    conditions,
                });
            }
        }
    }
    out
}

/// What the draws of one series at n runs said.
struct Tally {
    falses: usize,
    withheld: usize,
    caught: [usize; GRID.len()],
    draws: usize,
}

fn tally(s: &Series, n: usize, trials: usize, salt: u64) -> Option<Tally> {
    let eligible: Vec<usize> = (0..s.conditions.len())
        .filter(|c| s.conditions[*c].len() >= n)
        .collect();
    if eligible.is_empty() {
        return None;
    }
    let mut rng = Prng::new(SEED ^ salt);
    let mut t = Tally {
        falses: 0,
        withheld: 0,
        caught: [0; GRID.len()],
        draws: trials,
    };
    for i in 0..trials {
        let held = eligible[i % eligible.len()];
        let mut runs = s.conditions[held].clone();
        rng.shuffle(&mut runs);
        runs.truncate(n);
        let band = Metric {
            across: s
                .conditions
                .iter()
                .enumerate()
                .filter(|(c, _)| *c != held)
                .flat_map(|(_, v)| v.iter().copied())
                .collect(),
            ..s.recorded.clone()
        };
        match status_across(&band, s.kind, s.rule, &runs) {
            Status::Regressed => t.falses += 1,
            Status::Withheld => {
                t.withheld += 1;
                continue;
            }
            _ => {}
        }
        // A larger shift of the same runs against the same band is
        // caught whenever a smaller one is: the first caught counts for
        // every larger one.
        if let Some(first) = GRID.iter().position(|d| {
            let shifted: Vec<f64> = runs.iter().map(|x| x * (1.0 + d)).collect();
            status_across(&band, s.kind, s.rule, &shifted) == Status::Regressed
        }) {
            for c in &mut t.caught[first..] {
                *c += 1;
            }
        }
    }
    Some(t)
}

/// One row: a class at n runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub class: String,
    pub rounds: usize,
    pub metrics: usize,
    pub draws: usize,
    pub falses: f64,
    pub worst: f64,
    pub worst_metric: String,
    pub withheld: f64,
    /// Median over the metrics judged in most draws of the smallest δ
    /// caught (None: beyond the grid).
    pub detects: Option<f64>,
}

/// The rows of every class at every n of `rounds`.
pub fn calibrate(series: &[Series], rounds: &[usize], trials: usize) -> Vec<Row> {
    let tallies = tallied(rounds, series.len(), |n, i| {
        tally(&series[i], n, trials, salt(n, i))
    });
    let mut rows = Vec::new();
    for &n in rounds {
        for name in CLASSES {
            let mut row = Row {
                class: name.into(),
                rounds: n,
                metrics: 0,
                draws: 0,
                falses: 0.0,
                worst: 0.0,
                worst_metric: String::new(),
                withheld: 0.0,
                detects: None,
            };
            let (mut falses, mut withheld, mut judged, mut ds) = (0, 0, 0, Vec::new());
            for (i, s) in series.iter().enumerate() {
                if class(s) != name {
                    continue;
                }
                let Some(t) = tallies.get(&(n, i)) else {
                    continue;
                };
                row.metrics += 1;
                row.draws += t.draws;
                falses += t.falses;
                withheld += t.withheld;
                let given = t.draws - t.withheld;
                judged += given;
                if given > 0 {
                    let rate = t.falses as f64 / given as f64;
                    if rate > row.worst {
                        row.worst = rate;
                        row.worst_metric = format!("{} {} ({})", s.mode, s.metric, s.from);
                    }
                }
                if 2 * given > t.draws {
                    ds.push(smallest(&t.caught, given));
                }
            }
            if row.metrics == 0 {
                continue;
            }
            row.falses = if judged > 0 {
                falses as f64 / judged as f64
            } else {
                0.0
            };
            row.withheld = withheld as f64 / row.draws as f64;
            row.detects = median_detect(&ds);
            rows.push(row);
        }
    }
    rows
}

/// The table, with what it was drawn from; `add_runs` says how runs
/// under other conditions are added (the command's words).
pub fn markdown(
    rows: &[Row],
    baselines: &[(String, Baseline)],
    trials: usize,
    add_runs: &str,
) -> String {
    let mut s = String::new();
    let from: Vec<String> = baselines
        .iter()
        .filter(|(_, b)| b.across.len() >= 2)
        .map(|(f, b)| {
            format!(
                "`{f}` ({} recorded runs on {}; {})",
                b.modes
                    .values()
                    .next()
                    .and_then(|m| m.values().next())
                    .map_or(0, |m| m.samples.len()),
                b.machine
                    .as_ref()
                    .map_or("an unknown machine".into(), ToString::to_string),
                b.across
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
        .collect();
    if from.is_empty() {
        let _ = writeln!(
            s,
            "No baseline holds runs under two or more other conditions: the cross-machine columns are not measured (add them with {add_runs})."
        );
        return s;
    }
    let _ = writeln!(
        s,
        "From {}. Each of {trials} draws per metric and n holds one condition out: n of its runs are judged as on an unlike machine against the recorded runs with a band from the other conditions only. False: \"regressed\" between runs of one build, of the draws judged. Withheld: the other conditions' band was wider than the change the metric must be seen at (10 % for counts and bytes, 50 % for times, CPU and latencies). Smallest change caught: the median, over the metrics judged in most draws, of the smallest shift (of {}) called regressed in {:.0} % of the judged draws.\n",
        from.join(", "),
        GRID.iter()
            .map(|d| format!("{:.0} %", d * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        GOAL * 100.0
    );
    let _ = writeln!(
        s,
        "| kind | n | metrics | false regressions, unlike machine | worst metric | withheld | smallest change caught |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|---:|---:|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.class,
            r.rounds,
            r.metrics,
            pct(r.falses),
            if r.worst > 0.0 {
                format!("{} ({})", pct(r.worst), r.worst_metric)
            } else {
                "—".into()
            },
            pct(r.withheld),
            detect(r.detects)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::synthetic;

    fn series(recorded: Vec<f64>, conditions: Vec<Vec<f64>>) -> Series {
        Series {
            from: "b.json".into(),
            mode: "m".into(),
            metric: "x".into(),
            kind: Kind::Count,
            rule: Rule::COUNT,
            recorded: Metric {
                value: stats::median(&recorded),
                unit: "requests".into(),
                kind: Kind::Count.stored(),
                tolerance: Default::default(),
                samples: recorded,
                across: Vec::new(),
            },
            conditions,
        }
    }

    #[test]
    fn a_machine_the_band_never_saw_is_judged_against_the_others() {
        // Idle at 1000 ±1 %, three conditions at +4 % ±1 %: each held-out
        // one lies inside the others' band — no false regression, +10 %
        // caught.
        let s = series(
            synthetic(1000.0, 0.01, 10, 1),
            (0..3).map(|i| synthetic(1040.0, 0.01, 5, 10 + i)).collect(),
        );
        let rows = calibrate(&[s], &[1, 3], 60);
        assert_eq!(rows.len(), 2, "{rows:?}");
        for r in &rows {
            assert_eq!(r.falses, 0.0, "{r:?}");
            assert_eq!(r.withheld, 0.0, "{r:?}");
            assert!(r.detects.is_some_and(|d| d <= 0.1), "{r:?}");
        }
    }

    #[test]
    fn a_condition_far_from_the_rest_is_withheld_or_a_false_regression_and_said() {
        // One condition +40 %: held out, the others' band cannot hold it
        // (a false regression); in the band, it is too wide (withheld).
        let s = series(
            synthetic(1000.0, 0.01, 10, 1),
            vec![synthetic(1010.0, 0.01, 5, 2), synthetic(1400.0, 0.01, 5, 3)],
        );
        let rows = calibrate(&[s], &[3], 40);
        assert!(rows[0].falses > 0.3 && rows[0].withheld > 0.3, "{rows:?}");
        let md = markdown(&rows, &[], 40, "`bench thor --record-band`");
        assert!(md.contains("not measured"), "{md}");
    }
}
