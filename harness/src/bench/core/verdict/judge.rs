//! One judge per way a metric is judged, each returning a decision and
//! its reason (no words: `words` says them):
//! - [`exact`]: a count the scenario fixes, inside the recorded runs'
//!   range;
//! - [`own`]: the recorded runs raised by their own band (highest ÷
//!   median) — on the baseline's machine, quiet, and wherever the
//!   workload alone drives the metric: regressed when the 95 % interval of
//!   run ÷ baseline (Welch's t on the logs, `stats::judge`) lies above
//!   1 + band and the change exceeds the metric's minimum effect and
//!   floor;
//! - [`machines`]: off the recording machine, what the pace or the clock
//!   drives, against what a machine not seen yet may show
//!   (`stats::machines`): regressed when the run set's mean lies past the
//!   prediction's family-wise bound and the change exceeds the minimum
//!   effect and floor; withheld when that bound is wider than the change
//!   the metric must be seen at and than its floor;
//! - [`new_class`]: a member of a family (a request class, a client) no
//!   run of any machine made, now made at least [`NEW_CLASS_FLOOR`] times
//!   a run: new behaviour, a regression anywhere;
//! - [`single_value`]: a v1 baseline's hand-set tolerance.

use crate::bench::core::baseline::Metric;
use crate::bench::core::metric::{Kind, MetricKind};
use crate::bench::core::verdict::band::Band;
use crate::bench::core::verdict::model::{
    Against, Allowance, Reason, Status, Tolerance, Unjudgeable,
};
use crate::stats::machines::{Pooled, family_z, predict};
use crate::stats::{self, Direction, Judged, Rule};

/// The chance, per run set, that any metric judged against the machines
/// is called regressed on unchanged code (the goal: one run in a
/// hundred), split evenly over them.
pub const FAMILY_ALPHA: f64 = 0.01;

/// The widest allowance (relative to the machines' centre) a count or a
/// size is judged with: one wider could not see a controller whose
/// requests rise 10 %, so such a verdict is withheld.
pub const MUST_SEE_COUNT: f64 = 0.10;
/// The same for times, CPU and latencies: perf-tests' latency band is
/// ×0.66–×1.5, so an allowance past +50 % says nothing a user would act
/// on.
pub const MUST_SEE_TIME: f64 = 0.50;

/// The fewest a run a family member no run of the baseline's machines
/// ever made must reach to be called new behaviour. The sporadic members
/// of the stored baselines — made in some runs and not others (discovery
/// GETs of the controllers' resyncs, a JobSet's child-Job delete,
/// CoreDNS's service account on kind) — made at most 6 in any run (a
/// test reads them), so 15 is more than twice what chance has shown.
pub const NEW_CLASS_FLOOR: f64 = 15.0;

/// The widest allowance a metric of `kind` is judged with.
pub fn must_see(kind: Kind) -> f64 {
    if kind.machine_bound() {
        MUST_SEE_TIME
    } else {
        MUST_SEE_COUNT
    }
}

/// What a judge decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub status: Status,
    pub reason: Reason,
    /// The interval of run ÷ the recorded runs, where there is one.
    pub judged: Option<Judged>,
}

/// A count the scenario fixes: inside the recorded runs' range.
pub fn exact(recorded: &[f64], cur: &[f64]) -> Decision {
    let base = stats::spread(recorded);
    let outside: Vec<f64> = cur
        .iter()
        .copied()
        .filter(|x| *x < base.min || *x > base.max)
        .collect();
    Decision {
        status: if outside.is_empty() {
            Status::Ok
        } else {
            Status::Regressed
        },
        reason: Reason::Exact {
            low: base.min,
            high: base.max,
            runs: base.n,
            outside,
        },
        judged: None,
    }
}

/// A family member no run of the band made (every stored value 0).
pub fn new_class(cur: &[f64]) -> Decision {
    let now = stats::median(cur);
    Decision {
        status: if now >= NEW_CLASS_FLOOR {
            Status::Regressed
        } else {
            Status::Ok
        },
        reason: Reason::NewClass {
            floor: NEW_CLASS_FLOOR,
        },
        judged: None,
    }
}

/// Whether every value the band stores is 0: a member no run made.
pub fn never_made(band: &Band) -> bool {
    band.recorded
        .iter()
        .chain(band.machines.iter().flatten())
        .all(|x| *x == 0.0)
}

/// The recorded runs raised to the top of their own band.
fn raised(recorded: &[f64], up: f64) -> Vec<f64> {
    recorded.iter().map(|x| x * (1.0 + up)).collect()
}

/// The recorded runs' own band above their median (0 for one run, or a
/// median of 0).
pub fn own_band(recorded: &[f64]) -> f64 {
    let s = stats::spread(recorded);
    if s.median > 0.0 {
        (s.max / s.median - 1.0).max(0.0)
    } else {
        0.0
    }
}

/// Against the recorded runs raised by their own band: "higher" past its
/// top, "lower" below the recorded runs themselves.
pub fn own(recorded: &[f64], rule: Rule, cur: &[f64], unit: &str) -> Decision {
    let up = own_band(recorded);
    let against = Against::Own {
        up,
        runs: recorded.len(),
    };
    let reason = Reason::Judged {
        against,
        rule,
        unit: unit.to_string(),
    };
    let Some(mut j) = stats::judge(&raised(recorded, up), cur, false, rule) else {
        return Decision {
            status: Status::Ok,
            reason,
            judged: None,
        };
    };
    if let Some(u) = stats::judge(recorded, cur, false, rule) {
        // The interval shown is against the recorded runs themselves; the
        // p and what it could see are the test that decided (against the
        // band's top for "higher", the runs for "lower").
        j.ratio = u.ratio;
        if j.verdict != Direction::Higher {
            j.verdict = if u.verdict == Direction::Lower {
                j.p_value = u.p_value;
                j.detectable = u.detectable;
                Direction::Lower
            } else {
                Direction::Same
            };
        }
    }
    Decision {
        status: status_of(j.verdict),
        reason,
        judged: Some(j),
    }
}

fn status_of(d: Direction) -> Status {
    match d {
        Direction::Higher => Status::Regressed,
        Direction::Lower => Status::Improved,
        Direction::Same => Status::Ok,
    }
}

/// What the judge of the machines needs of a metric besides its band.
#[derive(Debug, Clone, Copy)]
pub struct Judging<'a> {
    pub kind: Kind,
    pub rule: Rule,
    pub unit: &'a str,
    /// Added to each value before its log (`band::offset`).
    pub offset: f64,
    /// The pooled proportion of the metric's kind.
    pub pool: Option<Pooled>,
    /// Metrics judged against the machines in the comparison.
    pub family: usize,
}

/// Against what a machine not seen yet may show (`stats::machines`).
pub fn machines(band: &Band, how: Judging, cur: &[f64]) -> Decision {
    let withheld = |why: Unjudgeable, could_see: Option<f64>| Decision {
        status: Status::Withheld,
        reason: Reason::Withheld { why, could_see },
        judged: None,
    };
    let Some(c) = band.components(how.offset) else {
        return withheld(Unjudgeable::OneMachine, None);
    };
    let logs: Vec<f64> = cur.iter().map(|x| (x + how.offset).ln()).collect();
    let runs_var = crate::stats::machines::components(std::slice::from_ref(&logs))
        .filter(|r| r.runs > 1)
        .map(|r| r.within);
    let Some(p) = predict(&c, how.pool, cur.len(), runs_var) else {
        return withheld(Unjudgeable::OneMachine, None);
    };
    let z = family_z(FAMILY_ALPHA, how.family);
    let centre = p.centre.exp() - how.offset;
    let reach = z * p.sd;
    let (up, width) = reach_of(&p, z);
    let allowance = Allowance {
        up,
        down: 1.0 - (-reach).exp(),
        centre,
        width,
        machines: p.machines,
        runs: c.runs,
        pooled: p.pooled,
        z,
        family: how.family,
    };
    let must = must_see(how.kind);
    let too_wide = |(up, width): (f64, f64)| up > must && width > how.rule.floor;
    if too_wide((up, width)) {
        // The machines that would narrow it, at the spread seen so far.
        let needed = (p.machines + 1..=50).find(|k| {
            let more = crate::stats::machines::Components { k: *k, ..c.clone() };
            predict(&more, how.pool, cur.len(), runs_var)
                .is_some_and(|q| !too_wide(reach_of(&q, z)))
        });
        return withheld(
            Unjudgeable::TooWide {
                allowance,
                must_see: must,
                floor: how.rule.floor,
                needed,
            },
            Some(allowance.up),
        );
    }
    let mean = logs.iter().sum::<f64>() / logs.len().max(1) as f64;
    let now = mean.exp() - how.offset;
    let (effect, delta) = (relative(now, centre), now - centre);
    let higher = mean - p.centre > reach && effect > how.rule.min_effect && delta > how.rule.floor;
    let lower = p.centre - mean > reach && -effect > how.rule.min_effect && -delta > how.rule.floor;
    let direction = match (higher, lower) {
        (true, _) => Direction::Higher,
        (_, true) => Direction::Lower,
        _ => Direction::Same,
    };
    // The interval shown is against the recorded runs; the verdict, p
    // and the smallest change seen are the prediction's.
    let judged = stats::judge(&band.recorded, cur, false, how.rule).map(|mut j| {
        j.verdict = direction;
        j.p_value = Some(
            crate::stats::machines::upper_tail((mean - p.centre).abs() / p.sd.max(1e-12)) * 2.0,
        );
        j.detectable = Some(allowance.up.max(how.rule.min_effect));
        j
    });
    Decision {
        status: status_of(direction),
        reason: Reason::Judged {
            against: Against::Machines(allowance),
            rule: how.rule,
            unit: how.unit.to_string(),
        },
        judged,
    }
}

/// How far `z` standard deviations of prediction `p` reach above its
/// centre: relative (0.08: +8 %), and in the metric's unit (+ offset).
fn reach_of(p: &crate::stats::machines::Prediction, z: f64) -> (f64, f64) {
    let reach = z * p.sd;
    (reach.exp() - 1.0, (p.centre + reach).exp() - p.centre.exp())
}

/// `now` relative to `was` (0.08: +8 %); unbounded from 0.
fn relative(now: f64, was: f64) -> f64 {
    if was > 0.0 {
        now / was - 1.0
    } else if now > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// A v1 baseline: one value, a hand-set tolerance.
pub fn single_value(m: &Metric, cur: f64) -> Decision {
    let t = &m.tolerance;
    let floor = t.floor.unwrap_or(0.0);
    let (pass, said) = match m.kind {
        MetricKind::Count | MetricKind::Bytes | MetricKind::Exact => {
            let rel = t.relative.unwrap_or(0.0);
            if m.value == 0.0 {
                if cur <= floor {
                    (true, Tolerance::ZeroAsBefore)
                } else {
                    (false, Tolerance::NoneBefore { now: cur })
                }
            } else {
                let change = (cur - m.value) / m.value;
                (
                    change.abs() <= rel,
                    Tolerance::Relative {
                        change,
                        allowed: rel,
                    },
                )
            }
        }
        MetricKind::Latency => {
            let [lo, hi] = t.ratio.unwrap_or([0.0, f64::INFINITY]);
            let ratio = if m.value > 0.0 {
                cur / m.value
            } else {
                f64::INFINITY
            };
            if cur <= floor {
                (true, Tolerance::UnderFloor { floor })
            } else if ratio > hi && cur - m.value <= floor {
                (
                    true,
                    Tolerance::WithinNoise {
                        ratio,
                        delta: cur - m.value,
                        floor,
                    },
                )
            } else if ratio > hi {
                (false, Tolerance::Above { ratio, hi })
            } else if ratio < lo {
                (true, Tolerance::Faster { ratio })
            } else {
                (true, Tolerance::InBand { ratio, lo, hi })
            }
        }
    };
    Decision {
        status: if pass { Status::Ok } else { Status::Regressed },
        reason: Reason::SingleValue {
            said,
            unit: m.unit.clone(),
        },
        judged: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::machines::Pooled;
    use crate::stats::synthetic;

    /// A band of `k` machines whose centres lie `spread` apart in turn,
    /// each with `runs` runs of 1 % noise around 200.
    fn band(k: usize, spread: f64, runs: usize) -> Band {
        let machines: Vec<Vec<f64>> = (0..k)
            .map(|i| {
                let centre = 200.0 * (1.0 + spread * (i as f64 - (k as f64 - 1.0) / 2.0));
                synthetic(centre, 0.01, runs, 100 + i as u64)
            })
            .collect();
        Band {
            recorded: machines[0].clone(),
            machines,
        }
    }

    fn how(pool: Option<Pooled>) -> Judging<'static> {
        Judging {
            kind: Kind::Count,
            rule: Rule::COUNT,
            unit: "requests",
            offset: 1.0,
            pool,
            family: 100,
        }
    }

    #[test]
    fn many_machines_that_agree_judge_tightly_and_catch_a_rise() {
        let b = band(8, 0.002, 5);
        let same = machines(&b, how(None), &synthetic(200.0, 0.01, 3, 7));
        assert_eq!(same.status, Status::Ok, "{same:?}");
        let Reason::Judged {
            against: Against::Machines(a),
            ..
        } = same.reason
        else {
            panic!("{same:?}")
        };
        assert_eq!((a.machines, a.runs), (8, 40));
        assert!(a.up > 0.01 && a.up < 0.10, "{a:?}");
        let risen = machines(&b, how(None), &synthetic(240.0, 0.01, 3, 7));
        assert_eq!(risen.status, Status::Regressed, "{risen:?}");
        let fallen = machines(&b, how(None), &synthetic(160.0, 0.01, 3, 7));
        assert_eq!(fallen.status, Status::Improved, "{fallen:?}");
    }

    #[test]
    fn few_machines_withhold_and_say_how_many_would_do() {
        let d = machines(&band(2, 0.02, 5), how(None), &synthetic(200.0, 0.01, 3, 7));
        let Reason::Withheld {
            why: Unjudgeable::TooWide {
                needed, allowance, ..
            },
            could_see,
        } = d.reason
        else {
            panic!("{d:?}")
        };
        assert_eq!(d.status, Status::Withheld);
        assert!(
            allowance.up > MUST_SEE_COUNT && could_see == Some(allowance.up),
            "{allowance:?}"
        );
        assert!(needed.is_some_and(|k| k > 2), "{needed:?}");
        // One machine: nothing says how far another moves it.
        let one = Band {
            recorded: vec![200.0; 5],
            machines: vec![vec![200.0; 5]],
        };
        let d = machines(&one, how(None), &[200.0]);
        assert!(
            matches!(
                d.reason,
                Reason::Withheld {
                    why: Unjudgeable::OneMachine,
                    ..
                }
            ),
            "{d:?}"
        );
    }

    #[test]
    fn a_floor_wider_than_the_allowance_still_judges() {
        // A small class (8 requests a run, spread wide across machines)
        // with the client floor of 30: judged, the floor deciding.
        let b = Band {
            recorded: vec![8.0, 9.0, 8.0, 10.0],
            machines: vec![
                vec![8.0, 9.0, 8.0, 10.0],
                vec![9.0, 10.0, 9.0],
                vec![8.0, 8.0, 9.0],
            ],
        };
        let floored = Judging {
            rule: Rule {
                floor: 30.0,
                ..Rule::COUNT
            },
            ..how(None)
        };
        assert_eq!(
            machines(&b, floored, &[13.0, 14.0, 12.0]).status,
            Status::Ok
        );
        assert_eq!(
            machines(&b, floored, &[48.0, 45.0, 47.0]).status,
            Status::Regressed
        );
    }

    #[test]
    fn a_member_no_run_made_is_new_from_its_floor() {
        let never = Band {
            recorded: vec![0.0; 5],
            machines: vec![vec![0.0; 5], vec![0.0; 3]],
        };
        assert!(never_made(&never));
        assert_eq!(new_class(&[12.0, 14.0, 13.0]).status, Status::Ok);
        assert_eq!(new_class(&[29.0, 30.0, 29.0]).status, Status::Regressed);
        assert!(!never_made(&band(2, 0.0, 3)));
    }

    /// The stored baselines' sporadic members — made in some runs and
    /// not in others — stay under half of [`NEW_CLASS_FLOOR`]: what chance
    /// has shown of a member appearing.
    #[test]
    fn sporadic_members_stay_under_the_new_class_floor() {
        let root =
            crate::paths::repo_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let mut seen = 0;
        for file in [
            "baselines/local/1.37/smoke.json",
            "baselines/local/1.36/smoke.json",
            "baselines/kind/1.37/smoke.json",
        ] {
            let b: crate::bench::core::baseline::Baseline =
                serde_json::from_str(&std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
            for (mode, metrics) in &b.modes {
                for (name, m) in metrics {
                    // The families whose new members are new behaviour
                    // (a client's top request flips between classes, so
                    // its family is not one).
                    if !(name.starts_with("api_requests_by_client.")
                        || name.starts_with("api_requests_by_client_request."))
                    {
                        continue;
                    }
                    let all: Vec<f64> = m.samples.iter().chain(&m.across).copied().collect();
                    if all.contains(&0.0) && all.iter().any(|x| *x > 0.0) {
                        seen += 1;
                        let most = all.iter().copied().fold(0.0, f64::max);
                        assert!(
                            most * 2.0 < NEW_CLASS_FLOOR,
                            "{file} {mode} {name}: {all:?}"
                        );
                    }
                }
            }
        }
        assert!(seen > 0, "no sporadic member in the stored baselines");
    }

    #[test]
    fn exact_counts_and_the_own_band() {
        assert_eq!(exact(&[12.0, 12.0], &[12.0]).status, Status::Ok);
        assert_eq!(exact(&[12.0, 12.0], &[13.0]).status, Status::Regressed);
        assert_eq!(own_band(&[100.0, 110.0, 120.0]), 120.0 / 110.0 - 1.0);
        assert_eq!(own_band(&[5.0]), 0.0);
        assert_eq!(own_band(&[0.0, 0.0]), 0.0);
    }
}
