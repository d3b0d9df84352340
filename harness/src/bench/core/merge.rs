//! The shards of one run set joined into the Result one run would give
//! (`harness report merge`): the same scenario, settings and seed, each
//! shard its own slice of the rounds (`rounds::Shard`); each mode's runs
//! in the seed's round order, summarised and judged again by the one rule
//! — so the merged figures are those the same runs give judged together,
//! figure for figure. Anything else is refused, naming what differs. A
//! round no shard brought is listed in the Result and its report, never
//! dropped silently. Each shard's machine is kept; machine-bound figures
//! are compared with a baseline only where every shard ran on a machine
//! alike (the merged Result has a machine only when all are one kind).

use anyhow::Result;

use crate::bench::core::result::{MergedShard, Results, Run, ShardOf, summarize};
use crate::bench::core::shard::Shard;
use crate::error::bad_input;

/// One shard read back, and where from.
pub struct Part<R: Run> {
    pub from: String,
    pub result: Results<R>,
}

/// "1.37" of "1.37.1".
fn minor(v: &str) -> &str {
    v.rsplit_once('.')
        .filter(|_| v.matches('.').count() >= 2)
        .map_or(v, |(m, _)| m)
}

/// What `b` ran differently from `a`, by field.
fn differences<R: Run>(a: &Results<R>, b: &Results<R>) -> Vec<String> {
    let mut d = Vec::new();
    let mut same = |what: &str, x: String, y: String| {
        if x != y {
            d.push(format!("{what}: {x} against {y}"));
        }
    };
    same("schema", a.schema.clone(), b.schema.clone());
    same("scenario", a.scenario.clone(), b.scenario.clone());
    same(
        "scenario file",
        a.scenario_file.clone(),
        b.scenario_file.clone(),
    );
    same("provider", a.provider.clone(), b.provider.clone());
    same(
        "Kubernetes minor",
        minor(&a.k8s_version).into(),
        minor(&b.k8s_version).into(),
    );
    same("shape", format!("{:?}", a.shape), format!("{:?}", b.shape));
    same("model", format!("{:?}", a.model), format!("{:?}", b.model));
    same(
        "modes",
        format!("{:?}", a.modes.keys().collect::<Vec<_>>()),
        format!("{:?}", b.modes.keys().collect::<Vec<_>>()),
    );
    let (sa, sb) = (a.statistics.as_ref(), b.statistics.as_ref());
    same(
        "seed",
        format!("{:?}", sa.map(|s| s.seed)),
        format!("{:?}", sb.map(|s| s.seed)),
    );
    same(
        "reference mode",
        format!("{:?}", sa.map(|s| &s.reference)),
        format!("{:?}", sb.map(|s| &s.reference)),
    );
    let of = |s: Option<&crate::bench::core::result::Statistics>| {
        s.and_then(|s| s.shard.as_ref())
            .map(|sh| (sh.n, sh.of))
            .map_or("none".into(), |(n, of)| {
                format!("{n} shards of {of} rounds")
            })
    };
    same("run set", of(sa), of(sb));
    same(
        "capabilities",
        format!("{:?}", a.capabilities.as_ref().map(|c| c.comparable())),
        format!("{:?}", b.capabilities.as_ref().map(|c| c.comparable())),
    );
    d
}

/// Join `parts` (the shards of one run set, any order) into one Result.
pub fn merge<R: Run>(mut parts: Vec<Part<R>>) -> Result<Results<R>> {
    let Some(first) = parts.first() else {
        return Err(bad_input("report merge: no shard given"));
    };
    shard_of(first)?;
    same_run_set(first, &parts[1..])?;
    let shards = checked_shards(&parts)?;
    parts.sort_by_key(|p| {
        p.result
            .statistics
            .as_ref()
            .and_then(|s| s.shard.as_ref())
            .map_or(0, |sh| sh.first)
    });
    let lost = lost_rounds(&shards);
    let mut merged = joined(&parts);
    merged.statistics = Some(joined_statistics(&merged, &parts, lost));
    merged.judge_modes();
    Ok(merged)
}

/// The shard a part says it is, or an error when it ran without --shard.
fn shard_of<R: Run>(p: &Part<R>) -> Result<ShardOf> {
    p.result
        .statistics
        .as_ref()
        .and_then(|s| s.shard.clone())
        .ok_or_else(|| {
            bad_input(format!(
                "report merge: {}: not a shard (it ran without --shard)",
                p.from
            ))
        })
}

/// Refuses any of `rest` that ran differently from `first`, naming what
/// differs.
fn same_run_set<R: Run>(first: &Part<R>, rest: &[Part<R>]) -> Result<()> {
    for p in rest {
        let d = differences(&first.result, &p.result);
        if !d.is_empty() {
            return Err(bad_input(format!(
                "report merge: {} is not a shard of the run set of {}: {}",
                p.from,
                first.from,
                d.join("; ")
            )));
        }
    }
    Ok(())
}

/// Each part's shard (k, shard, where from), checked to be its whole
/// slice of the set's rounds and given once.
fn checked_shards<R: Run>(parts: &[Part<R>]) -> Result<Vec<(u32, ShardOf, String)>> {
    let mut shards: Vec<(u32, ShardOf, String)> = Vec::new();
    for p in parts {
        let sh = shard_of(p)?;
        let rounds = p.result.statistics.as_ref().map_or(0, |s| s.rounds.len());
        // Checked when read (`Statistics::check`); checked again here, as
        // a merge of results built in memory reads no file.
        let fits = sh.k >= 1
            && sh.k <= sh.n
            && sh.of <= crate::bench::core::result::MAX_SET_ROUNDS
            && sh.first.checked_add(rounds).is_some_and(|end| end <= sh.of);
        if !fits {
            return Err(bad_input(format!(
                "report merge: {}: statistics.shard {}/{} (first {}, of {}) with {rounds} rounds is not a shard of a run set",
                p.from, sh.k, sh.n, sh.first, sh.of
            )));
        }
        let want = Shard { k: sh.k, n: sh.n }.rounds(sh.of);
        if want != (sh.first..sh.first + rounds) {
            return Err(bad_input(format!(
                "report merge: {}: shard {}/{} ran rounds {}–{}, its slice of {} rounds is {}–{} (a shard cut short: run it again)",
                p.from,
                sh.k,
                sh.n,
                sh.first + 1,
                sh.first + rounds,
                sh.of,
                want.start + 1,
                want.end
            )));
        }
        if let Some(twin) = shards.iter().find(|(k, _, _)| *k == sh.k) {
            return Err(bad_input(format!(
                "report merge: shard {}/{} given twice ({} and {})",
                sh.k, sh.n, twin.2, p.from
            )));
        }
        shards.push((sh.k, sh, p.from.clone()));
    }
    Ok(shards)
}

/// The set's rounds no shard brought.
fn lost_rounds(shards: &[(u32, ShardOf, String)]) -> Vec<usize> {
    let of = shards[0].1.of;
    let covered: std::collections::BTreeSet<usize> = shards
        .iter()
        .flat_map(|(_, sh, _)| Shard { k: sh.k, n: sh.n }.rounds(sh.of))
        .collect();
    (0..of).filter(|r| !covered.contains(r)).collect()
}

/// The first part with every part's machine (if all alike), start, peak
/// RSS, timelines and runs joined in, each mode summarised again.
fn joined<R: Run>(parts: &[Part<R>]) -> Results<R> {
    let machines: Vec<_> = parts.iter().map(|p| p.result.machine.clone()).collect();
    let mut merged = parts[0].result.clone();
    merged.machine = match machines.iter().all(|m| *m == machines[0]) {
        true => machines[0].clone(),
        false => None,
    };
    merged.started = parts
        .iter()
        .map(|p| p.result.started.clone())
        .min()
        .unwrap_or_default();
    merged.harness_peak_rss_kib = parts
        .iter()
        .map(|p| p.result.harness_peak_rss_kib)
        .max()
        .unwrap_or(0);
    merged.timelines = parts
        .iter()
        .flat_map(|p| p.result.timelines.iter().cloned())
        .collect();
    for (mode, sum) in merged.modes.iter_mut() {
        let runs: Vec<R> = parts
            .iter()
            .flat_map(|p| p.result.modes[mode].runs().iter().cloned())
            .collect();
        *sum = summarize(runs);
    }
    merged
}

/// The merged statistics: every part's rounds in order, no shard, the
/// `lost` rounds and each merged shard.
fn joined_statistics<R: Run>(
    merged: &Results<R>,
    parts: &[Part<R>],
    lost: Vec<usize>,
) -> crate::bench::core::result::Statistics {
    let mut st = merged.statistics.clone().expect("a shard has statistics");
    st.rounds = parts
        .iter()
        .flat_map(|p| p.result.statistics.iter().flat_map(|s| s.rounds.clone()))
        .collect();
    st.shard = None;
    st.lost_rounds = lost;
    st.merged = parts
        .iter()
        .map(|p| {
            let sh = shard_of(p).expect("checked above");
            MergedShard::of(
                &sh,
                p.result.started.clone(),
                p.result.machine.clone(),
                p.from.clone(),
            )
        })
        .collect();
    st
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::result::{ModeSummary, Statistics};
    use crate::bench::thor::result::{ModeResult, ThorResult, sample_result};
    use crate::stats::synthetic;

    /// A 4-round run set of two modes (jobset ×1.15 baseline's requests),
    /// and the same run set as the two shards of it `--shard 1/2` and
    /// `--shard 2/2` with the seed make (their runs, their rounds).
    fn run_set() -> (ThorResult, Vec<Part<ModeResult>>) {
        let modes = ["baseline", "jobset"];
        let order = crate::bench::core::rounds::plan(&modes, 4, 9, None);
        let run = |mode: &str, requests: f64| {
            let mut m = sample_result(0, 0.0).modes["baseline"].result.clone();
            m.run.mode = mode.into();
            m.run.window.api_requests_total = requests.round() as u64;
            m
        };
        let b = synthetic(2600.0, 0.03, 4, 11);
        let j = synthetic(2600.0 * 1.15, 0.03, 4, 12);
        let set = |rounds: std::ops::Range<usize>, shard: Option<ShardOf>| {
            let mut r = sample_result(0, 0.0);
            r.modes.clear();
            let take = |v: &[f64], mode: &str| -> Vec<ModeResult> {
                rounds.clone().map(|i| run(mode, v[i])).collect()
            };
            r.modes
                .insert("baseline".into(), summarize(take(&b, "baseline")));
            r.modes
                .insert("jobset".into(), summarize(take(&j, "jobset")));
            r.statistics = Some(Statistics {
                shard,
                ..Statistics::new(
                    9,
                    rounds
                        .clone()
                        .map(|i| order[i].1.iter().map(|m| m.to_string()).collect())
                        .collect(),
                    "baseline".into(),
                )
            });
            r.judge_modes();
            r
        };
        let whole = set(0..4, None);
        let shard = |k: u32, first: usize| ShardOf {
            k,
            n: 2,
            first,
            of: 4,
        };
        let parts = vec![
            Part {
                from: "s2".into(),
                result: set(2..4, Some(shard(2, 2))),
            },
            Part {
                from: "s1".into(),
                result: set(0..2, Some(shard(1, 0))),
            },
        ];
        (whole, parts)
    }

    #[test]
    fn merged_shards_are_the_run_set_judged_together_figure_for_figure() {
        let (whole, parts) = run_set();
        let merged = merge(parts).unwrap();
        for (mode, sum) in &whole.modes {
            let m: &ModeSummary<ModeResult> = &merged.modes[mode];
            assert_eq!(m.repeats, sum.repeats, "{mode}: the runs, in round order");
            assert_eq!(m.result, sum.result, "{mode}: the typical run");
            assert_eq!(m.stats, sum.stats, "{mode}");
            assert_eq!(m.spread_pct, sum.spread_pct, "{mode}");
            assert_eq!(m.vs_reference, sum.vs_reference, "{mode}");
        }
        let st = merged.statistics.as_ref().unwrap();
        assert_eq!(st.rounds, whole.statistics.as_ref().unwrap().rounds);
        assert!(st.shard.is_none() && st.lost_rounds.is_empty());
        assert_eq!(st.merged.iter().map(|m| m.k).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(st.merged[1].rounds, [2, 3]);
    }

    #[test]
    fn a_missing_shard_is_said_and_a_stranger_refused() {
        let (_, mut parts) = run_set();
        parts.remove(0);
        let merged = merge(parts).unwrap();
        assert_eq!(merged.statistics.as_ref().unwrap().lost_rounds, [2, 3]);
        let (_, mut parts) = run_set();
        parts[1].result.statistics.as_mut().unwrap().seed = 10;
        let e = format!("{:#}", merge(parts).unwrap_err());
        assert!(e.contains("seed: Some(9) against Some(10)"), "{e}");
        let (_, mut parts) = run_set();
        parts[0].result.scenario = "medium".into();
        let e = format!("{:#}", merge(parts).unwrap_err());
        assert!(e.contains("scenario: medium against smoke"), "{e}");
        let (_, mut parts) = run_set();
        parts[0].result.statistics.as_mut().unwrap().shard = None;
        let e = format!("{:#}", merge(parts).unwrap_err());
        assert!(e.contains("not a shard"), "{e}");
        let (_, mut parts) = run_set();
        let twin = Part {
            from: "s1-again".into(),
            result: parts[1].result.clone(),
        };
        parts.push(twin);
        let e = format!("{:#}", merge(parts).unwrap_err());
        assert!(e.contains("given twice"), "{e}");
        let (_, mut parts) = run_set();
        parts[0].result.statistics.as_mut().unwrap().rounds.pop();
        let e = format!("{:#}", merge(parts).unwrap_err());
        assert!(e.contains("cut short"), "{e}");
    }
}
