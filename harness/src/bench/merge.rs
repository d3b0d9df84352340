//! `harness report merge`: the shards of one run set, read back whatever
//! their benchmark (by schema), joined into the result one run would give
//! (`bench::core::merge`) — a `measure` run set's workload runs beside
//! its figures, in round order; Thor's, gang's and cron's by the core's
//! merge alone.

use std::path::Path;

use anyhow::Result;

use crate::bench::core::merge::{Part, merge};
use crate::bench::measure::result::MeasureResult;
use crate::bench::saved::{self, Saved};
use crate::error::bad_input;

/// The shards in `dirs`, merged.
pub fn merge_dirs(dirs: &[&Path]) -> Result<Saved> {
    let saved: Vec<(String, Saved)> = dirs
        .iter()
        .map(|d| Ok((d.display().to_string(), saved::read(d, "report merge")?)))
        .collect::<Result<_>>()?;
    let kinds: Vec<&str> = saved
        .iter()
        .map(|(_, s)| match s {
            Saved::Thor(_) => "bench thor",
            Saved::Measure(_) => "measure",
            Saved::Gang(_) => "bench gang",
            Saved::Cron(_) => "bench cron",
        })
        .collect();
    if kinds.iter().any(|k| *k != kinds[0]) {
        return Err(bad_input(format!(
            "report merge: the shards are of different benchmarks ({})",
            kinds.join(", ")
        )));
    }
    let mut thor = Vec::new();
    let mut measured: Vec<(String, MeasureResult)> = Vec::new();
    let (mut gang, mut cron) = (Vec::new(), Vec::new());
    for (from, s) in saved {
        match s {
            Saved::Thor(r) => thor.push(Part { from, result: *r }),
            Saved::Measure(m) => measured.push((from, *m)),
            Saved::Gang(g) => gang.push(Part { from, result: *g }),
            Saved::Cron(c) => cron.push(Part { from, result: *c }),
        }
    }
    if !gang.is_empty() {
        return Ok(Saved::Gang(Box::new(merge(gang)?)));
    }
    if !cron.is_empty() {
        return Ok(Saved::Cron(Box::new(merge(cron)?)));
    }
    if !thor.is_empty() {
        return Ok(Saved::Thor(Box::new(merge(thor)?)));
    }
    let first = measured[0].1.clone();
    for (from, m) in &measured[1..] {
        if m.name != first.name || m.variants != first.variants {
            return Err(bad_input(format!(
                "report merge: {from} measured {} ({:?}), {} measured {} ({:?})",
                m.name, m.variants, measured[0].0, first.name, first.variants
            )));
        }
    }
    let mut runs: Vec<_> = measured.iter().flat_map(|(_, m)| m.runs.clone()).collect();
    runs.sort_by_key(|r| r.round);
    let mut kueue_runner: Vec<_> = measured
        .iter()
        .flat_map(|(_, m)| m.kueue_runner.clone())
        .collect();
    kueue_runner.sort_by_key(|r| r.round);
    let figures = merge(
        measured
            .into_iter()
            .map(|(from, m)| Part {
                from,
                result: m.figures,
            })
            .collect(),
    )?;
    Ok(Saved::Measure(Box::new(MeasureResult {
        runs,
        kueue_runner,
        figures,
        ..first
    })))
}
