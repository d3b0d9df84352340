//! How `--compare` does on a machine no baseline has seen, measured by
//! leaving whole machines out: the calibration's second table
//! (`harness report calibrate`, the book's baselines chapter).
//!
//! For each machine a baseline holds (its recording one and each other
//! machine its band was measured on, loaded runs included:
//! `verdict::band::Machines`), the baseline is judged without it — its
//! runs gone from the band, the pooled spread computed again — and draws
//! of n of its runs are judged as a user's run set would be on a machine
//! unlike the baseline's (`verdict::compare::Context`): every metric of
//! every mode at once, so what is counted is the run set, family-wise:
//! - **false regressions**: draws (run sets of one build) in which any
//!   metric regressed — of the counts and sizes (what `--counts-only`
//!   judges), and of every metric;
//! - **judged, withheld**: metrics per draw given a verdict, and held
//!   back as too wide to see their minimum effect;
//! - **smallest change caught**: the paced counts and sizes judged
//!   against the machines, each shifted by δ of `calibrate::GRID` in the
//!   same draws: the smallest δ called regressed in `calibrate::GOAL` of
//!   them, median over those metrics.
//!
//! Where the recording machine is left out, the drawn runs leave its
//! recorded runs too (what the workload drives is judged against the
//! rest); another machine left out leaves with all its runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::bench::core::baseline::{Baseline, Metric};
use crate::bench::core::calibrate::{GOAL, GRID, SEED, detect, median_detect, pct, smallest};
use crate::bench::core::figures::WALL;
use crate::bench::core::metric::{Drive, MetricKind, Spec, spec_of};
use crate::bench::core::on_cores;
use crate::bench::core::verdict::band::{Machines, without};
use crate::bench::core::verdict::compare::Context;
use crate::bench::core::verdict::model::Status;
use crate::bench::core::verdict::place::Place;
use crate::stats::{self, Prng};

/// Where a run's values are stored: a recorded run, or the j-th run of
/// the band (`across`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    Recorded(usize),
    Across(usize),
}

/// Machine `h`'s runs of `mode` in `b`, in order.
fn runs_of(b: &Baseline, machines: &Machines, h: usize, mode: &str) -> Vec<At> {
    let mut out = Vec::new();
    if h == 0 {
        let n = b
            .modes
            .get(mode)
            .and_then(|ms| ms.get(WALL.key))
            .map_or(0, |w| w.samples.len());
        out.extend((0..n).map(At::Recorded));
    }
    let mut at = 0;
    for (c, m) in b.across.iter().zip(&machines.of_condition) {
        let n = c.runs.get(mode).copied().unwrap_or(0);
        if *m == h {
            out.extend((at..at + n).map(At::Across));
        }
        at += n;
    }
    out
}

fn value(m: &Metric, at: At) -> Option<f64> {
    match at {
        At::Recorded(i) => m.samples.get(i).copied(),
        At::Across(j) => m.across.get(j).copied(),
    }
}

/// What one draw said.
#[derive(Default)]
struct Draw {
    regressed_counts: bool,
    regressed_any: bool,
    judged: usize,
    withheld: usize,
    /// The metrics that regressed ("mode metric").
    regressed: Vec<String>,
    /// Per paced count judged against the machines, the first δ of GRID
    /// it was caught at (None: not within the grid).
    caught: Vec<(String, Option<usize>)>,
}

/// Machine `h`'s runs of every mode of `b`.
fn runs_by_mode<'a>(b: &'a Baseline, machines: &Machines, h: usize) -> BTreeMap<&'a str, Vec<At>> {
    b.modes
        .keys()
        .map(|mode| (mode.as_str(), runs_of(b, machines, h, mode)))
        .collect()
}

/// The context judging `held` (the baseline without a machine), as on a
/// machine unlike it; the recording machine left out of its band where
/// it is the one held out.
fn context<'a>(held: &'a Baseline, specs: &'a [Spec], h: usize) -> Context<'a> {
    Context::new(
        held,
        specs,
        Place {
            unlike: Some("a machine left out of the band".into()),
        },
        (h == 0).then_some(0),
        &|_| true,
    )
}

/// Judge draw `idx` (positions in `runs`, each mode's runs of the machine
/// held out) of `b` against `held` (`b` without that machine) in `cx`.
fn draw(
    b: &Baseline,
    specs: &[Spec],
    runs: &BTreeMap<&str, Vec<At>>,
    (held, cx): (&Baseline, &Context),
    idx: &[usize],
) -> Draw {
    let mut d = Draw::default();
    for (mode, metrics) in &b.modes {
        let Some(at) = runs.get(mode.as_str()) else {
            continue;
        };
        let Some(walls) = metrics.get(WALL.key) else {
            continue;
        };
        for (name, m) in metrics {
            let Some(m_held) = held.modes.get(mode).and_then(|ms| ms.get(name)) else {
                continue;
            };
            let cur: Option<Vec<(f64, f64)>> = idx
                .iter()
                .map(|i| {
                    let a = *at.get(*i)?;
                    Some((value(m, a)?, value(walls, a)?))
                })
                .collect();
            let Some(cur) = cur else {
                continue;
            };
            let v = cx.verdict(mode, name, m_held, Some(&cur));
            let counts = v.kind != MetricKind::Latency;
            match v.status {
                Status::Regressed => {
                    d.regressed_any = true;
                    d.regressed_counts |= counts;
                    d.regressed.push(format!("{mode} {name}"));
                }
                Status::Withheld => d.withheld += 1,
                _ => {}
            }
            if v.judged_here() {
                d.judged += 1;
            }
            let paced = spec_of(specs, name)
                .and_then(|s| s.drive_of(name))
                .is_some_and(|dr| dr != Drive::Workload);
            if counts && paced && v.against_machines() {
                let first = GRID.iter().position(|delta| {
                    let shifted: Vec<(f64, f64)> =
                        cur.iter().map(|(x, w)| (x * (1.0 + delta), *w)).collect();
                    cx.verdict(mode, name, m_held, Some(&shifted)).status == Status::Regressed
                });
                d.caught.push((format!("{mode} {name}"), first));
            }
        }
    }
    d
}

/// One row: a machine left out, at n runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub from: String,
    pub held_out: String,
    /// Machines the band kept.
    pub machines: usize,
    pub rounds: usize,
    pub draws: usize,
    /// Draws with any regression of a count or size; of any metric.
    pub false_counts: f64,
    pub false_any: f64,
    /// Median per draw.
    pub judged: usize,
    pub withheld: usize,
    /// The metric that regressed in most draws, and in how many.
    pub worst: Option<(String, usize)>,
    /// Median over the paced counts judged in most draws of the smallest
    /// δ caught.
    pub detects: Option<f64>,
    pub paced_counts: usize,
}

/// The draws of n of `available` runs: each run once at n = 1, else
/// `trials` seeded draws of n distinct runs.
fn draws_of(available: usize, n: usize, trials: usize, salt: u64) -> Vec<Vec<usize>> {
    if available < n {
        return Vec::new();
    }
    if n == 1 {
        return (0..available.min(trials)).map(|i| vec![i]).collect();
    }
    let mut rng = Prng::new(SEED ^ salt);
    let mut order: Vec<usize> = (0..available).collect();
    (0..trials)
        .map(|_| {
            rng.shuffle(&mut order);
            order[..n].to_vec()
        })
        .collect()
}

/// Every baseline of `baselines` holding two machines or more, each
/// machine left out in turn, at each n of `rounds`. `specs_of` gives the
/// metrics of the workload that recorded each
/// (`bench::recorded::specs_of`).
pub fn calibrate(
    baselines: &[(String, Baseline)],
    specs_of: fn(&Baseline) -> Vec<Spec>,
    rounds: &[usize],
    trials: usize,
) -> Vec<Row> {
    let mut jobs = Vec::new();
    for (f, (from, b)) in baselines.iter().enumerate() {
        let machines = Machines::of(b);
        if machines.len() < 2 {
            continue;
        }
        for h in 0..machines.len() {
            for &n in rounds {
                jobs.push((f, from.clone(), h, n));
            }
        }
    }
    let rows = on_cores::map(&jobs, |(f, from, h, n)| {
        let b = &baselines[*f].1;
        let specs = specs_of(b);
        let machines = Machines::of(b);
        let runs = runs_by_mode(b, &machines, *h);
        let available = runs.values().map(Vec::len).min().unwrap_or(0);
        let salt = (*f as u64) << 16 | (*h as u64) << 8 | *n as u64;
        let picks = draws_of(available, *n, trials, salt);
        if picks.is_empty() {
            return None;
        }
        let draws: Vec<Draw> = if *h == 0 {
            // The drawn recorded runs leave the baseline: one per draw.
            picks
                .iter()
                .map(|idx| {
                    let held = without(b, &machines, 0, idx);
                    let cx = context(&held, &specs, 0);
                    draw(b, &specs, &runs, (&held, &cx), idx)
                })
                .collect()
        } else {
            // Another machine leaves whole: the same for every draw.
            let held = without(b, &machines, *h, &[]);
            let cx = context(&held, &specs, *h);
            picks
                .iter()
                .map(|idx| draw(b, &specs, &runs, (&held, &cx), idx))
                .collect()
        };
        Some(row(from, &machines, *h, *n, &draws))
    });
    rows.into_iter().flatten().collect()
}

fn row(from: &str, machines: &Machines, h: usize, n: usize, draws: &[Draw]) -> Row {
    let share = |f: &dyn Fn(&Draw) -> bool| {
        draws.iter().filter(|d| f(d)).count() as f64 / draws.len().max(1) as f64
    };
    let median = |f: &dyn Fn(&Draw) -> usize| {
        let v: Vec<f64> = draws.iter().map(|d| f(d) as f64).collect();
        stats::median(&v) as usize
    };
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for d in draws {
        for r in &d.regressed {
            *times.entry(r).or_default() += 1;
        }
    }
    let worst = times
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(m, n)| (m.to_string(), *n));
    // Per paced count: how many draws judged it, and caught each δ.
    let mut caught: BTreeMap<&str, (usize, [usize; GRID.len()])> = BTreeMap::new();
    for d in draws {
        for (metric, first) in &d.caught {
            let e = caught.entry(metric).or_insert((0, [0; GRID.len()]));
            e.0 += 1;
            if let Some(i) = first {
                for c in &mut e.1[*i..] {
                    *c += 1;
                }
            }
        }
    }
    let ds: Vec<Option<f64>> = caught
        .values()
        .filter(|(judged, _)| 2 * judged > draws.len())
        .map(|(judged, c)| smallest(c, *judged))
        .collect();
    Row {
        from: from.to_string(),
        held_out: machines.labels[h].clone(),
        machines: machines.len() - 1,
        rounds: n,
        draws: draws.len(),
        false_counts: share(&|d| d.regressed_counts),
        false_any: share(&|d| d.regressed_any),
        judged: median(&|d| d.judged),
        withheld: median(&|d| d.withheld),
        worst,
        detects: median_detect(&ds),
        paced_counts: ds.len(),
    }
}

/// The table, with what it was drawn from; `add_runs` says how runs of
/// other machines are added (the command's words).
pub fn markdown(
    rows: &[Row],
    baselines: &[(String, Baseline)],
    trials: usize,
    add_runs: &str,
) -> String {
    let mut s = String::new();
    let from: Vec<String> = baselines
        .iter()
        .filter_map(|(f, b)| {
            let m = Machines::of(b);
            (m.len() >= 2).then(|| format!("`{f}` ({} machines: {})", m.len(), m.labels.join("; ")))
        })
        .collect();
    if from.is_empty() {
        let _ = writeln!(
            s,
            "No baseline holds runs of two machines or more: a machine cannot be left out (add runs of other machines with {add_runs})."
        );
        return s;
    }
    let _ = writeln!(
        s,
        "From {}. Each machine is left out in turn: the baseline without its runs, and n of them judged as a run set of a machine unlike the baseline's — every metric of every mode at once (each of its runs at n = 1; {trials} seeded draws at larger n). False: run sets of one build with any metric regressed, of the counts and sizes and of every metric (a request-latency p99 is counted here even where `--compare` would leave it unjudged for too few requests). Judged, withheld: metrics per run set (median). Smallest change caught: the median, over the paced counts and sizes judged against the machines in most draws, of the smallest shift (of {}) called regressed in {:.0} % of them.\n",
        from.join(", "),
        GRID.iter()
            .map(|d| format!("{:.0} %", d * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
        GOAL * 100.0
    );
    let _ = writeln!(
        s,
        "| machine left out | machines in the band | n | run sets | false regression: counts | false regression: any metric | judged | withheld | most often regressed | smallest change caught |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.held_out,
            r.machines,
            r.rounds,
            r.draws,
            pct(r.false_counts),
            pct(r.false_any),
            r.judged,
            r.withheld,
            r.worst
                .as_ref()
                .map_or("—".into(), |(m, n)| format!("{m} ({n} of {})", r.draws)),
            if r.paced_counts == 0 {
                "— (none judged)".to_string()
            } else {
                detect(r.detects)
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::baseline::from_result;
    use crate::bench::thor::result::{ModeResult, ThorResult, sample_result};
    use crate::machine::Machine;
    use crate::metrics::usage::{OTHERS, Usage};

    /// sample_result's runs, `n` of them, everyone else's requests at
    /// `others` ± 1 %, on the machine booted as `boot`.
    fn runs(n: usize, others: f64, boot: &str, seed: u64) -> ThorResult {
        let mut r = sample_result(0, 0.0);
        r.machine = Some(Machine {
            cpus: 2,
            cpu_model: "Intel Xeon".into(),
            memory_gib: 24,
            boot: Some(boot.into()),
        });
        let noise = stats::synthetic(others, 0.01, n, seed);
        let base: ModeResult = r.modes["baseline"].result.clone();
        let runs: Vec<ModeResult> = noise
            .iter()
            .map(|o| {
                let mut m = base.clone();
                m.run.window.api_requests_total =
                    m.thor_agent_requests + m.eclccserver_requests + o.round() as u64;
                m.run.window.resources.insert(
                    OTHERS.into(),
                    Usage {
                        cpu_s: 0.5 * m.run.wall_s,
                        ..Default::default()
                    },
                );
                m
            })
            .collect();
        r.modes.clear();
        r.modes.insert(
            "baseline".into(),
            crate::bench::core::result::summarize(runs),
        );
        r
    }

    fn specs(_: &Baseline) -> Vec<Spec> {
        crate::bench::core::result::specs::<ModeResult>()
    }

    #[test]
    fn each_machine_left_out_is_judged_against_the_others() {
        let mut b = from_result(&runs(10, 1000.0, "00000000", 1), "s.yaml");
        for (i, c) in [1005.0, 995.0, 1010.0, 1000.0, 990.0].iter().enumerate() {
            crate::bench::core::across::add(
                &mut b,
                &runs(5, *c, &format!("0000000{}", i + 1), 10 + i as u64),
            )
            .unwrap();
        }
        assert_eq!(Machines::of(&b).len(), 6);
        let rows = calibrate(&[("b.json".into(), b.clone())], specs, &[1, 3], 10);
        // Six machines left out in turn, at two numbers of runs.
        assert_eq!(rows.len(), 12, "{rows:#?}");
        for r in &rows {
            assert_eq!(r.machines, 5, "{r:?}");
            assert_eq!(r.false_any, 0.0, "{r:?}");
            assert!(r.judged > 0, "{r:?}");
        }
        let md = markdown(&rows, &[("b.json".into(), b)], 10, "`x`");
        assert!(
            md.contains("| machine left out |") && md.contains("6 machines"),
            "{md}"
        );
    }

    #[test]
    fn a_machine_far_from_the_rest_is_withheld_or_falsely_regressed_and_said() {
        let mut b = from_result(&runs(10, 1000.0, "00000000", 1), "s.yaml");
        crate::bench::core::across::add(&mut b, &runs(5, 1005.0, "00000001", 2)).unwrap();
        crate::bench::core::across::add(&mut b, &runs(5, 1400.0, "00000002", 3)).unwrap();
        let rows = calibrate(&[("b.json".into(), b)], specs, &[1], 10);
        // Rows in the order of the machines: the recording one, then the
        // two added.
        assert_eq!(rows.len(), 3, "{rows:#?}");
        let far = &rows[2];
        assert!(far.withheld > 0 || far.false_any > 0.0, "{far:?}");
        assert!(markdown(&rows, &[], 10, "`x`").contains("cannot be left out"));
    }
}
