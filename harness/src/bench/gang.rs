//! `harness bench gang`: gang placement latency on a fresh local cluster per
//! Kubernetes minor (that release's gang feature set and Job integration),
//! gangs of each size placed one after another on a pool of fake nodes.
//! With `--repeat N`, N rounds: every release once per round on a fresh
//! cluster, in an order shuffled from a printed seed; each metric's
//! spread over the rounds and each release's ratio to the first release
//! (paired by round, 95 % interval, verdict: bench::core::over_rounds). Prints
//! and writes the latency table; not part of `cargo test` (the gang suite
//! keeps a gang-of-8 smoke).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::bench::core::figures::MACHINE;
use crate::bench::core::metric::{Driver, Kind, Metric, Spec};
use crate::bench::core::over_rounds::MetricRounds;
use crate::bench::core::result::{MergedShard, ShardOf};
use crate::bench::core::shard::Shard;
use crate::cluster::profile::ControlPlane;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::progress::Step;
use crate::tools::Component;
use crate::workload::gang::case::{Benchmark, Pool};
use crate::workload::gang::latency::{self, LatencyReport, SizeFigures};
use crate::workload::gang::trial::Trial;

pub const SCHEMA: &str = "harness.gang-latency/v1";

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
        if self.rounds == 0 {
            return Err(bad_input("--repeat 0: must be at least 1 (rounds)"));
        }
        if self.releases.is_empty() {
            return Err(bad_input("no Kubernetes version to run"));
        }
        if let Some(sh) = self.shard {
            sh.check(self.rounds, self.seed)?;
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
    /// The round it ran in (0-based).
    #[serde(default)]
    pub round: u32,
    #[serde(flatten)]
    pub report: LatencyReport,
}

/// One release's gangs of one size over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeRounds {
    pub k8s_version: String,
    pub size: u32,
    pub metrics: Vec<MetricRounds>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GangBenchResult {
    pub schema: String,
    pub harness_version: String,
    pub started: String,
    /// Every release's run of every round.
    pub releases: Vec<ReleaseLatency>,
    #[serde(default = "one")]
    pub rounds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// A shard's place in its run set (`--shard K/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardOf>,
    /// A merged run set's shards (`report merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<MergedShard>,
    /// Rounds of the run set no shard brought (`report merge`), 0-based:
    /// said in the report, never dropped silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_rounds: Vec<usize>,
    /// With rounds: each metric per release and size over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub over_rounds: Vec<SizeRounds>,
}

fn one() -> u32 {
    1
}

/// The rule of `metrics`, as the report states it.
const RULE: &str = "latencies 5 % and 50 ms (the API latency noise floor); counts 2 %; apiserver + etcd CPU 5 % and 2 s";

/// Why a size's requests and writes differ between machines: the
/// controllers' and the scheduler's status writes coalesce.
const PACE: &str = "controllers' and the scheduler's status writes coalesce";

fn per_gang(s: &SizeFigures, n: u64) -> f64 {
    n as f64 / f64::from(s.repeats.max(1))
}

/// The metrics judged over rounds, declared once: each a label (its
/// name in gang-latency.json), the kind that gives its rule (latencies:
/// 5 % and the API latency noise floor of 50 ms; counts: 2 %; CPU: 5 %
/// and 2 s, on the size's gangs together), and its value in a size's
/// figures.
pub(crate) fn metrics() -> Vec<Metric<SizeFigures>> {
    let latency = |key, label| {
        Spec::new(key, label, "ms")
            .kind(Kind::Latency, 50.0)
            .driver(Driver::Pace(MACHINE))
    };
    vec![
        Metric::one(
            latency(
                "last_created_to_last_bound_ms.p50",
                "last created → last bound p50 (ms)",
            ),
            |s: &SizeFigures| s.last_created_to_last_bound_ms.p50,
        ),
        Metric::one(
            latency(
                "last_created_to_last_bound_ms.p99",
                "last created → last bound p99 (ms)",
            ),
            |s: &SizeFigures| s.last_created_to_last_bound_ms.p99,
        ),
        Metric::one(
            latency(
                "first_created_to_last_bound_ms.p99",
                "first created → last bound p99 (ms)",
            ),
            |s: &SizeFigures| s.first_created_to_last_bound_ms.p99,
        ),
        Metric::one(
            Spec::new("api_requests_per_gang", "API requests / gang", "requests")
                .driver(Driver::Pace(PACE)),
            |s: &SizeFigures| per_gang(s, s.window.api_requests_total),
        ),
        Metric::one(
            Spec::new("etcd_writes_per_gang", "etcd writes / gang", "writes")
                .driver(Driver::Pace(PACE)),
            |s: &SizeFigures| per_gang(s, s.window.etcd_writes_total),
        ),
        Metric::one(
            Spec::new(
                "apiserver_etcd_cpu_s",
                "apiserver + etcd CPU s (the size's gangs)",
                "cpu-s",
            )
            .kind(Kind::Cpu, 2.0)
            .driver(Driver::Pace(MACHINE)),
            |s: &SizeFigures| s.window.apiserver_etcd_cpu_s,
        ),
    ]
}

/// Each release's metrics per size over the rounds, each release judged
/// against the first of `order` (the oldest asked for).
pub fn over_rounds(runs: &[ReleaseLatency], order: &[K8sRelease]) -> Vec<SizeRounds> {
    let Some(reference) = order.first() else {
        return Vec::new();
    };
    let samples = |version: &str, size: u32, m: &Metric<SizeFigures>| -> Vec<f64> {
        let mut rs: Vec<&ReleaseLatency> =
            runs.iter().filter(|r| r.k8s_version == version).collect();
        rs.sort_by_key(|r| r.round);
        rs.iter()
            .filter_map(|r| r.report.sizes.iter().find(|s| s.size == size))
            .filter_map(|s| m.value(s, m.spec.key))
            .collect()
    };
    let sizes: Vec<u32> = runs
        .first()
        .map(|r| r.report.sizes.iter().map(|s| s.size).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for release in order {
        for &size in &sizes {
            let metrics = metrics()
                .iter()
                .map(|m| {
                    let reference =
                        (release != reference).then(|| samples(reference.version, size, m));
                    crate::bench::core::over_rounds::metric(
                        m.spec.label,
                        samples(release.version, size, m),
                        reference.as_deref(),
                        m.spec.rule(),
                    )
                })
                .collect();
            out.push(SizeRounds {
                k8s_version: release.version.to_string(),
                size,
                metrics,
            });
        }
    }
    out
}

/// Run the sizes on a fresh cluster per release.
pub async fn bench_gang(opts: &GangBenchOptions) -> Result<GangBenchResult> {
    opts.check()?;
    let started = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let seed = opts.seed.unwrap_or_else(crate::stats::clock_seed);
    let order = crate::bench::core::rounds::plan(&opts.releases, opts.rounds, seed, opts.shard);
    crate::bench::core::rounds::announce(
        &order
            .iter()
            .map(|(_, r)| r.iter().map(|k| k.minor.to_string()).collect())
            .collect::<Vec<_>>(),
        seed,
    );
    let mut releases = Vec::new();
    for (round, in_order) in &order {
        for release in in_order {
            releases.push(one_release(opts, *release, *round as u32).await?);
        }
    }
    let over_rounds = match opts.rounds > 1 {
        true => over_rounds(&releases, &opts.releases),
        false => Vec::new(),
    };
    Ok(GangBenchResult {
        schema: SCHEMA.into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started,
        releases,
        rounds: opts.rounds,
        seed: Some(seed),
        shard: opts.shard.map(|sh| ShardOf {
            k: sh.k,
            n: sh.n,
            first: order.first().map_or(0, |r| r.0),
            of: opts.rounds as usize,
        }),
        merged: Vec::new(),
        lost_rounds: Vec::new(),
        over_rounds,
    })
}

/// One release's run of one round on a fresh cluster, down after it.
async fn one_release(
    opts: &GangBenchOptions,
    release: K8sRelease,
    round: u32,
) -> Result<ReleaseLatency> {
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
    Ok(ReleaseLatency {
        k8s_version: release.version.to_string(),
        minor: release.minor.to_string(),
        pool_nodes: opts.pool_nodes,
        node_pods: opts.node_pods,
        control_plane: opts.control_plane.describe(),
        round,
        report,
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

/// The shards of one gang run set joined (`report merge`): every
/// release's runs in round order, the rounds judged together again.
/// Refused unless they ran the same sizes, gangs, pool and seed.
pub fn merge(parts: Vec<(String, GangBenchResult)>) -> Result<GangBenchResult> {
    let (first_from, first) = parts.first().context("no shard given")?;
    let same = |r: &GangBenchResult| {
        (
            r.rounds,
            r.seed,
            r.shard.as_ref().map(|s| (s.n, s.of)),
            r.releases
                .first()
                .map(|x| (x.pool_nodes, x.node_pods, x.control_plane.clone())),
        )
    };
    for (from, r) in &parts {
        if r.shard.is_none() {
            return Err(bad_input(format!(
                "report merge: {from}: not a shard (it ran without --shard)"
            )));
        }
        if same(r) != same(first) {
            return Err(bad_input(format!(
                "report merge: {from} is not a shard of the run set of {first_from} (rounds, seed, shards or pool differ)"
            )));
        }
    }
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for (from, r) in &parts {
        let k = r.shard.as_ref().map_or(0, |s| s.k);
        if let Some(was) = seen.insert(k, from) {
            return Err(bad_input(format!(
                "report merge: shard {k} given twice ({was} and {from})"
            )));
        }
    }
    let mut releases: Vec<ReleaseLatency> =
        parts.iter().flat_map(|(_, r)| r.releases.clone()).collect();
    let brought: std::collections::BTreeSet<usize> =
        releases.iter().map(|r| r.round as usize).collect();
    let lost_rounds: Vec<usize> = (0..first.shard.as_ref().map_or(0, |s| s.of))
        .filter(|i| !brought.contains(i))
        .collect();
    releases.sort_by_key(|r| r.round);
    let over_rounds = judged_over_rounds(first.rounds, &releases)?;
    Ok(GangBenchResult {
        started: parts
            .iter()
            .map(|(_, r)| r.started.clone())
            .min()
            .unwrap_or_default(),
        shard: None,
        merged: parts
            .iter()
            .map(|(from, r)| {
                let sh = r.shard.as_ref().expect("checked above");
                MergedShard::of(sh, r.started.clone(), None, from.clone())
            })
            .collect(),
        releases,
        lost_rounds,
        over_rounds,
        ..first.clone()
    })
}

/// The releases' rounds judged by today's rule (each against the first
/// release, paired by round); none for a single round.
pub fn judged_over_rounds(rounds: u32, releases: &[ReleaseLatency]) -> Result<Vec<SizeRounds>> {
    let mut order: Vec<K8sRelease> = releases
        .iter()
        .map(|r| K8sRelease::parse(&r.minor))
        .collect::<Result<_>>()?;
    order.sort();
    order.dedup();
    Ok(match rounds > 1 {
        true => over_rounds(releases, &order),
        false => Vec::new(),
    })
}

/// The latency table of every release.
pub fn markdown(r: &GangBenchResult) -> String {
    // With rounds, each release's row names its round.
    let labels: Vec<String> = r
        .releases
        .iter()
        .map(|rel| match r.rounds > 1 {
            true => format!("{} (round {})", rel.k8s_version, rel.round + 1),
            false => rel.k8s_version.clone(),
        })
        .collect();
    let rows: Vec<(&str, &latency::SizeFigures)> = r
        .releases
        .iter()
        .zip(&labels)
        .flat_map(|(rel, label)| rel.report.sizes.iter().map(move |s| (label.as_str(), s)))
        .collect();
    let mut pools: Vec<String> = r
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
    pools.sort();
    pools.dedup();
    let mut md = format!(
        "## Gang placement latency (harness bench gang)\n\nPools: {}.\n\n{}",
        pools.join("; "),
        latency::latency_table(&rows)
    );
    if !r.lost_rounds.is_empty() {
        let lost: Vec<String> = r.lost_rounds.iter().map(|i| (i + 1).to_string()).collect();
        let _ = write!(
            md,
            "\n**Rounds no shard brought: {}** — the figures are of the other rounds only.\n",
            lost.join(", ")
        );
    }
    if let Some(first) = r.over_rounds.first() {
        let rows: Vec<(Vec<String>, &MetricRounds)> = r
            .over_rounds
            .iter()
            .flat_map(|s| {
                s.metrics.iter().map(move |m| {
                    (
                        vec![s.k8s_version.clone(), s.size.to_string(), m.metric.clone()],
                        m,
                    )
                })
            })
            .collect();
        let _ = write!(
            md,
            "\n### Over {} rounds (seed {})\n\nEach release once per round on a fresh cluster; its ratio to {} is paired by round ({}). Rule: {RULE}.\n\n{}",
            r.rounds,
            r.seed.unwrap_or_default(),
            first.k8s_version,
            crate::bench::core::result::METHOD,
            crate::bench::core::over_rounds::table(
                &["version", "gang size", "metric"],
                &rows,
                &first.k8s_version
            )
        );
    }
    md
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

    fn run(version: &str, round: u32, p50: f64, requests: u64) -> ReleaseLatency {
        let mut s = SizeFigures {
            size: 8,
            repeats: 2,
            ..Default::default()
        };
        s.last_created_to_last_bound_ms.p50 = p50;
        s.window.api_requests_total = requests;
        ReleaseLatency {
            k8s_version: version.into(),
            minor: version[..4].into(),
            pool_nodes: 1,
            node_pods: 64,
            control_plane: BTreeMap::new(),
            round,
            report: LatencyReport { sizes: vec![s] },
        }
    }

    #[test]
    fn each_release_is_judged_against_the_first_paired_by_round() {
        let a = K8sRelease::parse("1.36").unwrap();
        let b = K8sRelease::parse("1.37").unwrap();
        let mut runs = Vec::new();
        for round in 0..5 {
            let noise = f64::from(round % 2);
            // 1.37 places gangs 200 ms slower with the same requests.
            runs.push(run(b.version, round, 300.0 + noise, 100));
            runs.push(run(a.version, round, 100.0 + noise, 100));
        }
        let o = over_rounds(&runs, &[a, b]);
        assert_eq!(o.len(), 2);
        assert_eq!(o[0].k8s_version, a.version);
        assert!(o[0].metrics.iter().all(|m| m.vs_reference.is_none()));
        let p50 = &o[1].metrics[0];
        assert_eq!(p50.samples.len(), 5);
        assert_eq!(
            p50.vs_reference.unwrap().verdict,
            crate::stats::Direction::Higher
        );
        let requests = &o[1].metrics[3];
        assert_eq!(requests.spread.median, 50.0, "per gang");
        assert_eq!(
            requests.vs_reference.unwrap().verdict,
            crate::stats::Direction::Same
        );
        let r = GangBenchResult {
            schema: SCHEMA.into(),
            harness_version: "0".into(),
            started: String::new(),
            releases: runs,
            rounds: 5,
            seed: Some(9),
            shard: None,
            merged: Vec::new(),
            lost_rounds: Vec::new(),
            over_rounds: o,
        };
        let md = markdown(&r);
        assert!(md.contains("### Over 5 rounds (seed 9)"), "{md}");
        assert!(md.contains("| 1.37.1 (round 5) | 8 |"), "{md}");
        assert_eq!(md.matches("1.36.4: 1 nodes").count(), 1, "{md}");
        assert!(md.contains("↑ +"), "{md}");
    }

    #[test]
    fn a_shard_given_twice_is_refused_and_a_missing_one_said() {
        let shard = |k: u32, rounds: std::ops::Range<u32>| GangBenchResult {
            schema: SCHEMA.into(),
            harness_version: "0".into(),
            started: String::new(),
            releases: rounds
                .clone()
                .map(|i| run("1.37.1", i, 100.0, 100))
                .collect(),
            rounds: 3,
            seed: Some(9),
            shard: Some(ShardOf {
                k,
                n: 2,
                first: rounds.start as usize,
                of: 3,
            }),
            merged: Vec::new(),
            lost_rounds: Vec::new(),
            over_rounds: Vec::new(),
        };
        let whole = merge(vec![
            ("a".into(), shard(1, 0..2)),
            ("b".into(), shard(2, 2..3)),
        ])
        .unwrap();
        assert_eq!(whole.releases.len(), 3);
        assert!(whole.lost_rounds.is_empty());
        let e = merge(vec![
            ("a".into(), shard(1, 0..2)),
            ("a2".into(), shard(1, 0..2)),
        ])
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("shard 1 given twice (a and a2)"),
            "{e:#}"
        );
        let part = merge(vec![("a".into(), shard(1, 0..2))]).unwrap();
        assert_eq!(part.lost_rounds, [2]);
        assert!(markdown(&part).contains("**Rounds no shard brought: 3**"));
    }
}
