//! The band across machines and loads: what a baseline's metrics did when
//! its scenario ran somewhere other than the recording machine, idle.
//!
//! A stored baseline is judged on the user's machine, which is never the
//! recording one. What the workload alone drives (objects, an identity's
//! writes) is the same anywhere; what its pace drives (polls with
//! backoff, controllers' coalesced requests, status writes, every time)
//! moves with the machine's speed and load; what the clock drives (lease
//! renewals and their watch events) grows with the window
//! (`metric::Drive`). So a baseline keeps, beside its recorded runs
//! (`samples`, one idle machine), runs of the same scenario under other
//! conditions (`across`: CPU hogs beside the run, other machines' shards),
//! each condition described ([`Condition`]). `--compare` on a machine
//! unlike the baseline's, or a busy one, judges a paced or clocked metric
//! against the band those runs measured ([`band`]); it withholds the
//! verdict only where that band is wider than the change the metric must
//! be seen at ([`MUST_SEE_COUNT`], [`MUST_SEE_TIME`]) and than the
//! recorded runs' own band (a metric as blind on the recording machine
//! is judged as it is there), and says the smallest change it could have
//! seen.
//!
//! A clocked metric is compared per second of its window: each run's
//! value divided by that run's `wall_s` (the window's length, recorded
//! beside it in the same order — [`per_second`]).

use std::collections::BTreeMap;

use anyhow::Result;

use crate::bench::core::baseline::{Baseline, Metric};
pub use crate::bench::core::condition::Condition;
use crate::bench::core::figures::WALL;
use crate::bench::core::gate::others_cores;
use crate::bench::core::metric::{Drive, Kind, Views};
use crate::bench::core::result::{Results, Run};
use crate::error::bad_input;
use crate::stats;

/// The widest band (relative to the recorded median) a count or a size
/// may be judged against: a band wider than this could not see a
/// controller whose requests rise 10 %, so such a verdict is withheld.
pub const MUST_SEE_COUNT: f64 = 0.10;
/// The same for times, CPU and latencies: perf-tests' latency band is
/// ×0.66–×1.5, so a band past +50 % says nothing a user would act on.
pub const MUST_SEE_TIME: f64 = 0.50;

/// The widest band a metric of `kind` may be judged against.
pub fn must_see(kind: Kind) -> f64 {
    if kind.machine_bound() {
        MUST_SEE_TIME
    } else {
        MUST_SEE_COUNT
    }
}

/// A metric's values per second of their runs' windows; None where the
/// windows do not line up with the values (other counts, or one of 0 s).
pub fn per_second(values: &[f64], walls: &[f64]) -> Option<Vec<f64>> {
    (values.len() == walls.len() && walls.iter().all(|w| *w > 0.0))
        .then(|| values.iter().zip(walls).map(|(v, w)| v / w).collect())
}

/// What a metric is judged against: the recorded runs (per second where
/// the clock drives it) and how far above and below their median the
/// runs of the band reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Against {
    pub samples: Vec<f64>,
    /// Relative to the recorded median (0 where that median is 0).
    pub up: f64,
    pub down: f64,
    /// The band's reach above the median, in the metric's unit (per
    /// second where clocked).
    pub width: f64,
    /// Whether the band is the one across machines and loads (else the
    /// recorded runs' own).
    pub across: bool,
    /// Runs the band was measured on.
    pub runs: usize,
    /// Whether the values are per second of the window.
    pub per_second: bool,
}

impl Against {
    /// "band +3.1 % from 20 recorded runs" / "band across machines and
    /// loads +8.0 % from 35 runs (20 recorded, 15 under 3 conditions)".
    pub fn text(&self, recorded: usize, conditions: usize) -> String {
        let per = if self.per_second {
            ", per second of the window"
        } else {
            ""
        };
        if self.across {
            format!(
                "band across machines and loads +{:.1} % from {} runs ({recorded} recorded, {} under {conditions} other condition(s)){per}",
                self.up * 100.0,
                self.runs,
                self.runs - recorded
            )
        } else {
            format!(
                "band +{:.1} % from {} recorded runs{per}",
                self.up * 100.0,
                self.runs
            )
        }
    }
}

/// Why a metric could not be judged here, and the band it would have been
/// judged against where there is one (too wide).
#[derive(Debug, Clone, PartialEq)]
pub struct Withheld {
    pub why: String,
    pub against: Option<Against>,
}

/// What metric `m` of `mode` is judged against on a machine `alike` the
/// baseline's (the recorded runs' own band) or not (the band across
/// machines and loads, for what the pace or the clock drives).
pub fn band(
    b: &Baseline,
    mode: &str,
    m: &Metric,
    drive: Drive,
    kind: Kind,
    floor: f64,
    alike: bool,
) -> std::result::Result<Against, Withheld> {
    let walls = b.modes.get(mode).and_then(|ms| ms.get(WALL.key));
    let clocked = matches!(drive, Drive::Clock(_));
    let unaligned = |why: &str| Withheld {
        why: why.into(),
        against: None,
    };
    let recorded = if clocked {
        walls
            .and_then(|w| per_second(&m.samples, &w.samples))
            .ok_or_else(|| unaligned("its recorded runs do not say their windows' lengths, so it cannot be put per second (record the baseline again)"))?
    } else {
        m.samples.clone()
    };
    if alike || matches!(drive, Drive::Workload) {
        return Ok(own(recorded, clocked));
    }
    let (others, floor) = if clocked {
        let others = if m.across.is_empty() {
            Vec::new()
        } else {
            walls
                .and_then(|w| per_second(&m.across, &w.across))
                .ok_or_else(|| {
                    unaligned("its runs across machines do not line up with their windows' lengths")
                })?
        };
        let wall = walls.map_or(1.0, |w| stats::median(&w.samples).max(1e-9));
        (others, floor / wall)
    } else {
        (m.across.clone(), floor)
    };
    across(recorded, &others, kind, floor, clocked)
}

/// The recorded runs' own band: what a metric is judged against on the
/// baseline's kind of machine, quiet, and wherever the workload alone
/// drives it.
pub fn own(recorded: Vec<f64>, per_second: bool) -> Against {
    let s = stats::spread(&recorded);
    let up = if s.median > 0.0 {
        (s.max / s.median - 1.0).max(0.0)
    } else {
        0.0
    };
    Against {
        up,
        // "lower" is judged against the recorded runs themselves, as
        // "higher" against their top.
        down: 0.0,
        width: (s.max - s.median).max(0.0),
        runs: recorded.len(),
        samples: recorded,
        across: false,
        per_second,
    }
}

/// The band of the recorded runs with the runs of other conditions
/// (`others`, in the same unit; `floor` too): Err (withheld) where there
/// are none, or where it is wider than the change a metric of `kind` must
/// be seen at, than its floor and than the recorded runs' own band.
pub fn across(
    recorded: Vec<f64>,
    others: &[f64],
    kind: Kind,
    floor: f64,
    per_second: bool,
) -> std::result::Result<Against, Withheld> {
    if others.is_empty() {
        return Err(Withheld {
            why: "the baseline holds no runs from another machine or under load, so how far this machine alone moves it is not known".into(),
            against: None,
        });
    }
    let median = stats::median(&recorded);
    let own = stats::spread(&recorded).max - median;
    let all: Vec<f64> = recorded.iter().chain(others).copied().collect();
    let s = stats::spread(&all);
    let rel = |x: f64| if median > 0.0 { x / median } else { 0.0 };
    let against = Against {
        up: rel(s.max - median).max(0.0),
        down: rel(median - s.min).max(0.0),
        width: (s.max - median).max(0.0),
        samples: recorded,
        across: true,
        runs: all.len(),
        per_second,
    };
    // A band no wider than the recorded runs' own is no blinder here than
    // on the recording machine: judged, as it is there.
    let allowed = (must_see(kind) * median).max(floor).max(own);
    if against.width <= allowed {
        return Ok(against);
    }
    let seen_at = if allowed == must_see(kind) * median {
        format!("+{:.0} % it must be seen at", must_see(kind) * 100.0)
    } else if allowed == floor {
        format!(
            "noise floor of {} it must be seen at",
            crate::bench::core::charts::fmt_num(floor)
        )
    } else {
        "recorded runs' own band".to_string()
    };
    Err(Withheld {
        why: format!(
            "its band across machines and loads is +{} from {} runs, wider than the {seen_at}",
            if median > 0.0 {
                format!("{:.1} %", against.up * 100.0)
            } else {
                crate::bench::core::charts::fmt_num(against.width)
            },
            against.runs,
        ),
        against: Some(against),
    })
}

/// Add the runs of `r` to baseline `b`'s band across machines and loads:
/// a condition describing them, and each recorded metric's values in
/// them (a family member they lack counts 0 where absent members do).
/// Refused when `r` is not the baseline's scenario and provider, or when
/// it ran on the baseline's machine, quiet — the recorded runs' own
/// condition, which `--record` keeps.
pub fn add<R: Run>(b: &mut Baseline, r: &Results<R>) -> Result<Condition> {
    if r.provider != b.provider {
        return Err(bad_input(format!(
            "the runs are of provider {}, the baseline of {}",
            r.provider, b.provider
        )));
    }
    let mut cores: Vec<f64> = Vec::new();
    for (mode, s) in &r.modes {
        for run in s.runs() {
            cores.push(others_cores(run.figures()).ok_or_else(|| {
                bad_input(format!(
                    "a {mode} run did not measure how busy the rest of the machine was: it cannot describe its condition"
                ))
            })?);
        }
    }
    let spread = stats::spread(&cores);
    let alike = match (&b.machine, &r.machine) {
        (Some(then), Some(now)) => now.alike(then).is_none(),
        _ => false,
    };
    if alike && spread.max <= crate::bench::core::gate::QUIET_CORES {
        return Err(bad_input(format!(
            "the runs ran on the baseline's kind of machine ({}) and it was quiet (the rest of it at most {:.2} cores): that is the recorded runs' own condition — load the machine (--load N) or run them on another",
            r.machine
                .as_ref()
                .map_or(String::new(), ToString::to_string),
            spread.max
        )));
    }
    let declared = R::metrics();
    let mut runs = BTreeMap::new();
    for (mode, metrics) in b.modes.iter_mut() {
        let Some(s) = r.modes.get(mode) else {
            continue;
        };
        let kept: Vec<&crate::bench::core::metric::Metric<R>> = declared
            .iter()
            .filter(|d| d.spec.views.has(Views::KEPT))
            .collect();
        for (name, m) in metrics.iter_mut() {
            let Some(d) = kept.iter().find(|d| d.spec.names(name)) else {
                continue;
            };
            let vals: Vec<f64> = s
                .runs()
                .iter()
                .filter_map(|run| d.value(run, name))
                .collect();
            m.across.extend(vals);
        }
        runs.insert(mode.clone(), s.runs().len());
    }
    if runs.is_empty() {
        return Err(bad_input(format!(
            "the runs share no mode with the baseline (it has {})",
            b.modes.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let c = Condition {
        machine: r.machine.clone(),
        others_cores_median: spread.median,
        others_cores_max: spread.max,
        runs,
        started: r.started.clone(),
        harness_version: r.harness_version.clone(),
    };
    b.across.push(c.clone());
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::baseline::from_result;
    use crate::bench::thor::result::sample_result;
    use crate::machine::Machine;
    use crate::metrics::usage::{OTHERS, Usage};

    fn loaded(cores: f64) -> crate::bench::thor::result::ThorResult {
        let mut r = sample_result(300, 2000.0);
        r.machine = Some(Machine {
            cpus: 2,
            cpu_model: "AMD EPYC".into(),
            memory_gib: 24,
        });
        for s in r.modes.values_mut() {
            for run in std::iter::once(&mut s.result).chain(s.repeats.iter_mut()) {
                let wall = run.run.wall_s;
                run.run.window.resources.insert(
                    OTHERS.into(),
                    Usage {
                        cpu_s: cores * wall,
                        ..Default::default()
                    },
                );
            }
        }
        r
    }

    #[test]
    fn a_clocked_count_is_put_per_second_of_its_window() {
        assert_eq!(
            per_second(&[10.0, 22.0], &[10.0, 11.0]),
            Some(vec![1.0, 2.0])
        );
        assert_eq!(per_second(&[10.0], &[10.0, 11.0]), None);
        assert_eq!(per_second(&[10.0], &[0.0]), None);
    }

    #[test]
    fn the_recorded_condition_is_not_added_to_the_band_and_a_loaded_one_is() {
        let mut b = from_result(&loaded(0.01), "s.yaml");
        let e = add(&mut b, &loaded(0.02)).unwrap_err();
        assert!(
            format!("{e}").contains("recorded runs' own condition"),
            "{e}"
        );
        let c = add(&mut b, &loaded(1.5)).unwrap();
        assert!((c.others_cores_median - 1.5).abs() < 1e-9, "{c:?}");
        assert_eq!(b.across.len(), 1);
        let m = &b.modes["baseline"]["api_requests_total"];
        assert_eq!(m.across.len(), c.runs["baseline"], "{m:?}");
    }
}
