//! `harness bench thor|gang|cron|answer`: run a benchmark, print its table
//! and write its reports (`bench thor` in cli::thor, the answer matrix in
//! cli::answer).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use harness::bench::core::shard::Shard;
use harness::bench::cron::{CronBenchOptions, bench_cron};
use harness::bench::gang::{GangBenchOptions, bench_gang};
use harness::cluster::Provider;
use harness::cluster::profile::{ControlPlane, Profile};
use harness::k8s::K8sRelease;

use crate::cli::args::{parse_bins, parse_profile, parse_shard};
use crate::cli::interrupt::{Made, or_tear_down};

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// HPCC Thor's Kubernetes lifecycle, per mode, on fresh clusters of a
    /// provider (local, kind) or on an existing cluster.
    Thor(Box<crate::cli::thor::BenchThorArgs>),
    /// Gang placement latency: gangs of N pods on a fresh local cluster per
    /// Kubernetes minor (that release's gang feature set).
    Gang(BenchGangArgs),
    /// The answer matrix (baselines/answer.yaml): every run set the
    /// README's headline is rendered from, each run and recorded as `bench
    /// thor --record` would (here, as one shard of each, or on a cluster).
    Answer(crate::cli::answer::BenchAnswerArgs),
    /// Scheduled jobs: N tenants × M CronJobs every minute for K minutes on
    /// a fresh local cluster; requests and etcd writes per scheduled run.
    Cron(BenchCronArgs),
}

#[derive(Args, Debug)]
pub struct BenchCronArgs {
    /// Tenants (a namespace each).
    #[arg(long, default_value_t = 5)]
    pub tenants: u32,
    /// CronJobs per tenant, each every minute.
    #[arg(long, default_value_t = 4)]
    pub cronjobs: u32,
    /// Schedule times to measure.
    #[arg(long, default_value_t = 3)]
    pub minutes: u32,
    /// Seconds each run's pod runs.
    #[arg(long, default_value_t = 2)]
    pub pod_seconds: u32,
    #[arg(long = "k8s-version", default_value = harness::k8s::DEFAULT_K8S_MINOR)]
    pub k8s_version: String,
    /// Control-plane profile: default or tuned (as `up --control-plane`).
    #[arg(long = "control-plane", default_value = "default", value_parser = parse_profile)]
    pub control_plane: Profile,
    /// Rounds, each on a fresh cluster: each figure's spread over them
    /// is reported, and the figures are their means.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Run only shard K of N of the rounds; `harness report merge` joins
    /// the shards' out dirs.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Where the reports go (result.json, report.md, report.html, junit.xml).
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Use this binary: NAME=PATH. Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
}

#[derive(Args, Debug)]
pub struct BenchGangArgs {
    /// Gang sizes (pods per gang).
    #[arg(long, value_delimiter = ',', default_values_t = [8u32, 64, 512])]
    pub sizes: Vec<u32>,
    /// Gangs of each size placed one after another on one cluster.
    #[arg(long = "gangs", alias = "repeats", default_value_t = 5)]
    pub gangs: u32,
    /// Rounds: every release once per round on a fresh cluster, in an
    /// order shuffled from --seed; each metric's spread over the rounds
    /// and each release's ratio to the first with a 95 % interval and a
    /// verdict are reported.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Seed of the rounds' order (printed; the same seed replays it).
    /// Default: the clock.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run only shard K of N of the rounds (needs --seed); `harness
    /// report merge` joins the shards' out dirs.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Kubernetes minors to run (default: every release the harness runs).
    #[arg(long = "k8s-version", value_delimiter = ',')]
    pub k8s_versions: Vec<String>,
    /// Fake nodes in the pool the gangs land on, and pods per node.
    #[arg(long, default_value_t = 6)]
    pub nodes: u32,
    #[arg(long, default_value_t = 110)]
    pub node_pods: u32,
    /// Seconds one gang may take to be bound whole.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Control-plane profile of the clusters: default or tuned (as `up
    /// --control-plane`).
    #[arg(long = "control-plane", default_value = "default", value_parser = parse_profile)]
    pub control_plane: Profile,
    /// Where the reports go (result.json, report.md, report.html, junit.xml).
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Use this binary: NAME=PATH. Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
}

pub async fn run(c: BenchCommand) -> Result<i32> {
    match c {
        BenchCommand::Thor(args) => crate::cli::thor::bench_thor(&args).await,
        BenchCommand::Gang(args) => gang(&args).await,
        BenchCommand::Cron(args) => cron(&args).await,
        BenchCommand::Answer(args) => crate::cli::answer::run(&args).await,
    }
}

async fn cron(args: &BenchCronArgs) -> Result<i32> {
    let opts = CronBenchOptions {
        tenants: args.tenants,
        cronjobs: args.cronjobs,
        minutes: args.minutes,
        pod_seconds: args.pod_seconds,
        release: K8sRelease::parse(&args.k8s_version)?,
        bins: parse_bins(&args.bins)?,
        cluster_name: format!("bench-cron-{}", std::process::id()),
        control_plane: ControlPlane::of(args.control_plane),
        rounds: args.repeat,
        shard: args.shard,
    };
    opts.check()?;
    run_local_bench(
        bench_cron(&opts, Some(&args.out)),
        &opts.cluster_name,
        |r| {
            use harness::bench::core::report::{files::write_all, markdown::markdown};
            Ok((write_all(r, &args.out)?, markdown(r)))
        },
    )
    .await
}

async fn gang(args: &BenchGangArgs) -> Result<i32> {
    let releases: Vec<K8sRelease> = if args.k8s_versions.is_empty() {
        harness::k8s::releases_to_run()?
    } else {
        args.k8s_versions
            .iter()
            .map(|v| K8sRelease::parse(v))
            .collect::<Result<_>>()?
    };
    let opts = GangBenchOptions {
        sizes: args.sizes.clone(),
        repeats: args.gangs,
        rounds: args.repeat,
        seed: args.seed,
        shard: args.shard,
        releases,
        pool_nodes: args.nodes,
        node_pods: args.node_pods,
        timeout: Duration::from_secs(args.timeout),
        bins: parse_bins(&args.bins)?,
        cluster_prefix: format!("bench-gang-{}", std::process::id()),
        control_plane: ControlPlane::of(args.control_plane),
    };
    opts.check()?;
    run_local_bench(
        bench_gang(&opts, Some(&args.out)),
        &opts.cluster_prefix,
        |r| {
            use harness::bench::core::report::{files::write_all, markdown::markdown};
            Ok((write_all(r, &args.out)?, markdown(r)))
        },
    )
    .await
}

/// Run a benchmark on local clusters named `prefix…`, then write its
/// reports and print its table (`report`: the files written and the
/// table); on Ctrl-C, stop the clusters and exit 130.
async fn run_local_bench<T>(
    bench: impl std::future::Future<Output = Result<T>>,
    prefix: &str,
    report: impl FnOnce(&T) -> Result<(Vec<PathBuf>, String)>,
) -> Result<i32> {
    let local = Provider::Local { real_node: false };
    let result = match or_tear_down(bench, &local, Made::Prefixed(prefix)).await? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let (files, table) = report(&result)?;
    for p in files {
        eprintln!("wrote {}", p.display());
    }
    print!("{table}");
    Ok(0)
}
