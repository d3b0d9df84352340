//! Whether a run's machine-bound figures can be judged against a
//! baseline: latencies, wall times, CPU seconds and the counts that
//! follow the machine's timing (a declaration's `time_bound`). They measure the
//! machine as much as the code, so they are judged only when the run's
//! machine is alike the one that recorded the baseline
//! (`crate::machine::Machine::alike`), so is its disk (`disk::differs`),
//! and it was quiet while each run was
//! measured: the rest of the machine (`metrics::usage::OTHERS`) used at
//! most [`QUIET_CORES`]. Otherwise they are shown, not judged, and the
//! report says why; counts and sizes are judged on any machine.
//!
//! A single run is judged against the recorded runs with one run's luck:
//! judged alone against the other nine, one of ten recorded smoke rounds
//! called a mode's mutating p99 higher (×2.0, 249 ms against a median of
//! 124 ms), and in `.ci/run` one run's etcd bytes of a mode came out
//! ×1.037, past a band of +1.3 % (docs: baselines.md). So a
//! one-round gate (the `cargo test` smoke) confirms: the modes with a
//! regression of a metric with a band (every kind but the exact counts)
//! run once more ([`to_confirm`]), and such a regression stands only when
//! the new run has it too ([`confirmed`]). An exact count (one the
//! scenario fixes: a `Kind::Fixed` metric, `Run::IN_RANGE` in words)
//! stands at once.

use std::collections::BTreeSet;

use crate::bench::core::baseline::Baseline;
use crate::bench::core::disk;
use crate::bench::core::figures::RunFigures;
use crate::bench::core::metric::MetricKind;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::bench::core::verdict::{Status, Verdict};
use crate::metrics::usage::OTHERS;

/// The most CPU (in cores, averaged over a run) the rest of the machine
/// may use while a judged run is measured: an eighth of the 2-core
/// machine that recorded the baselines. What it used there, idle and in
/// CI, is in the book (baselines.md, "Latency in CI"); a `nice -n 19`
/// build beside a run takes most of a core — the false alarm `fa7`.
pub const QUIET_CORES: f64 = 0.25;

/// The rest of the machine's CPU while `m` ran, in cores; None when not
/// measured (results from before it was, or no /proc).
pub fn others_cores(m: &RunFigures) -> Option<f64> {
    let u = m.window.resources.get(OTHERS)?;
    (m.wall_s > 0.0).then(|| u.cpu_s / m.wall_s)
}

/// A regression a second run must confirm: any metric judged by a band
/// from the recorded runs' spread (not an exact count).
fn confirmable(v: &Verdict) -> bool {
    !v.pass && v.kind != MetricKind::Exact
}

/// The modes with a regression to confirm: what a confirming run runs
/// again.
pub fn to_confirm(verdicts: &[Verdict]) -> BTreeSet<String> {
    verdicts
        .iter()
        .filter(|v| confirmable(v))
        .map(|v| v.mode.clone())
        .collect()
}

/// `first`'s verdicts, with each regression to confirm kept only when
/// the confirming run (`again`, its modes run once more and compared with
/// the same baseline) regressed on the same mode and metric; one that did
/// not is "ok", its note saying so. Everything else is `first`'s.
pub fn confirmed(first: Vec<Verdict>, again: &[Verdict]) -> Vec<Verdict> {
    first
        .into_iter()
        .map(|mut v| {
            if !confirmable(&v) {
                return v;
            }
            let second = again
                .iter()
                .find(|a| a.mode == v.mode && a.metric == v.metric);
            match second {
                Some(a) if !a.pass => {
                    v.note = format!("{}; confirmed by a second run: {}", v.note, a.note);
                }
                _ => {
                    let said = second.map_or("not measured".to_string(), |a| a.note.clone());
                    v.note = format!(
                        "not confirmed (a second run: {said}); the first run alone: {}",
                        v.note
                    );
                    v.pass = true;
                    v.status = Status::Ok;
                }
            }
            v
        })
        .collect()
}

/// Ok(why they are judged) or Err(why not).
pub fn machine_gate<R: Run>(b: &Baseline, r: &Results<R>) -> Result<String, String> {
    let Some(recorded) = &b.machine else {
        return Err(
            "the baseline does not say which machine recorded it (record it again with --record)"
                .into(),
        );
    };
    let Some(this) = &r.machine else {
        return Err("the run does not say which machine measured it".into());
    };
    if let Some(why) = this.alike(recorded) {
        return Err(format!(
            "measured on another kind of machine than the baseline: {why}"
        ));
    }
    let disk = match (&b.disk, disk::of(r)) {
        (Some(then), Some(now)) => match disk::differs(&now, then) {
            Some(why) => return Err(format!("the disk is not the baseline's: {why}")),
            None => format!("its disk alike ({now})"),
        },
        (Some(_), None) => {
            return Err("the run did not measure its disk (etcd's WAL fsync latency)".into());
        }
        (None, _) => "its disk not compared (the baseline does not record it)".into(),
    };
    let mut busiest: Option<(&str, f64)> = None;
    for (mode, s) in &r.modes {
        for run in s.runs() {
            let Some(cores) = others_cores(run.figures()) else {
                return Err(format!(
                    "a {mode} run did not measure how busy the rest of the machine was"
                ));
            };
            if busiest.is_none_or(|(_, c)| cores > c) {
                busiest = Some((mode, cores));
            }
        }
    }
    match busiest {
        Some((mode, cores)) if cores > QUIET_CORES => Err(format!(
            "the machine was busy: the rest of it used {cores:.2} cores while a {mode} run was measured (quiet: at most {QUIET_CORES})"
        )),
        Some((_, cores)) => Ok(format!(
            "the run's machine is the baseline's kind ({this}), {disk}, and was quiet (the rest of it used at most {cores:.2} cores; the limit is {QUIET_CORES})"
        )),
        None => Err("the run measured no mode".into()),
    }
}

#[cfg(test)]
mod tests {
    use crate::bench::core::baseline::from_result;
    use crate::bench::core::gate::{QUIET_CORES, confirmed, machine_gate, to_confirm};
    use crate::bench::core::metric::MetricKind;
    use crate::bench::core::verdict::{Status, Verdict};
    use crate::bench::thor::result::sample_result;
    use crate::machine::Machine;
    use crate::metrics::percentiles::Percentiles;
    use crate::metrics::usage::{OTHERS, Usage};

    fn machine(cpus: u32) -> Option<Machine> {
        Some(Machine {
            cpus,
            cpu_model: "AMD EPYC".into(),
            memory_gib: 24,
        })
    }

    /// sample_result's one mode, with the rest of the machine using
    /// `others` cores over its wall time, on a disk whose WAL fsync p99
    /// is 7 ms.
    fn run(m: Option<Machine>, others: Option<f64>) -> crate::bench::thor::result::ThorResult {
        on_disk(m, others, Some(7.0))
    }

    fn on_disk(
        m: Option<Machine>,
        others: Option<f64>,
        fsync_p99: Option<f64>,
    ) -> crate::bench::thor::result::ThorResult {
        let mut r = sample_result(300, 2000.0);
        r.machine = m;
        for s in r.modes.values_mut() {
            for run in std::iter::once(&mut s.result).chain(s.repeats.iter_mut()) {
                let run = &mut run.run;
                run.window.etcd.wal_fsync_ms = fsync_p99.map(|p99| Percentiles {
                    p50: 0.6,
                    p90: 2.0,
                    p99,
                    max: 64.0,
                });
                if let Some(cores) = others {
                    let u = Usage {
                        cpu_s: cores * run.wall_s,
                        ..Default::default()
                    };
                    run.window.resources.insert(OTHERS.into(), u);
                }
            }
        }
        r
    }

    fn verdict(mode: &str, metric: &str, kind: MetricKind, pass: bool) -> Verdict {
        Verdict {
            mode: mode.into(),
            metric: metric.into(),
            kind,
            baseline: 100.0,
            current: Some(if pass { 100.0 } else { 200.0 }),
            pass,
            status: if pass { Status::Ok } else { Status::Regressed },
            judged: None,
            note: if pass { "same" } else { "higher" }.into(),
        }
    }

    #[test]
    fn a_regression_with_a_band_stands_only_when_a_second_run_has_it() {
        let p99 = "api_latency_ms.mutating.p99";
        let first = vec![
            verdict("jobset-gang", p99, MetricKind::Latency, false),
            verdict("jobset", p99, MetricKind::Latency, false),
            verdict("jobset-gang", "etcd.put_bytes", MetricKind::Bytes, false),
            verdict("baseline", "api_requests_total", MetricKind::Count, false),
            verdict("baseline", "pods_created", MetricKind::Exact, true),
            verdict("kueue", "objects_created.jobs", MetricKind::Exact, false),
        ];
        let modes: Vec<String> = to_confirm(&first).into_iter().collect();
        // An exact count stands at once: its mode is not run again for it.
        assert_eq!(modes, ["baseline", "jobset", "jobset-gang"]);
        let again = vec![
            verdict("jobset-gang", p99, MetricKind::Latency, true),
            verdict("jobset", p99, MetricKind::Latency, false),
            verdict("jobset-gang", "etcd.put_bytes", MetricKind::Bytes, false),
        ];
        let v = confirmed(first, &again);
        assert!(
            v[0].pass && v[0].note.starts_with("not confirmed (a second run: same)"),
            "{:?}",
            v[0]
        );
        assert!(!v[1].pass && v[1].note.contains("confirmed by a second run: higher"));
        assert!(!v[2].pass && v[2].note.contains("confirmed by a second run"));
        assert!(
            v[3].pass && v[3].note.contains("not measured"),
            "{:?}",
            v[3]
        );
        assert!(v[4].pass);
        assert!(!v[5].pass && v[5].note == "higher", "exact counts stand");
    }

    #[test]
    fn judged_on_a_quiet_machine_alike() {
        let base = from_result(&run(machine(2), Some(0.01)), "s.yaml");
        let why = machine_gate(&base, &run(machine(2), Some(0.02))).unwrap();
        assert!(
            why.contains("2 CPUs (AMD EPYC), 24 GiB") && why.contains("0.02 cores"),
            "{why}"
        );
    }

    #[test]
    fn not_judged_on_another_machine_a_busy_one_or_without_the_facts() {
        let base = from_result(&run(machine(2), Some(0.01)), "s.yaml");
        let e = machine_gate(&base, &run(machine(4), Some(0.0))).unwrap_err();
        assert!(
            e.contains("another kind of machine") && e.contains("4 CPUs"),
            "{e}"
        );
        let e = machine_gate(&base, &run(machine(2), Some(QUIET_CORES + 0.05))).unwrap_err();
        assert!(e.contains("busy") && e.contains("0.30 cores"), "{e}");
        let e = machine_gate(&base, &run(machine(2), None)).unwrap_err();
        assert!(e.contains("did not measure how busy"), "{e}");
        let e = machine_gate(&base, &run(None, Some(0.0))).unwrap_err();
        assert!(e.contains("does not say which machine measured"), "{e}");
        let old = from_result(&run(None, Some(0.0)), "s.yaml");
        let e = machine_gate(&old, &run(machine(2), Some(0.0))).unwrap_err();
        assert!(e.contains("record it again"), "{e}");
    }

    #[test]
    fn not_judged_on_another_disk_and_said_when_the_baseline_has_none() {
        let base = from_result(&run(machine(2), Some(0.01)), "s.yaml");
        assert_eq!(base.disk.as_ref().unwrap().wal_fsync_p99_ms, 7.0);
        let why = machine_gate(&base, &on_disk(machine(2), Some(0.0), Some(12.0))).unwrap();
        assert!(why.contains("its disk alike"), "{why}");
        let e = machine_gate(&base, &on_disk(machine(2), Some(0.0), Some(40.0))).unwrap_err();
        assert!(
            e.contains("the disk is not the baseline's") && e.contains("p99 40.0 ms"),
            "{e}"
        );
        let e = machine_gate(&base, &on_disk(machine(2), Some(0.0), None)).unwrap_err();
        assert!(e.contains("did not measure its disk"), "{e}");
        let mut old = base.clone();
        old.disk = None;
        let why = machine_gate(&old, &on_disk(machine(2), Some(0.0), Some(40.0))).unwrap();
        assert!(why.contains("does not record it"), "{why}");
    }
}
