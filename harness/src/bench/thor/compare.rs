//! Judging a run against its stored baseline, one verdict per metric.
//!
//! A v2 baseline keeps each metric's recorded runs. Its **band** is what
//! those runs measured: the highest ÷ their median. A metric is
//! **regressed** when the one rule of `crate::stats` says the run is
//! "higher" than the recorded runs raised by the band: the 95 % interval
//! of the ratio of medians (unpaired percentile bootstrap) lies above 1 +
//! band, and the change exceeds the metric's minimum effect and noise
//! floor. "lower" (against the recorded runs themselves) passes, and is
//! reported. Counts the
//! scenario fixes (`MetricKind::Exact`) pass only inside the recorded
//! runs' range (equal, when every recorded run agreed).
//!
//! A v1 baseline (one value, a hand-set tolerance) is judged as it was,
//! and every row says it came from a single-value baseline. A mode the
//! run did not measure is "not compared"; a metric of the run the
//! baseline lacks is reported as "not in the baseline".

use serde::Serialize;

use crate::bench::thor::baseline::{Baseline, Metric, MetricKind, metric_value, metric_values};
use crate::bench::thor::result::{ThorResult, rule_of};
use crate::stats::{self, Direction};

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

/// The run's values of `name` in `mode`, one per repeat.
fn run_samples(r: &ThorResult, mode: &str, name: &str) -> Option<Vec<f64>> {
    let s = r.modes.get(mode)?;
    let runs = if s.repeats.is_empty() {
        std::slice::from_ref(&s.result)
    } else {
        &s.repeats[..]
    };
    let v: Vec<f64> = runs.iter().filter_map(|x| metric_value(x, name)).collect();
    (!v.is_empty()).then_some(v)
}

/// Check a run against a baseline, metric by metric.
pub fn compare(b: &Baseline, r: &ThorResult) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (mode, metrics) in &b.modes {
        if !r.modes.contains_key(mode) {
            out.push(Verdict {
                mode: mode.clone(),
                metric: format!("(all {} metrics)", metrics.len()),
                kind: MetricKind::Count,
                baseline: f64::NAN,
                current: None,
                pass: true,
                status: Status::NotCompared,
                judged: None,
                note: format!("not compared: {mode} was not run (--modes)"),
            });
            continue;
        }
        for (name, m) in metrics {
            let current = run_samples(r, mode, name);
            let mut v = Verdict {
                mode: mode.clone(),
                metric: name.clone(),
                kind: m.kind,
                baseline: m.value,
                current: current.as_deref().map(stats::median),
                pass: true,
                status: Status::Ok,
                judged: None,
                note: String::new(),
            };
            match current {
                None => {
                    v.pass = false;
                    v.status = Status::Regressed;
                    v.note = "not measured in this run".into();
                }
                Some(cur) if m.samples.is_empty() || b.single_value() => {
                    let (pass, note) = judge_v1(m, stats::median(&cur));
                    v.pass = pass;
                    v.status = if pass { Status::Ok } else { Status::Regressed };
                    v.note = format!("single-value baseline: {note}");
                }
                Some(cur) => judge_samples(&mut v, name, m, &cur),
            }
            out.push(v);
        }
        // What the run measured that the baseline never recorded.
        let Some(sum) = r.modes.get(mode) else {
            continue;
        };
        for (name, value) in metric_values(&sum.result) {
            if !metrics.contains_key(&name) {
                out.push(Verdict {
                    mode: mode.clone(),
                    metric: name,
                    kind: MetricKind::Count,
                    baseline: f64::NAN,
                    current: Some(value),
                    pass: true,
                    status: Status::NotInBaseline,
                    judged: None,
                    note: "not in the baseline: not judged (re-record to judge it)".into(),
                });
            }
        }
    }
    out
}

/// The band a baseline's recorded runs measured above their median, as a
/// relative effect (0 for one run).
pub fn band_of(samples: &[f64]) -> f64 {
    let s = stats::spread(samples);
    if s.median > 0.0 {
        (s.max / s.median - 1.0).max(0.0)
    } else {
        0.0
    }
}

fn judge_samples(v: &mut Verdict, name: &str, m: &Metric, cur: &[f64]) {
    let base = stats::spread(&m.samples);
    if m.kind == MetricKind::Exact {
        let outside: Vec<f64> = cur
            .iter()
            .copied()
            .filter(|x| *x < base.min || *x > base.max)
            .collect();
        v.pass = outside.is_empty();
        v.status = if v.pass {
            Status::Ok
        } else {
            Status::Regressed
        };
        let recorded = if base.min == base.max {
            crate::bench::thor::charts::fmt_num(base.min)
        } else {
            format!("{}–{}", base.min, base.max)
        };
        v.note = match v.pass {
            true => format!("exact: {recorded} as recorded"),
            false => format!(
                "exact count: {} where {} runs recorded {recorded}",
                outside
                    .iter()
                    .map(|x| crate::bench::thor::charts::fmt_num(*x))
                    .collect::<Vec<_>>()
                    .join(", "),
                base.n
            ),
        };
        return;
    }
    let stated = rule_of(name);
    let band = band_of(&m.samples);
    // The run against the top of the baseline's band: its runs raised by
    // the band. "higher" than that is a regression.
    let raised: Vec<f64> = m.samples.iter().map(|x| x * (1.0 + band)).collect();
    let Some(mut j) = stats::judge(&raised, cur, false, stated) else {
        return;
    };
    // Reported against the baseline itself.
    let unraised = stats::judge(&m.samples, cur, false, stated);
    if let Some(u) = unraised {
        j.ratio = u.ratio;
        j.p_value = u.p_value;
        if j.verdict == Direction::Same {
            // Lower is judged against the baseline itself.
            j.verdict = match u.verdict {
                Direction::Lower => Direction::Lower,
                _ => Direction::Same,
            };
        }
    }
    v.judged = Some(j);
    let interval = format!(
        "×{:.3} [{:.3}–{:.3}]",
        j.ratio.ratio, j.ratio.ci_low, j.ratio.ci_high
    );
    let why = format!(
        "band +{:.1} % from {} recorded runs (min effect {:.0} %{})",
        band * 100.0,
        base.n,
        stated.min_effect * 100.0,
        if stated.floor > 0.0 {
            format!(", floor {} {}", stated.floor, m.unit)
        } else {
            String::new()
        }
    );
    match j.verdict {
        Direction::Higher => {
            v.pass = false;
            v.status = Status::Regressed;
            v.note = format!("higher: {interval}, past the {why}");
        }
        Direction::Lower => {
            v.status = Status::Improved;
            v.note = format!("lower: {interval} ({why})");
        }
        Direction::Same => {
            v.note = format!("no significant difference: {interval} ({why})");
        }
    }
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
        if v.status == Status::Regressed {
            v.status = Status::Ok;
        }
    }
}

fn judge_v1(m: &Metric, cur: f64) -> (bool, String) {
    let t = &m.tolerance;
    let floor = t.floor.unwrap_or(0.0);
    match m.kind {
        MetricKind::Count | MetricKind::Bytes | MetricKind::Exact => {
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
    use crate::bench::thor::baseline::{SCHEMA_V1, Tolerance, from_result};
    use crate::bench::thor::result::{ModeResult, sample_result, summarize};
    use crate::stats::{Prng, synthetic};

    /// A v1 baseline: one value per metric, the hand-set tolerances.
    fn v1(requests: f64, p99: f64) -> Baseline {
        let mut b = from_result(&sample_result(0, 0.0), "s.yaml");
        b.schema = SCHEMA_V1.into();
        for (name, m) in b.modes.get_mut("baseline").unwrap().iter_mut() {
            m.samples.clear();
            m.tolerance = match m.kind {
                MetricKind::Latency => Tolerance {
                    ratio: Some([0.66, 1.5]),
                    floor: Some(if name == "wall_s" { 5.0 } else { 1000.0 }),
                    relative: None,
                },
                _ => Tolerance {
                    relative: Some(0.2),
                    ..Default::default()
                },
            };
            m.value = match name.as_str() {
                "api_requests_total" => requests,
                "pod_startup_ms.p99" => p99,
                _ => m.value,
            };
        }
        b
    }

    #[test]
    fn single_value_baselines_are_judged_by_their_tolerance_and_say_so() {
        let base = v1(300.0, 2000.0);
        assert!(base.problems().is_empty(), "{:?}", base.problems());
        let verdicts = compare(&base, &sample_result(390, 2000.0));
        let failed: Vec<&Verdict> = verdicts.iter().filter(|v| !v.pass).collect();
        assert_eq!(failed.len(), 1, "{failed:#?}");
        assert_eq!(failed[0].metric, "api_requests_total");
        assert!(failed[0].note.contains("+30.0%"), "{}", failed[0].note);
        assert!(
            verdicts
                .iter()
                .filter(|v| v.status != Status::NotInBaseline)
                .all(|v| v.note.starts_with("single-value baseline")),
            "{verdicts:#?}"
        );
        // Latency ×2.1 but within the 1 s noise: passes; ×2.6 fails.
        let base = v1(300.0, 700.0);
        let p99 = |r| {
            compare(&base, &sample_result(300, r))
                .into_iter()
                .find(|v| v.metric == "pod_startup_ms.p99")
                .unwrap()
        };
        assert!(p99(1500.0).pass && p99(1500.0).note.contains("within the noise"));
        assert!(!p99(1800.0).pass);
        // Not judging latency: the regression passes and says so; a count
        // regression still fails.
        let mut v = compare(&base, &sample_result(390, 1800.0));
        not_judging_latency(&mut v);
        let p = v.iter().find(|v| v.metric == "pod_startup_ms.p99").unwrap();
        assert!(p.pass && p.note.contains("would regress"), "{p:#?}");
        let failed: Vec<_> = v.iter().filter(|v| !v.pass).map(|v| &v.metric).collect();
        assert_eq!(failed, ["api_requests_total"]);
    }

    /// Noise of one smoke run, per figure (relative, uniform ±): HPCC's
    /// polls move its requests by whole kubectl calls.
    #[derive(Clone, Copy)]
    struct Shape {
        thor: f64,
        others: f64,
        cpu: f64,
        extra_thor: f64,
    }

    const UNCHANGED: Shape = Shape {
        thor: 1120.0,
        others: 1500.0,
        cpu: 5.5,
        extra_thor: 0.0,
    };

    fn one_run(rng: &mut Prng, s: Shape, mode: &str) -> ModeResult {
        let mut u = || rng.next_u64() as f64 / u64::MAX as f64 * 2.0 - 1.0;
        // ±4 kubectl calls of 27 requests.
        let polls = (u() * 4.0).round();
        let thor = (s.thor + 27.0 * polls) * (1.0 + s.extra_thor);
        let others = s.others * (1.0 + 0.03 * u());
        let mut m = sample_result(0, 0.0).modes["baseline"].result.clone();
        m.mode = mode.into();
        m.thor_agent_requests = thor.round() as u64;
        m.thor_agent_calls
            .insert("get job".into(), ((thor / 27.0) * 0.6).round() as u64);
        m.thor_agent_calls.insert("replace".into(), 4);
        m.eclccserver_requests = (300.0 * (1.0 + 0.05 * u())).round() as u64;
        m.window.api_requests_total = (thor + others).round() as u64;
        m.window.etcd_writes_total = (200.0 * (1.0 + 0.03 * u())).round() as u64;
        m.window.apiserver_etcd_cpu_s = s.cpu * (1.0 + 0.15 * u());
        m.pod_startup_ms.p99 = 265.0 * (1.0 + 0.5 * u());
        m.instance_start_ms.p99 = 1400.0 * (1.0 + 0.4 * u());
        m.wall_s = 31.0 * (1.0 + 0.05 * u());
        m.window.api_latency_ms.insert(
            "mutating".into(),
            crate::metrics::Percentiles {
                p99: 40.0 * (1.0 + 0.8 * u()),
                ..Default::default()
            },
        );
        m
    }

    fn run_set(n: usize, seed: u64, s: Shape) -> ThorResult {
        let mut rng = Prng::new(seed);
        let mut r = sample_result(0, 0.0);
        r.modes.clear();
        for mode in ["baseline", "jobset"] {
            let runs = (0..n).map(|_| one_run(&mut rng, s, mode)).collect();
            r.modes.insert(mode.into(), summarize(runs));
        }
        r
    }

    #[test]
    fn unchanged_code_passes_and_a_thor_only_regression_of_30_percent_fails() {
        // 30 trials: a baseline of 10 runs, a compare of 3 runs of the same
        // code, latencies judged too (measured: 0 of 50 failed).
        let mut false_alarms = Vec::new();
        for t in 0..30 {
            let base = from_result(&run_set(10, 100 + t, UNCHANGED), "s.yaml");
            let v = compare(&base, &run_set(3, 900 + t, UNCHANGED));
            let failed: Vec<String> = v
                .iter()
                .filter(|v| !v.pass)
                .map(|v| format!("{} {}: {}", v.mode, v.metric, v.note))
                .collect();
            if !failed.is_empty() {
                false_alarms.push(failed);
            }
        }
        assert!(false_alarms.len() <= 2, "{false_alarms:#?}");
        // The Thor identity +30 % (the run total ~+13 %): caught, by name,
        // in every trial.
        let worse = Shape {
            extra_thor: 0.30,
            ..UNCHANGED
        };
        for t in 0..10 {
            let base = from_result(&run_set(10, 100 + t, UNCHANGED), "s.yaml");
            let v = compare(&base, &run_set(3, 500 + t, worse));
            let failed: Vec<&str> = v
                .iter()
                .filter(|v| !v.pass && v.mode == "jobset")
                .map(|v| v.metric.as_str())
                .collect();
            assert!(failed.contains(&"thor_agent_requests"), "{t}: {failed:?}");
            let thor = v
                .iter()
                .find(|v| v.metric == "thor_agent_requests")
                .unwrap();
            let ratio = thor.judged.unwrap().ratio.ratio;
            assert!(
                thor.note.starts_with("higher: ×") && ratio > 1.15 && ratio < 1.5,
                "{}",
                thor.note
            );
        }
    }

    #[test]
    fn exact_counts_modes_left_out_and_new_metrics() {
        let base = from_result(&run_set(5, 1, UNCHANGED), "s.yaml");
        assert!(base.problems().is_empty(), "{:?}", base.problems());
        let m = &base.modes["baseline"];
        assert_eq!(m["pods_created"].kind, MetricKind::Exact);
        assert_eq!(m["pods_created"].samples, vec![12.0; 5]);
        assert_eq!(m["eclccserver_requests"].samples.len(), 5);
        assert!(m.contains_key("thor_agent_calls.get job"));
        // One pod more in one run of three: regressed, exactly.
        let mut r = run_set(3, 2, UNCHANGED);
        let j = r.modes.get_mut("jobset").unwrap();
        j.repeats[1].pods_created = 13;
        let v = compare(&base, &r);
        let pods = v
            .iter()
            .find(|v| v.mode == "jobset" && v.metric == "pods_created")
            .unwrap();
        assert!(!pods.pass, "{pods:#?}");
        assert!(
            pods.note.contains("13 where 5 runs recorded 12"),
            "{}",
            pods.note
        );
        // A mode left out: one "not compared" row, no regression.
        let mut r = run_set(3, 2, UNCHANGED);
        r.modes.remove("jobset");
        let v = compare(&base, &r);
        let left: Vec<&Verdict> = v.iter().filter(|v| v.mode == "jobset").collect();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].status, Status::NotCompared);
        assert!(v.iter().all(|v| v.pass), "{v:#?}");
        // A metric the baseline lacks is reported, not silently dropped.
        let mut r = run_set(3, 2, UNCHANGED);
        for run in &mut r.modes.get_mut("baseline").unwrap().repeats {
            run.window.objects_created.insert("services".into(), 4);
        }
        let sum = r.modes.get_mut("baseline").unwrap();
        *sum = summarize(sum.repeats.clone());
        let v = compare(&base, &r);
        let new = v
            .iter()
            .find(|v| v.metric == "objects_created.services")
            .unwrap();
        assert_eq!((new.status, new.pass), (Status::NotInBaseline, true));
        // Round trip of a v2 file.
        let json = serde_json::to_string(&base).unwrap();
        let back: Baseline = serde_json::from_str(&json).unwrap();
        assert_eq!(back, base);
        assert!(
            !json.contains("tolerance"),
            "v2 keeps no hand-set tolerance"
        );
    }

    #[test]
    fn the_band_is_the_highest_recorded_run_over_the_median() {
        assert_eq!(band_of(&[100.0, 110.0, 120.0]), 120.0 / 110.0 - 1.0);
        assert_eq!(band_of(&[5.0]), 0.0);
        assert_eq!(band_of(&[0.0, 0.0]), 0.0);
        let s = synthetic(100.0, 0.1, 20, 3);
        assert!(band_of(&s) > 0.05 && band_of(&s) < 0.11);
    }
}
