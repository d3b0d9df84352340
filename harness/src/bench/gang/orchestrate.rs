//! The rounds of `harness bench gang`: its options checked before any
//! cluster, every release once per round on a fresh cluster (the pool
//! added, each size's gangs placed), the Result filled run by run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::{ShardOf, Statistics};
use crate::bench::core::rounds::Progress;
use crate::bench::core::shard::Shard;
use crate::bench::gang::result::{GangResult, GangRun, GangShape, added_up};
use crate::cluster::profile::ControlPlane;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::timeline::Timeline;
use crate::progress::Step;
use crate::tools::Component;
use crate::workload::gang::case::{Benchmark, Pool};
use crate::workload::gang::latency::{self, LatencyReport};
use crate::workload::gang::trial::Trial;

pub struct GangBenchOptions {
    pub sizes: Vec<u32>,
    /// Gangs of each size placed on one cluster (`--gangs`).
    pub repeats: u32,
    /// Rounds of fresh clusters (`--repeat`).
    pub rounds: u32,
    /// Seed of the rounds' order (default: the clock).
    pub seed: Option<u64>,
    /// `--shard K/N`: run only this slice of the rounds (needs `seed`).
    pub shard: Option<Shard>,
    pub releases: Vec<K8sRelease>,
    pub pool_nodes: u32,
    pub node_pods: u32,
    pub timeout: Duration,
    pub bins: BTreeMap<Component, PathBuf>,
    /// Name prefix of the clusters (one per release).
    pub cluster_prefix: String,
    /// Rate and inflight limits of the clusters' control planes.
    pub control_plane: ControlPlane,
}

impl GangBenchOptions {
    /// Every check before a cluster starts: sizes that are gangs and fit
    /// the pool, repeats, a release list.
    pub fn check(&self) -> Result<()> {
        for (flag, n) in [
            ("--nodes", u64::from(self.pool_nodes)),
            ("--node-pods", u64::from(self.node_pods)),
            ("--timeout", self.timeout.as_secs()),
        ] {
            if n == 0 {
                return Err(bad_input(format!("{flag} 0: must be at least 1")));
            }
        }
        if self.sizes.is_empty() || self.sizes.iter().any(|s| *s < 2) {
            return Err(bad_input(
                "--sizes: gang sizes must be ≥ 2 (a gang of one is not a gang)",
            ));
        }
        let room = u64::from(self.pool_nodes) * u64::from(self.node_pods);
        if let Some(s) = self.sizes.iter().find(|s| u64::from(**s) > room) {
            return Err(bad_input(format!(
                "--sizes: a gang of {s} does not fit {} node(s) × {} pods ({room}); raise --nodes or --node-pods",
                self.pool_nodes, self.node_pods
            )));
        }
        if self.repeats == 0 {
            return Err(bad_input("--gangs must be ≥ 1"));
        }
        crate::bench::core::rounds::check_repeat(self.rounds)?;
        if self.releases.is_empty() {
            return Err(bad_input("no Kubernetes version to run"));
        }
        if let Some(sh) = self.shard {
            sh.check(self.rounds, self.seed)?;
        }
        Ok(())
    }
}

/// Run the sizes on a fresh cluster per release and round; the Result so
/// far saved into `out` after each run.
pub async fn bench_gang(opts: &GangBenchOptions, out: Option<&Path>) -> Result<GangResult> {
    opts.check()?;
    let seed = opts.seed.unwrap_or_else(crate::stats::clock_seed);
    let order = crate::bench::core::rounds::plan(&opts.releases, opts.rounds, seed, opts.shard);
    let mine: Vec<Vec<String>> = order
        .iter()
        .map(|(_, r)| r.iter().map(|k| k.version.to_string()).collect())
        .collect();
    crate::bench::core::rounds::announce(&mine, seed);
    let statistics = Statistics {
        shard: opts.shard.map(|sh| ShardOf {
            k: sh.k,
            n: sh.n,
            first: order.first().map_or(0, |r| r.0),
            of: opts.rounds as usize,
        }),
        ..Statistics::new(seed, mine, opts.releases[0].version.to_string())
    };
    let shape = GangShape {
        gang_sizes: opts.sizes.clone(),
        gangs: opts.repeats,
        pool_nodes: opts.pool_nodes,
        node_pods: opts.node_pods,
    };
    let versions: Vec<&str> = opts.releases.iter().map(|r| r.version).collect();
    let result = GangResult {
        model: opts.control_plane.describe(),
        ..GangResult::begin(
            "gang-latency",
            "local",
            versions.join(", "),
            shape,
            statistics,
        )
    };
    let mut progress = Progress::new(result, out);
    for (round, in_order) in &order {
        for release in in_order {
            let run = one_release(opts, *release, *round).await?;
            progress.add(release.version, *round, run, Timeline::default())?;
        }
    }
    Ok(progress.result)
}

/// One release's run of one round on a fresh cluster, down after it.
async fn one_release(
    opts: &GangBenchOptions,
    release: K8sRelease,
    round: usize,
) -> Result<GangRun> {
    let name = format!(
        "{}-{}-{round}",
        opts.cluster_prefix,
        release.minor.replace('.', "")
    );
    let cluster = lifecycle::up(&UpOptions {
        spec: ClusterSpec {
            feature_gates: release.job_gang_feature_gates(),
            runtime_config: release.gang_runtime_config(),
            // The gangs get a pool of their own.
            nodes: NodeSpec {
                count: 0,
                ..NodeSpec::default()
            },
            control_plane: opts.control_plane.clone(),
            ..ClusterSpec::new(&name, release.minor)
        },
        bins: opts.bins.clone(),
        timeout: Duration::from_secs(180),
    })
    .await?;
    let step = Step::start(format!(
        "gangs of {:?} × {} on Kubernetes {}{}",
        opts.sizes,
        opts.repeats,
        release.version,
        match opts.rounds {
            1 => String::new(),
            n => format!(", round {}/{n}", round + 1),
        }
    ));
    let r = measure(&cluster, release, opts).await;
    let down = cluster.down(false);
    let report = r.with_context(|| format!("gang benchmark on cluster {name}"))?;
    down?;
    step.done("measured");
    Ok(GangRun {
        figures: RunFigures {
            mode: release.version.to_string(),
            window: added_up(&report.sizes),
            ..RunFigures::default()
        },
        minor: release.minor.to_string(),
        control_plane: opts.control_plane.describe(),
        sizes: report.sizes,
    })
}

async fn measure(
    cluster: &impl Cluster,
    release: K8sRelease,
    opts: &GangBenchOptions,
) -> Result<LatencyReport> {
    let mut trial = Trial::start(cluster, release, "gang-latency").await?;
    let bench = Benchmark {
        sizes: opts.sizes.clone(),
        repeats: opts.repeats,
        timeout: opts.timeout.as_secs_f64(),
    };
    let r = async {
        trial
            .add_nodes(Pool {
                nodes: opts.pool_nodes,
                pods: opts.node_pods,
            })
            .await?;
        latency::run(&mut trial, &bench).await
    }
    .await;
    let cleanup = trial.cleanup().await;
    let r = r?;
    cleanup?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(sizes: Vec<u32>, nodes: u32, pods: u32) -> GangBenchOptions {
        GangBenchOptions {
            sizes,
            repeats: 1,
            rounds: 1,
            seed: None,
            shard: None,
            releases: vec![K8sRelease::default_release()],
            pool_nodes: nodes,
            node_pods: pods,
            timeout: Duration::from_secs(1),
            bins: Default::default(),
            cluster_prefix: "t".into(),
            control_plane: Default::default(),
        }
    }

    #[test]
    fn options_are_checked_before_any_cluster() {
        opts(vec![8, 64], 1, 64).check().unwrap();
        for bad in [
            opts(vec![1], 6, 110),
            opts(vec![], 6, 110),
            opts(vec![700], 6, 110),
        ] {
            let e = bad.check().unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{e}");
        }
        assert!(
            opts(vec![700], 6, 110)
                .check()
                .unwrap_err()
                .to_string()
                .contains("660")
        );
    }
}
