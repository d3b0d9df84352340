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

use crate::bench::core::baseline::{Baseline, Metric};
use crate::bench::core::metric::{self as declared, MetricKind, Spec, Views, spec_of};
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::bench::core::thin;
pub use crate::bench::core::verdict::{Status, Verdict};
use crate::stats::{self, Direction};

/// The run's values of `name` in `mode`, one per repeat.
fn run_samples<R: Run>(
    metrics: &[declared::Metric<R>],
    r: &Results<R>,
    mode: &str,
    name: &str,
) -> Option<Vec<f64>> {
    let runs = r.modes.get(mode)?.runs();
    let v: Vec<f64> = runs
        .iter()
        .filter_map(|x| declared::value_of(metrics, x, name))
        .collect();
    (!v.is_empty()).then_some(v)
}

/// Why metric `name` follows the machine's timing (its declaration's
/// `time_bound`); None for the metrics that do not.
pub fn time_bound(specs: &[Spec], name: &str) -> Option<&'static str> {
    spec_of(specs, name).and_then(|s| s.time_bound_of(name))
}

/// Check a run against a baseline, metric by metric, after what the
/// workload judges of the run set on its own (`Run::own_verdicts`: Thor's
/// calls against the scenario's plan).
pub fn compare<R: Run>(b: &Baseline, r: &Results<R>) -> Vec<Verdict> {
    let declared = R::metrics();
    let specs: Vec<Spec> = declared.iter().map(|m| m.spec).collect();
    let mut out = R::own_verdicts(r);
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
            let Some(spec) = spec_of(&specs, name) else {
                // A metric an older harness kept of this workload's runs
                // (a `measure` baseline recorded when its runs carried
                // Thor's zeroed fields).
                out.push(Verdict {
                    mode: mode.clone(),
                    metric: name.clone(),
                    kind: m.kind,
                    baseline: m.value,
                    current: None,
                    pass: true,
                    status: Status::NotCompared,
                    judged: None,
                    note: "not compared: not a metric of this workload's runs (recorded by an older harness)".into(),
                });
                continue;
            };
            let current = run_samples(&declared, r, mode, name);
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
                Some(cur) => judge_samples(&mut v, spec.rule(), m, &cur),
            }
            if v.current.is_some()
                && let Some(why) = r.modes.get(mode).and_then(|s| {
                    thin::too_thin(s.runs().iter().map(|x| &x.figures().window), name)
                })
            {
                not_judged(&mut v, &why);
            }
            out.push(v);
        }
        // What the run measured that the baseline never recorded.
        let Some(sum) = r.modes.get(mode) else {
            continue;
        };
        let kept: std::collections::BTreeMap<String, f64> =
            declared::values_in(&declared, &sum.result, Views::KEPT)
                .into_iter()
                .collect();
        for (name, value) in kept {
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

fn judge_samples(v: &mut Verdict, stated: stats::Rule, m: &Metric, cur: &[f64]) {
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
            crate::bench::core::charts::fmt_num(base.min)
        } else {
            format!("{}–{}", base.min, base.max)
        };
        v.note = match v.pass {
            true => format!("exact: {recorded} as recorded"),
            false => format!(
                "exact count: {} where {} runs recorded {recorded}",
                outside
                    .iter()
                    .map(|x| crate::bench::core::charts::fmt_num(*x))
                    .collect::<Vec<_>>()
                    .join(", "),
                base.n
            ),
        };
        return;
    }
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
        // Only "higher" is judged against the band's top: a run below
        // that top is lower than the baseline itself, or no different
        // (a run inside the band is not "lower" because the raised runs
        // are higher).
        if j.verdict != Direction::Higher {
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

/// Keep the verdicts that depend on the machine's speed as information
/// only — latencies, and the counts that follow the machine's timing
/// (each declaration's `time_bound`: HPCC's polls, everyone else's requests): they
/// pass, and their note says what they would have been. For runs on a
/// machine unlike (or busier than) the one that recorded the baseline
/// (`bench --compare --counts-only`, the `cargo test` smoke suite).
pub fn counts_only(specs: &[Spec], verdicts: &mut [Verdict]) {
    for v in verdicts.iter_mut() {
        let what = match v.kind {
            MetricKind::Latency => "latency",
            _ => match time_bound(specs, &v.metric) {
                Some(why) => why,
                None => continue,
            },
        };
        not_judged(v, what);
    }
}

/// Show verdict `v` without judging it, for reason `why`: it passes, and
/// its note says what it would have said.
pub fn not_judged(v: &mut Verdict, why: &str) {
    let would = if v.pass { "" } else { ", would regress" };
    v.note = format!("not judged ({why}{would}): {}", v.note);
    v.pass = true;
    if v.status == Status::Regressed {
        v.status = Status::Ok;
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
mod tests;
