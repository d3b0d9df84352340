//! What a metric is judged against off its recording machine: its stored
//! runs grouped by the machine that ran them (a machine, not a condition:
//! runs beside a load on one machine are that machine's), so that a
//! machine can be left out whole (`Band::without`: the calibration's
//! question), and the proportion of machine-to-machine to run-to-run
//! spread pooled over a baseline's paced metrics ([`Pools`]).
//!
//! Which machine a set of runs ran on: the boot it recorded
//! (`machine::Machine::boot`); runs recorded before machines kept one are
//! told apart by their CPU model and the day they started.

use crate::bench::core::baseline::Baseline;
use crate::bench::core::condition::Condition;
use crate::bench::core::metric::{Drive, Kind, MetricKind, Spec, spec_of};
use crate::bench::core::verdict::scale::Scale;
use crate::machine::Machine;
use crate::stats;
use crate::stats::machines::{Components, Pooled, components, pooled};

/// The machines a baseline holds: the recording one first, then every
/// other in the order its first runs were added.
#[derive(Debug, Clone, PartialEq)]
pub struct Machines {
    /// What tells each apart.
    pub keys: Vec<String>,
    /// What a reader is told of each ("2 CPUs (AMD EPYC), 24 GiB, 2026-11-29").
    pub labels: Vec<String>,
    /// For each of the baseline's conditions (`across`), its machine.
    pub of_condition: Vec<usize>,
}

/// What tells machine `m` (which started runs at RFC 3339 `started`)
/// apart from others.
fn key(m: Option<&Machine>, started: &str) -> String {
    let day = started.get(..10).unwrap_or(started);
    match m {
        Some(m) => match &m.boot {
            Some(boot) => format!("boot {boot}"),
            None => format!("{} on {day}", m.cpu_model),
        },
        None => format!("an unknown machine on {day}"),
    }
}

fn label(m: Option<&Machine>, started: &str, speed: Option<f64>) -> String {
    let day = started.get(..10).unwrap_or(started);
    let what = m.map_or("an unknown machine".to_string(), ToString::to_string);
    match speed {
        Some(s) => format!("{what}, probe up to {s:.0} Msteps/s, {day}"),
        None => format!("{what}, {day}"),
    }
}

impl Machines {
    pub fn of(b: &Baseline) -> Machines {
        let mut keys = vec![key(b.machine.as_ref(), &b.recorded)];
        // Each machine's first run set (machine, day) and its fastest
        // speed probe: the least loaded of its run sets.
        let mut firsts = vec![(b.machine.as_ref(), b.recorded.as_str())];
        let mut fastest = vec![b.speed];
        let mut of_condition = Vec::new();
        for c in &b.across {
            let k = key(c.machine.as_ref(), &c.started);
            let at = match keys.iter().position(|x| *x == k) {
                Some(at) => at,
                None => {
                    keys.push(k);
                    firsts.push((c.machine.as_ref(), c.started.as_str()));
                    fastest.push(None);
                    keys.len() - 1
                }
            };
            fastest[at] = match (fastest[at], c.speed) {
                (Some(a), Some(s)) => Some(a.max(s)),
                (a, s) => a.or(s),
            };
            of_condition.push(at);
        }
        let labels = firsts
            .iter()
            .zip(&fastest)
            .map(|((m, started), speed)| label(*m, started, *speed))
            .collect();
        Machines {
            keys,
            labels,
            of_condition,
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The machine condition `c` ran on, where it is one of these.
    pub fn of_run_set(&self, c: &Condition) -> Option<usize> {
        let k = key(c.machine.as_ref(), &c.started);
        self.keys.iter().position(|x| *x == k)
    }
}

/// `b` without machine `h`: another machine's conditions and their
/// values gone; for the recording machine, the recorded runs `drawn`
/// (indices) gone.
pub fn without(b: &Baseline, machines: &Machines, h: usize, drawn: &[usize]) -> Baseline {
    let mut out = b.clone();
    if h == 0 {
        for metrics in out.modes.values_mut() {
            for m in metrics.values_mut() {
                m.samples = m
                    .samples
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !drawn.contains(i))
                    .map(|(_, x)| *x)
                    .collect();
                m.value = stats::median(&m.samples);
            }
        }
        return out;
    }
    for (mode, metrics) in out.modes.iter_mut() {
        // The band's runs of this mode that are not machine h's.
        let mut keep = Vec::new();
        let mut at = 0;
        for (c, m) in b.across.iter().zip(&machines.of_condition) {
            let n = c.runs.get(mode).copied().unwrap_or(0);
            if *m != h {
                keep.extend(at..at + n);
            }
            at += n;
        }
        for m in metrics.values_mut() {
            if m.across.len() == at {
                m.across = keep.iter().map(|j| m.across[*j]).collect();
            }
        }
    }
    out.across = b
        .across
        .iter()
        .zip(&machines.of_condition)
        .filter(|(_, m)| **m != h)
        .map(|(c, _)| c.clone())
        .collect();
    out
}

/// `b` without the machine `boot` ran on ("boot 3f2a9c1e"): its runs
/// gone from the band; None where `b` holds no runs of it, or it is the
/// recording machine.
pub fn without_boot(b: &Baseline, boot: &str) -> Option<Baseline> {
    let machines = Machines::of(b);
    let h = machines
        .keys
        .iter()
        .position(|k| *k == format!("boot {boot}"))?;
    (h > 0).then(|| without(b, &machines, h, &[]))
}

/// One metric's stored runs: the recorded ones, and every machine's
/// (the recording machine's first, its recorded runs among them), in one
/// scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub recorded: Vec<f64>,
    pub machines: Vec<Vec<f64>>,
}

impl Band {
    /// The band of a metric of `mode` whose stored values (in one scale)
    /// are `recorded` and `across` (in the order of the baseline's
    /// conditions); None where `across` does not line up with the
    /// conditions' runs of `mode`.
    pub fn of(
        machines: &Machines,
        b: &Baseline,
        mode: &str,
        recorded: Vec<f64>,
        across: &[f64],
    ) -> Option<Band> {
        let mut groups = vec![Vec::new(); machines.len()];
        groups[0] = recorded.clone();
        let mut at = 0;
        for (c, machine) in b.across.iter().zip(&machines.of_condition) {
            let n = c.runs.get(mode).copied().unwrap_or(0);
            groups[*machine].extend_from_slice(across.get(at..at + n)?);
            at += n;
        }
        (at == across.len()).then_some(Band {
            recorded,
            machines: groups,
        })
    }

    /// The same band without machine `i`'s runs (the recorded runs stay
    /// as the row's reference).
    pub fn without(&self, i: usize) -> Band {
        let mut machines = self.machines.clone();
        if i < machines.len() {
            machines[i].clear();
        }
        Band {
            recorded: self.recorded.clone(),
            machines,
        }
    }

    /// Machines with runs.
    pub fn machines(&self) -> usize {
        self.machines.iter().filter(|m| !m.is_empty()).count()
    }

    pub fn runs(&self) -> usize {
        self.machines.iter().map(Vec::len).sum()
    }

    /// Its components on the log scale, each value raised by `offset` (so
    /// that a 0 has a log).
    pub fn components(&self, offset: f64) -> Option<Components> {
        let logs: Vec<Vec<f64>> = self
            .machines
            .iter()
            .map(|g| g.iter().map(|x| (x + offset).ln()).collect())
            .collect();
        components(&logs)
    }
}

/// What is added to each value before its log: one of the smallest step
/// a count takes (a request, per second of the recorded windows' median
/// where clocked), a tenth of a time's floor.
pub fn offset(kind: Kind, floor: f64, per_unit: f64) -> f64 {
    if kind.machine_bound() {
        (floor * 0.1).max(1e-6)
    } else {
        per_unit
    }
}

/// Which pool a metric's machine-to-machine spread is pooled in: counts
/// and sizes apart from what measures the machine as much as the code.
fn pool_of(kind: Kind) -> usize {
    usize::from(kind.machine_bound())
}

/// The pooled proportion of machine-to-machine to run-to-run spread of a
/// baseline's paced and clocked metrics, counts apart from times.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pools {
    pools: [Option<Pooled>; 2],
}

impl Pools {
    pub fn of_kind(&self, kind: Kind) -> Option<Pooled> {
        self.pools[pool_of(kind)]
    }
}

/// Every metric of `b` judged against the machines: paced or clocked,
/// not a fixed count, with recorded runs; (mode, name, spec, drive).
pub fn judged_across<'a>(
    b: &'a Baseline,
    specs: &'a [Spec],
) -> impl Iterator<Item = (&'a str, &'a str, &'a Spec, Drive)> + 'a {
    b.modes.iter().flat_map(move |(mode, metrics)| {
        metrics.iter().filter_map(move |(name, m)| {
            let spec = spec_of(specs, name)?;
            let drive = spec.drive_of(name)?;
            (drive != Drive::Workload && m.kind != MetricKind::Exact && !m.samples.is_empty())
                .then_some((mode.as_str(), name.as_str(), spec, drive))
        })
    })
}

/// The pools of baseline `b` (its metrics declared by `specs`), with
/// machine `without` left out where given.
pub fn pools(b: &Baseline, specs: &[Spec], machines: &Machines, without: Option<usize>) -> Pools {
    let mut by_pool: [Vec<Components>; 2] = [Vec::new(), Vec::new()];
    for (mode, name, spec, drive) in judged_across(b, specs) {
        let m = &b.modes[mode][name];
        let scale = Scale::of(drive);
        let Ok((recorded, across)) = scale.stored(b, mode, m) else {
            continue;
        };
        let Some(band) = Band::of(machines, b, mode, recorded, &across) else {
            continue;
        };
        let band = match without {
            Some(i) => band.without(i),
            None => band,
        };
        let per_unit = scale.floor(1.0, b, mode);
        if let Some(c) = band.components(offset(spec.kind, spec.floor, per_unit)) {
            by_pool[pool_of(spec.kind)].push(c);
        }
    }
    Pools {
        pools: [pooled(&by_pool[0]), pooled(&by_pool[1])],
    }
}
