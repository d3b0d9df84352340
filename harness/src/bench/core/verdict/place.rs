//! Where a run set is judged: on the baseline's own machine, quiet —
//! every metric against its recorded runs — or elsewhere, where what the
//! pace or the clock drives is judged against the machines the baseline
//! holds (`judge::machines`).
//!
//! One machine: the same boot (`machine::Machine::boot`), or the same
//! class (CPUs, CPU model, memory) at the speed the baseline recorded
//! (the speed probe's median within [`SPEED_SLACK`]); a model's name
//! alone does not make two machines one — machines of one model ran the
//! smoke at different speeds. Its disk must be alike too (etcd's WAL
//! fsync, `disk::differs`), and the rest of the machine quiet while each
//! run was measured: at most [`QUIET_CORES`] (`metrics::usage::OTHERS`).

use crate::bench::core::baseline::Baseline;
use crate::bench::core::disk;
use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::{Results, Run};
use crate::metrics::usage::OTHERS;

/// The most CPU (in cores, averaged over a run) the rest of the machine
/// may use while a run judged as on the baseline's machine is measured:
/// an eighth of the 2-core machine that recorded the baselines. What it
/// used there, idle and in CI, is in the book (baselines.md, "Latency in
/// CI"); a `nice -n 19` build beside a run takes most of a core.
pub const QUIET_CORES: f64 = 0.25;

/// How far two speed probes' medians may differ for two machines of one
/// class to count as one (the probe's own spread on one idle machine is
/// in the book: baselines.md, "Which machine").
pub const SPEED_SLACK: f64 = 0.10;

/// Where a run set is judged against its baseline.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Place {
    /// None: the baseline's machine, quiet. Some(why not).
    pub unlike: Option<String>,
}

impl Place {
    /// The baseline's machine, quiet.
    pub const ALIKE: Place = Place { unlike: None };

    pub fn alike(&self) -> bool {
        self.unlike.is_none()
    }
}

/// The rest of the machine's CPU while `m` ran, in cores; None when not
/// measured (results from before it was, or no /proc).
pub fn others_cores(m: &RunFigures) -> Option<f64> {
    let u = m.window.resources.get(OTHERS)?;
    (m.wall_s > 0.0).then(|| u.cpu_s / m.wall_s)
}

/// Ok(why every metric is judged against its recorded runs) or Err(why
/// not).
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
    let one = if this.same_boot(recorded) && this.alike(recorded).is_none() {
        format!("the baseline's own machine ({this}, the same boot)")
    } else {
        if let Some(why) = this.alike(recorded) {
            return Err(format!("another machine than the baseline's: {why}"));
        }
        match (b.speed, r.speed()) {
            (Some(then), Some(now)) if (now / then - 1.0).abs() <= SPEED_SLACK => format!(
                "a machine of the baseline's class at its speed ({this}; probe {now:.0} against {then:.0} Msteps/s)"
            ),
            (Some(then), Some(now)) => {
                return Err(format!(
                    "another machine of the baseline's class ({this}): the speed probe gave {now:.0} Msteps/s where the baseline's runs gave {then:.0}, more than {:.0} % apart",
                    SPEED_SLACK * 100.0
                ));
            }
            (None, _) => {
                return Err(format!(
                    "the baseline does not say how fast its machine was (no speed probe when it was recorded), so a machine of its class ({this}) is not known to be it"
                ));
            }
            (Some(_), None) => {
                return Err("the run did not measure its machine's speed".into());
            }
        }
    };
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
            "the run's machine is {one}, {disk}, and was quiet (the rest of it used at most {cores:.2} cores; the limit is {QUIET_CORES})"
        )),
        None => Err("the run measured no mode".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::baseline::from_result;
    use crate::bench::thor::result::sample_result;
    use crate::machine::Machine;
    use crate::metrics::percentiles::Percentiles;
    use crate::metrics::usage::{OTHERS, Usage};

    fn machine(cpus: u32) -> Option<Machine> {
        Some(Machine {
            cpus,
            cpu_model: "AMD EPYC".into(),
            memory_gib: 24,
            boot: Some("0a1b2c3d".into()),
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

    /// `r` with every run's speed probe at `msteps`.
    fn at_speed(
        mut r: crate::bench::thor::result::ThorResult,
        msteps: f64,
    ) -> crate::bench::thor::result::ThorResult {
        for s in r.modes.values_mut() {
            for run in std::iter::once(&mut s.result).chain(s.repeats.iter_mut()) {
                run.run.window.speed = Some(crate::machine::Speed {
                    msteps_per_s: msteps,
                    version: probe::VERSION,
                });
            }
        }
        r
    }

    fn booted(boot: &str) -> Option<Machine> {
        machine(2).map(|m| Machine {
            boot: Some(boot.into()),
            ..m
        })
    }

    #[test]
    fn judged_on_the_baseline_s_own_machine_quiet() {
        let base = from_result(&run(machine(2), Some(0.01)), "s.yaml");
        let why = machine_gate(&base, &run(machine(2), Some(0.02))).unwrap();
        assert!(
            why.contains("2 CPUs (AMD EPYC), 24 GiB")
                && why.contains("the same boot")
                && why.contains("0.02 cores"),
            "{why}"
        );
    }

    #[test]
    fn another_boot_of_the_class_is_the_machine_only_at_its_speed() {
        let base = from_result(&at_speed(run(machine(2), Some(0.01)), 50.0), "s.yaml");
        assert_eq!(base.speed, Some(50.0));
        let why = machine_gate(&base, &at_speed(run(booted("ffff0000"), Some(0.0)), 53.0)).unwrap();
        assert!(
            why.contains("at its speed") && why.contains("53 against 50"),
            "{why}"
        );
        let e =
            machine_gate(&base, &at_speed(run(booted("ffff0000"), Some(0.0)), 40.0)).unwrap_err();
        assert!(
            e.contains("40 Msteps/s where the baseline's runs gave 50"),
            "{e}"
        );
        let e = machine_gate(&base, &run(booted("ffff0000"), Some(0.0))).unwrap_err();
        assert!(e.contains("did not measure its machine's speed"), "{e}");
        // A baseline without a speed: its class alone is not its machine.
        let old = from_result(&run(machine(2), Some(0.01)), "s.yaml");
        let e =
            machine_gate(&old, &at_speed(run(booted("ffff0000"), Some(0.0)), 50.0)).unwrap_err();
        assert!(e.contains("does not say how fast"), "{e}");
    }

    #[test]
    fn not_judged_on_another_machine_a_busy_one_or_without_the_facts() {
        let base = from_result(&run(machine(2), Some(0.01)), "s.yaml");
        let e = machine_gate(&base, &run(machine(4), Some(0.0))).unwrap_err();
        assert!(
            e.contains("another machine than the baseline's") && e.contains("4 CPUs"),
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
