//! The shape `harness bench gang` saved before it was a workload of the
//! core (`harness.gang-latency/v1`, gang-latency.json: every release's run
//! of every round in one list, with its own spreads over the rounds),
//! read back as the core's Result so it renders, merges and re-judges as
//! today's does: each release a mode, its runs in round order, judged
//! against the oldest release by today's rule. Its spreads are not read:
//! they are derived again from the runs.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::{MergedShard, ShardOf, Statistics};
use crate::bench::gang::result::{GangResult, GangRun, GangShape, added_up};
use crate::k8s::K8sRelease;
use crate::workload::gang::latency::LatencyReport;

pub const SCHEMA: &str = "harness.gang-latency/v1";

/// One release's run of one round, as v1 kept it.
#[derive(Debug, Clone, Deserialize)]
struct Release {
    k8s_version: String,
    minor: String,
    pool_nodes: u32,
    node_pods: u32,
    #[serde(default)]
    control_plane: BTreeMap<String, String>,
    #[serde(default)]
    round: u32,
    #[serde(flatten)]
    report: LatencyReport,
}

#[derive(Debug, Clone, Deserialize)]
struct V1 {
    harness_version: String,
    started: String,
    releases: Vec<Release>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    shard: Option<ShardOf>,
    #[serde(default)]
    merged: Vec<MergedShard>,
    #[serde(default)]
    lost_rounds: Vec<usize>,
}

/// `text`, a v1 gang-latency.json, as today's Result; bad input where
/// its releases are not versions this harness knows.
pub fn read(text: &str) -> anyhow::Result<GangResult> {
    let v: V1 = serde_json::from_str(text)?;
    let mut versions: Vec<(K8sRelease, String)> = Vec::new();
    for r in &v.releases {
        let k = K8sRelease::parse(&r.minor)?;
        if !versions.iter().any(|(_, x)| *x == r.k8s_version) {
            versions.push((k, r.k8s_version.clone()));
        }
    }
    versions.sort();
    let mut runs = v.releases.clone();
    runs.sort_by_key(|r| r.round);
    let mut rounds: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for r in &runs {
        rounds
            .entry(r.round)
            .or_default()
            .push(r.k8s_version.clone());
    }
    let first = runs.first();
    let shape = GangShape {
        gang_sizes: first.map_or(Vec::new(), |r| {
            r.report.sizes.iter().map(|s| s.size).collect()
        }),
        gangs: first
            .and_then(|r| r.report.sizes.first())
            .map_or(0, |s| s.repeats),
        pool_nodes: first.map_or(0, |r| r.pool_nodes),
        node_pods: first.map_or(0, |r| r.node_pods),
    };
    let statistics = Statistics {
        shard: v.shard,
        merged: v.merged,
        lost_rounds: v.lost_rounds,
        ..Statistics::new(
            v.seed.unwrap_or(0),
            rounds.into_values().collect(),
            versions.first().map_or(String::new(), |(_, v)| v.clone()),
        )
    };
    let k8s_version = versions
        .iter()
        .map(|(_, v)| v.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut result = GangResult {
        harness_version: v.harness_version,
        started: v.started,
        model: first.map_or(BTreeMap::new(), |r| r.control_plane.clone()),
        machine: None,
        ..GangResult::begin("gang-latency", "local", k8s_version, shape, statistics)
    };
    for r in runs {
        let run = GangRun {
            figures: RunFigures {
                mode: r.k8s_version.clone(),
                window: added_up(&r.report.sizes),
                ..RunFigures::default()
            },
            minor: r.minor,
            control_plane: r.control_plane,
            sizes: r.report.sizes,
        };
        result.add_run(&r.k8s_version, run);
    }
    result.harness_peak_rss_kib = 0;
    Ok(result)
}
