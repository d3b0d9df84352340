//! Runs of a baseline's scenario on other machines and under loads,
//! added to it (`--record-band`): what a stored baseline is judged
//! against off its recording machine (`bench::core::verdict`). A
//! baseline keeps, beside its recorded runs (`samples`, one machine),
//! each added run set's values of every metric (`across`, in the order of
//! its `across` conditions, each describing its machine — which boot, its
//! speed probe — how busy the rest of it was, its runs per mode).

use std::collections::BTreeMap;

use anyhow::Result;

use crate::bench::core::baseline::Baseline;
pub use crate::bench::core::condition::Condition;
use crate::bench::core::metric::Views;
use crate::bench::core::result::{Results, Run};
use crate::bench::core::verdict::place::{QUIET_CORES, others_cores};
use crate::error::bad_input;
use crate::stats;

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
    let same = match (&b.machine, &r.machine) {
        (Some(then), Some(now)) => now.same_boot(then),
        _ => false,
    };
    if same && spread.max <= QUIET_CORES {
        return Err(bad_input(format!(
            "the runs ran on the baseline's own machine ({}, the same boot) and it was quiet (the rest of it at most {:.2} cores): that is the recorded runs' own condition — load the machine (--load N) or run them on another",
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
        speed: r.speed(),
    };
    b.across.push(c.clone());
    Ok(c)
}

/// Each mode's requests by what drives them (`figures::BY_DRIVER`),
/// derived from its stored request classes where the baseline lacks
/// them — its recorded runs' and its band's, run by run: a band measured
/// before the metric was declared keeps every class of every run, so the
/// sum is the one its runs would have given. Returns the metrics derived.
pub fn derive_by_driver(b: &mut Baseline) -> usize {
    use crate::bench::core::figures::{BY_CLIENT_REQUEST, BY_DRIVER, by_driver};
    let mut derived = 0;
    for metrics in b.modes.values_mut() {
        let classes: Vec<(String, crate::bench::core::baseline::Metric)> = metrics
            .iter()
            .filter_map(|(name, m)| {
                Some((BY_CLIENT_REQUEST.member_of(name)?.to_string(), m.clone()))
            })
            .collect();
        let Some((_, first)) = classes.first() else {
            continue;
        };
        let (runs, band) = (first.samples.len(), first.across.len());
        if classes
            .iter()
            .any(|(_, m)| m.samples.len() != runs || m.across.len() != band)
        {
            continue;
        }
        let at = |i: usize, from: fn(&crate::bench::core::baseline::Metric) -> &Vec<f64>| {
            by_driver(classes.iter().map(|(c, m)| (c.as_str(), from(m)[i])))
        };
        let samples: Vec<BTreeMap<String, f64>> =
            (0..runs).map(|i| at(i, |m| &m.samples)).collect();
        let across: Vec<BTreeMap<String, f64>> = (0..band).map(|i| at(i, |m| &m.across)).collect();
        for drive in ["workload", "pace", "clock"] {
            let name = BY_DRIVER.member(drive);
            let had = metrics.get(&name);
            let need_samples = had.is_none_or(|m| m.samples.len() != runs);
            let need_across = had.is_none_or(|m| m.across.len() != band);
            if !(need_samples || need_across) {
                continue;
            }
            let of = |maps: &[BTreeMap<String, f64>]| -> Vec<f64> {
                maps.iter()
                    .map(|m| m.get(drive).copied().unwrap_or(0.0))
                    .collect()
            };
            let kept = if need_samples {
                of(&samples)
            } else {
                had.map(|m| m.samples.clone()).unwrap_or_default()
            };
            let m = crate::bench::core::baseline::Metric {
                value: stats::median(&kept),
                unit: first.unit.clone(),
                kind: first.kind,
                tolerance: Default::default(),
                samples: kept,
                across: of(&across),
            };
            metrics.insert(name, m);
            derived += 1;
        }
    }
    derived
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
            boot: Some("0a1b2c3d".into()),
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
