//! How often the one rule is wrong, and what it can see, measured on
//! recorded runs of unchanged code (`harness report calibrate`; the
//! book's calibration table is its output).
//!
//! A v2 baseline keeps every recorded round's value of every metric: runs
//! of one build, on one machine, so any verdict between two subsets of
//! them is a false one. For a metric of m recorded rounds and a number of
//! rounds n with 2n ≤ m, each of `trials` draws is a seeded shuffle of
//! the m rounds:
//! - **A/B** (how a run set judges its modes,
//!   `stats::judge`, paired): the first n drawn rounds are A, the next n
//!   are B, paired in drawn order; any verdict but "no significant
//!   difference" is a false alarm.
//! - **--compare** (`verdict::judge::own`, the band included): the
//!   first n drawn rounds are the run, the other m − n the baseline;
//!   "regressed" is a false alarm.
//! - **Power**: the same draws with B (the run) multiplied by 1 + δ for δ
//!   of [`GRID`] — a recorded sample shifted as a regression would shift
//!   it, its noise kept: the smallest δ called higher (regressed) in at
//!   least [`GOAL`] of the draws.
//!
//! Per kind of metric (the declarations' `Kind`): the false-alarm rate
//! over all its metrics' draws, the worst single metric's rate, and the
//! median over its metrics of the smallest δ caught.

use std::fmt::Write as _;

use serde::Serialize;

use crate::bench::core::baseline::{Baseline, Metric};
use crate::bench::core::metric::MetricKind;
use crate::bench::core::metric::{Kind, Spec, spec_of};
use crate::bench::core::on_cores;
use crate::bench::core::verdict::judge;
use crate::bench::core::verdict::model::Status;
use crate::stats::{self, Direction, Prng, Rule};

/// The shifts tried for power, relative: none of them a minimum effect
/// itself (2 %, 5 %), where rounding would decide.
pub const GRID: [f64; 9] = [0.01, 0.03, 0.06, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0];
/// The share of draws a shift must be caught in to count as seen.
pub const GOAL: f64 = 0.8;
/// The draws' seed (the recorded runs decide the rest).
pub(crate) const SEED: u64 = 0x6361_6c69_6272_6174; // "calibrat"

/// One metric of one mode of one baseline, as the rule judges it.
pub struct Series {
    pub from: String,
    pub mode: String,
    pub metric: String,
    pub kind: Kind,
    pub rule: Rule,
    pub recorded: Metric,
}

/// Every judged metric with recorded rounds in `baselines` (name, file).
/// `specs_of` gives the metrics of the workload that recorded each
/// (`bench::recorded::specs_of`).
pub fn series(
    baselines: &[(String, Baseline)],
    specs_of: fn(&Baseline) -> Vec<Spec>,
) -> Vec<Series> {
    let mut out = Vec::new();
    for (from, b) in baselines {
        let specs = specs_of(b);
        for (mode, metrics) in &b.modes {
            for (name, m) in metrics {
                let Some(spec) = spec_of(&specs, name) else {
                    continue;
                };
                if m.samples.len() < 2 {
                    continue;
                }
                out.push(Series {
                    from: from.clone(),
                    mode: mode.clone(),
                    metric: name.clone(),
                    kind: spec.kind,
                    rule: spec.rule(),
                    recorded: m.clone(),
                });
            }
        }
    }
    out
}

/// What the draws of one series at n rounds said.
struct Tally {
    ab_false: usize,
    compare_false: usize,
    /// Per δ of GRID: draws caught.
    ab_caught: [usize; GRID.len()],
    compare_caught: [usize; GRID.len()],
    draws: usize,
}

fn tally(s: &Series, n: usize, trials: usize, salt: u64) -> Tally {
    let samples = &s.recorded.samples;
    let mut rng = Prng::new(SEED ^ salt);
    let mut order: Vec<usize> = (0..samples.len()).collect();
    let mut t = Tally {
        ab_false: 0,
        compare_false: 0,
        ab_caught: [0; GRID.len()],
        compare_caught: [0; GRID.len()],
        draws: trials,
    };
    for _ in 0..trials {
        rng.shuffle(&mut order);
        let pick = |r: &[usize]| r.iter().map(|i| samples[*i]).collect::<Vec<f64>>();
        let (a, b) = (pick(&order[n..2 * n]), pick(&order[..n]));
        let recorded = Metric {
            samples: pick(&order[n..]),
            ..s.recorded.clone()
        };
        let ab = |b: &[f64]| stats::judge(&a, b, true, s.rule).map(|j| j.verdict);
        let cmp = |b: &[f64]| match recorded.kind {
            MetricKind::Exact => judge::exact(&recorded.samples, b).status,
            _ => judge::own(&recorded.samples, s.rule, b, &recorded.unit).status,
        };
        if ab(&b).is_some_and(|v| v != Direction::Same) {
            t.ab_false += 1;
        }
        if cmp(&b) == Status::Regressed {
            t.compare_false += 1;
        }
        for (i, d) in GRID.iter().enumerate() {
            let shifted: Vec<f64> = b.iter().map(|x| x * (1.0 + d)).collect();
            if ab(&shifted) == Some(Direction::Higher) {
                t.ab_caught[i] += 1;
            }
            if cmp(&shifted) == Status::Regressed {
                t.compare_caught[i] += 1;
            }
        }
    }
    t
}

/// One row of the table: a class of metric (a kind, or counts with a
/// floor) at n rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub kind: String,
    pub rounds: usize,
    /// Metrics (mode × metric × baseline) with at least 2n rounds.
    pub metrics: usize,
    pub draws: usize,
    pub ab_false: f64,
    pub ab_worst: f64,
    pub ab_worst_metric: String,
    pub compare_false: f64,
    pub compare_worst: f64,
    pub compare_worst_metric: String,
    /// Median over the metrics of the smallest δ caught in GOAL of the
    /// draws (None: beyond the grid).
    pub ab_detects: Option<f64>,
    pub compare_detects: Option<f64>,
}

/// The kinds as the table names them, in its order.
pub fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Fixed => "fixed count",
        Kind::Count => "count",
        Kind::Bytes => "bytes",
        Kind::Time => "time",
        Kind::Cpu => "CPU",
        Kind::Latency => "latency",
    }
}

/// The table's classes, in its order: each kind, and the counts with a
/// floor (each client's requests) apart from the counts without one —
/// their floor, not their spread, decides what they can see, and the
/// median of one class would hide the other's.
pub(crate) const CLASSES: [&str; 7] = [
    "fixed count",
    "count",
    FLOORED_COUNT,
    "bytes",
    "time",
    "CPU",
    "latency",
];

pub(crate) const FLOORED_COUNT: &str = "count with a floor";

/// The class of `s` in the table.
fn class(s: &Series) -> &'static str {
    class_of(s.kind, s.rule)
}

/// The table's class of a metric of `kind` judged by `rule`.
pub(crate) fn class_of(kind: Kind, rule: Rule) -> &'static str {
    match (kind, rule.floor > 0.0) {
        (Kind::Count, true) => FLOORED_COUNT,
        (k, _) => kind_name(k),
    }
}

/// The smallest δ of GRID caught in GOAL of `draws` (None past it).
pub(crate) fn smallest(caught: &[usize; GRID.len()], draws: usize) -> Option<f64> {
    GRID.iter()
        .zip(caught)
        .find(|(_, c)| **c as f64 >= GOAL * draws as f64)
        .map(|(d, _)| *d)
}

/// The median of smallest-δ values, None (beyond the grid) counted as
/// the largest.
pub(crate) fn median_detect(v: &[Option<f64>]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    // The lower median: a δ of the grid, not between two.
    let m = v[(v.len() - 1) / 2];
    m.is_finite().then_some(m)
}

/// `tally(n, i)` for every n of `rounds` and every series index i below
/// `count`, on all cores (each pair draws on its own seed, [`salt`], so
/// the result does not depend on the order); the pairs it has no tally
/// for are left out.
pub(crate) fn tallied<T: Send>(
    rounds: &[usize],
    count: usize,
    tally: impl Fn(usize, usize) -> Option<T> + Sync,
) -> std::collections::HashMap<(usize, usize), T> {
    let pairs: Vec<(usize, usize)> = rounds
        .iter()
        .flat_map(|&n| (0..count).map(move |i| (n, i)))
        .collect();
    let got = on_cores::map(&pairs, |&(n, i)| tally(n, i));
    pairs
        .into_iter()
        .zip(got)
        .filter_map(|(k, t)| Some((k, t?)))
        .collect()
}

/// The seed salt of series `i` at `n` rounds.
pub(crate) fn salt(n: usize, i: usize) -> u64 {
    (i as u64) << 8 | n as u64
}

/// The table's rows: every class at every n of `rounds` that some series
/// has 2n recorded rounds for.
pub fn calibrate(series: &[Series], rounds: &[usize], trials: usize) -> Vec<Row> {
    let tallies = tallied(rounds, series.len(), |n, i| {
        let s = &series[i];
        (s.recorded.samples.len() >= 2 * n).then(|| tally(s, n, trials, salt(n, i)))
    });
    let mut rows = Vec::new();
    for &n in rounds {
        for name in CLASSES {
            let mut row = Row {
                kind: name.into(),
                rounds: n,
                metrics: 0,
                draws: 0,
                ab_false: 0.0,
                ab_worst: 0.0,
                ab_worst_metric: String::new(),
                compare_false: 0.0,
                compare_worst: 0.0,
                compare_worst_metric: String::new(),
                ab_detects: None,
                compare_detects: None,
            };
            let (mut ab_false, mut cmp_false) = (0, 0);
            let (mut ab_d, mut cmp_d) = (Vec::new(), Vec::new());
            for (i, s) in series.iter().enumerate() {
                if class(s) != name {
                    continue;
                }
                let Some(t) = tallies.get(&(n, i)) else {
                    continue;
                };
                let name = || format!("{} {} ({})", s.mode, s.metric, s.from);
                row.metrics += 1;
                row.draws += t.draws;
                ab_false += t.ab_false;
                cmp_false += t.compare_false;
                let (ab_rate, cmp_rate) = (
                    t.ab_false as f64 / t.draws as f64,
                    t.compare_false as f64 / t.draws as f64,
                );
                if ab_rate > row.ab_worst {
                    row.ab_worst = ab_rate;
                    row.ab_worst_metric = name();
                }
                if cmp_rate > row.compare_worst {
                    row.compare_worst = cmp_rate;
                    row.compare_worst_metric = name();
                }
                ab_d.push(smallest(&t.ab_caught, t.draws));
                cmp_d.push(smallest(&t.compare_caught, t.draws));
            }
            if row.metrics == 0 {
                continue;
            }
            row.ab_false = ab_false as f64 / row.draws as f64;
            row.compare_false = cmp_false as f64 / row.draws as f64;
            row.ab_detects = median_detect(&ab_d);
            row.compare_detects = median_detect(&cmp_d);
            rows.push(row);
        }
    }
    rows
}

pub(crate) fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

pub(crate) fn detect(x: Option<f64>) -> String {
    match x {
        Some(d) => format!("{:.0} %", d * 100.0),
        None => format!("> {:.0} %", GRID[GRID.len() - 1] * 100.0),
    }
}

/// The table, with what it was drawn from and the rounds it could not
/// measure.
pub fn markdown(rows: &[Row], series: &[Series], rounds: &[usize], trials: usize) -> String {
    let mut s = String::new();
    // A baseline file and its number of recorded rounds.
    type Source = (String, usize);
    let mut sources: Vec<Source> = Vec::new();
    for x in series {
        if !sources.iter().any(|(f, _)| *f == x.from) {
            sources.push((x.from.clone(), x.recorded.samples.len()));
        }
    }
    // A file with fewer rounds than two halves of the smallest n feeds no
    // row: named as left out, not as a source.
    let least = 2 * rounds.iter().min().copied().unwrap_or(1);
    let (used, short): (Vec<&Source>, Vec<&Source>) =
        sources.iter().partition(|(_, m)| *m >= least);
    let names = |v: &[&Source]| {
        v.iter()
            .map(|(f, m)| format!("`{f}` ({m} rounds)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut from = match used.is_empty() {
        true => "no baseline with enough rounds".to_string(),
        false => names(&used),
    };
    if !short.is_empty() {
        let _ = write!(
            from,
            " ({} left out: fewer than the {least} rounds two halves of n = {} need)",
            names(&short),
            least / 2
        );
    }
    let _ = writeln!(
        s,
        "From {from}; {trials} seeded draws per metric and number of rounds n (a shuffle of the recorded rounds: A/B pairs the first n with the next n; --compare judges the first n against the rest). False: a verdict between runs of the same build. Smallest change caught: the median over the kind's metrics of the smallest shift of the run's recorded values (of {}) called higher in {:.0} % of the draws.\n",
        GRID.iter()
            .map(|d| format!("{:.0} %", d * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        GOAL * 100.0
    );
    let mut floors: Vec<String> = Vec::new();
    for x in series.iter().filter(|x| class(x) == FLOORED_COUNT) {
        let f = format!("{} {}", x.rule.floor, x.recorded.unit);
        if !floors.contains(&f) {
            floors.push(f);
        }
    }
    if !floors.is_empty() {
        let _ = writeln!(
            s,
            "Counts with a floor (each client's requests, and the like) are a row of their own: a change must pass their floor ({}) as well as the 2 % minimum effect, so the floor, not the spread, sets the smallest change they catch.\n",
            floors.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "| kind | n | metrics | A/B false verdicts | worst metric | --compare false regressions | worst metric | A/B: smallest change caught | --compare: smallest change caught |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|---:|---|---:|---:|");
    for r in rows {
        let worst = |rate: f64, m: &str| match rate > 0.0 {
            true => format!("{} ({m})", pct(rate)),
            false => "—".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.kind,
            r.rounds,
            r.metrics,
            pct(r.ab_false),
            worst(r.ab_worst, &r.ab_worst_metric),
            pct(r.compare_false),
            worst(r.compare_worst, &r.compare_worst_metric),
            detect(r.ab_detects),
            detect(r.compare_detects)
        );
    }
    let longest = sources.iter().map(|(_, m)| *m).max().unwrap_or(0);
    for n in rounds {
        if !rows.iter().any(|r| r.rounds == *n) {
            let _ = writeln!(
                s,
                "\nn = {n}: not measured — it needs {} recorded rounds of one build, and the longest baseline has {longest}.",
                2 * n
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::synthetic;

    fn one(kind: Kind, samples: Vec<f64>) -> Series {
        Series {
            from: "b.json".into(),
            mode: "m".into(),
            metric: "x".into(),
            kind,
            rule: kind.rule(0.0),
            recorded: Metric {
                across: Vec::new(),
                value: stats::median(&samples),
                unit: String::new(),
                kind: kind.stored(),
                tolerance: Default::default(),
                samples,
            },
        }
    }

    #[test]
    fn a_constant_count_never_alarms_and_is_seen_past_the_minimum_effect() {
        let rows = calibrate(&[one(Kind::Fixed, vec![10.0; 10])], &[3, 5, 10], 50);
        assert_eq!(rows.len(), 2, "n = 10 needs 20 rounds: {rows:?}");
        for r in &rows {
            assert_eq!((r.ab_false, r.compare_false), (0.0, 0.0));
            // Paired: a point interval, past the 2 % minimum: 3 %.
            assert_eq!(r.ab_detects, Some(0.03));
            // --compare: a fixed count outside its recorded range: 1 %.
            assert_eq!(r.compare_detects, Some(0.01));
        }
        let md = markdown(&rows, &[one(Kind::Fixed, vec![10.0; 10])], &[3, 5, 10], 50);
        assert!(
            md.contains("n = 10: not measured — it needs 20 recorded rounds"),
            "{md}"
        );
        assert!(md.contains("| fixed count | 3 | 1 | 0.0 % | — |"), "{md}");
    }

    #[test]
    fn counts_with_a_floor_are_a_row_of_their_own() {
        // A client's 100 requests a run with a floor of 30: only a shift
        // past 30 requests is seen (+50 %, where +20 % is 20); the total's
        // 1,000 without a floor at 3 %. One "count" row would show the
        // median of the two.
        let mut client = one(Kind::Count, vec![100.0; 10]);
        client.rule = Kind::Count.rule(30.0);
        client.recorded.unit = "requests".into();
        let series = vec![one(Kind::Count, vec![1000.0; 10]), client];
        let rows = calibrate(&series, &[3], 20);
        let names: Vec<&str> = rows.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(names, ["count", "count with a floor"]);
        assert_eq!(rows[0].ab_detects, Some(0.03));
        assert_eq!(rows[1].ab_detects, Some(0.5));
        let mut series = series;
        let mut short = one(Kind::Count, vec![5.0; 5]);
        short.from = "short.json".into();
        series.push(short);
        let md = markdown(&rows, &series, &[3], 20);
        assert!(md.contains("their floor (30 requests)"), "{md}");
        assert!(
            md.contains("From `b.json` (10 rounds) (`short.json` (5 rounds) left out: fewer than the 6 rounds two halves of n = 3 need)"),
            "{md}"
        );
        assert!(md.contains("| count with a floor | 3 | 1 |"), "{md}");
    }

    #[test]
    fn noisy_series_alarm_near_the_level_and_need_larger_shifts() {
        // Twenty noisy counts of ±20 %: at 3 rounds the rule stays at its
        // level (false verdicts at most 5 % + three binomial sd), and the
        // shift it catches is larger than a quiet series'.
        let noisy: Vec<Series> = (0..20)
            .map(|i| one(Kind::Count, synthetic(1000.0, 0.2, 10, 40 + i)))
            .collect();
        let quiet: Vec<Series> = (0..20)
            .map(|i| one(Kind::Count, synthetic(1000.0, 0.01, 10, 80 + i)))
            .collect();
        let draws: f64 = 20.0 * 100.0;
        let allowed = 0.05 + 3.0 * (0.05 * 0.95 / draws).sqrt();
        let n = calibrate(&noisy, &[3], 100);
        let q = calibrate(&quiet, &[3], 100);
        assert!(n[0].ab_false <= allowed, "{:?}", n[0]);
        assert!(n[0].compare_false <= allowed, "{:?}", n[0]);
        assert!(n[0].ab_detects > q[0].ab_detects, "{n:?} {q:?}");
        assert!(q[0].ab_detects <= Some(0.06), "{q:?}");
    }
}
