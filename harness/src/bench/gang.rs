//! `harness bench gang`: gang placement latency on a fresh local cluster per
//! Kubernetes minor (that release's gang feature set and Job integration),
//! gangs of each size placed one after another on a pool of fake nodes.
//! Prints and writes the latency table; not part of `cargo test` (the gang
//! suite keeps a gang-of-8 smoke).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cluster::profile::ControlPlane;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::progress::Step;
use crate::tools::Component;
use crate::workload::gang::case::{Benchmark, Pool};
use crate::workload::gang::latency::{self, LatencyReport};
use crate::workload::gang::trial::Trial;

pub const SCHEMA: &str = "harness.gang-latency/v1";

pub struct GangBenchOptions {
    pub sizes: Vec<u32>,
    pub repeats: u32,
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
            return Err(bad_input("--repeats must be ≥ 1"));
        }
        if self.releases.is_empty() {
            return Err(bad_input("no Kubernetes version to run"));
        }
        Ok(())
    }
}

/// One release's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseLatency {
    pub k8s_version: String,
    pub minor: String,
    pub pool_nodes: u32,
    pub node_pods: u32,
    /// The control plane's profile and resolved limits.
    #[serde(default)]
    pub control_plane: BTreeMap<String, String>,
    #[serde(flatten)]
    pub report: LatencyReport,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GangBenchResult {
    pub schema: String,
    pub harness_version: String,
    pub started: String,
    pub releases: Vec<ReleaseLatency>,
}

/// Run the sizes on a fresh cluster per release.
pub async fn bench_gang(opts: &GangBenchOptions) -> Result<GangBenchResult> {
    opts.check()?;
    let started = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut releases = Vec::new();
    for release in &opts.releases {
        let name = format!("{}-{}", opts.cluster_prefix, release.minor.replace('.', ""));
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
            "gangs of {:?} × {} on Kubernetes {}",
            opts.sizes, opts.repeats, release.version
        ));
        let r = measure(&cluster, *release, opts).await;
        let down = cluster.down(false);
        let report = r.with_context(|| format!("gang benchmark on cluster {name}"))?;
        down?;
        step.done("measured");
        releases.push(ReleaseLatency {
            k8s_version: release.version.to_string(),
            minor: release.minor.to_string(),
            pool_nodes: opts.pool_nodes,
            node_pods: opts.node_pods,
            control_plane: opts.control_plane.describe(),
            report,
        });
    }
    Ok(GangBenchResult {
        schema: SCHEMA.into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started,
        releases,
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

/// The latency table of every release.
pub fn markdown(r: &GangBenchResult) -> String {
    let rows: Vec<(&str, &latency::SizeFigures)> = r
        .releases
        .iter()
        .flat_map(|rel| {
            rel.report
                .sizes
                .iter()
                .map(move |s| (rel.k8s_version.as_str(), s))
        })
        .collect();
    let pools: Vec<String> = r
        .releases
        .iter()
        .map(|rel| {
            let profile = rel
                .control_plane
                .get("profile")
                .map_or("default", String::as_str);
            format!(
                "{}: {} nodes × {} pods, {profile} control plane",
                rel.k8s_version, rel.pool_nodes, rel.node_pods
            )
        })
        .collect();
    format!(
        "## Gang placement latency (harness bench gang)\n\nPools: {}.\n\n{}",
        pools.join("; "),
        latency::latency_table(&rows)
    )
}

/// Write gang-latency.json and gang-latency.md into `out`.
pub fn write(r: &GangBenchResult, out: &Path) -> Result<Vec<PathBuf>> {
    crate::output::write_reports(out, "gang-latency", r, markdown(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(sizes: Vec<u32>, nodes: u32, pods: u32) -> GangBenchOptions {
        GangBenchOptions {
            sizes,
            repeats: 1,
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
