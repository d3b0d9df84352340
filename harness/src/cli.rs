//! The command line: parse, run, print, exit with DESIGN.md's codes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cluster::local::LocalCluster;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::error::{self, bad_input};
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::tools::{Component, Resolver};

#[derive(Parser, Debug)]
#[command(
    name = "harness",
    version,
    about = "End-to-end test and benchmark harness for batch workloads on Kubernetes"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Find or build the binaries a cluster needs.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Bring a cluster up and print how to use it.
    Up(Box<UpArgs>),
    /// Stop a cluster and remove its state.
    Down(DownArgs),
    /// List clusters and the health of each component.
    Status(StatusArgs),
    /// Check configs, manifests, suite cases and baselines offline.
    Validate(ValidateArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// HPCC Thor's Kubernetes lifecycle, per mode, on fresh local clusters.
    Thor(BenchThorArgs),
}

#[derive(Args, Debug)]
pub struct BenchThorArgs {
    /// A scenario file (suites/thor/*.yaml).
    #[arg(long)]
    pub scenario: PathBuf,
    /// Modes to run (default: the scenario's): baseline,jobset
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Where the reports go.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Runs per mode (means and spreads are reported).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Compare with the stored baseline; exit 1 on a regression.
    #[arg(long)]
    pub compare: bool,
    /// With --compare: judge counts and sizes only; latencies and wall
    /// times are shown but cannot fail. For a machine unlike the one that
    /// recorded the baseline (a CI runner).
    #[arg(long, requires = "compare")]
    pub counts_only: bool,
    /// Store this run as the baseline.
    #[arg(long)]
    pub record: bool,
    /// Use this binary: NAME=PATH. Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Files or directories (default: kind-configs/, manifests/, suites/,
    /// baselines/ of the repository).
    pub paths: Vec<PathBuf>,
    /// The repository root (default: found from the current directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: ValidateFormat,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidateFormat {
    Human,
    Json,
    Junit,
    Markdown,
}

#[derive(Subcommand, Debug)]
pub enum ToolsCommand {
    /// Resolve every binary, building from Go modules what is missing.
    Install(ToolsInstallArgs),
    /// Show where each binary was found (builds nothing).
    List(ToolsListArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ToolsArgs {
    /// Kubernetes minor (1.37, 1.36) or its pinned patch version
    /// [default: 1.37; with --provider kind and --config: the config's].
    #[arg(long)]
    pub k8s_version: Option<String>,
    /// Use this binary: NAME=PATH (NAME: etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kubectl, kwok,
    /// jobset-controller). Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
}

impl ToolsArgs {
    /// `--k8s-version`, or the default minor.
    pub fn k8s_version(&self) -> &str {
        self.k8s_version
            .as_deref()
            .unwrap_or(crate::k8s::DEFAULT_K8S_MINOR)
    }
}

#[derive(Args, Debug)]
pub struct ToolsInstallArgs {
    #[command(flatten)]
    pub tools: ToolsArgs,
    /// Only these binaries (default: all). Repeatable.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ToolsListArgs {
    #[command(flatten)]
    pub tools: ToolsArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Control-plane processes on this machine, kwok fake nodes.
    Local,
    /// kind: node containers in Docker, from a kind config (kind-configs/).
    Kind,
}

#[derive(Args, Debug)]
pub struct UpArgs {
    #[arg(long, value_enum, default_value = "local")]
    pub provider: Provider,
    #[arg(long, default_value = "dev")]
    pub name: String,
    #[command(flatten)]
    pub tools: ToolsArgs,
    /// Feature gates for every component: A=true,B=false
    #[arg(long, default_value = "")]
    pub feature_gates: String,
    /// API groups/versions to enable: scheduling.k8s.io/v1beta1=true
    #[arg(long, default_value = "")]
    pub runtime_config: String,
    /// Number of fake nodes.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// CPU capacity of each node (a Kubernetes quantity).
    #[arg(long, default_value = "32")]
    pub node_cpu: String,
    /// Memory capacity of each node (a Kubernetes quantity).
    #[arg(long, default_value = "256Gi")]
    pub node_memory: String,
    /// Pod capacity of each node.
    #[arg(long, default_value_t = 110)]
    pub node_pods: u32,
    /// Seconds to wait for readiness after the processes started.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    #[command(flatten)]
    pub hpcc: HpccArgs,
    #[command(flatten)]
    pub kind: KindUpArgs,
}

/// `up` flags of the kind provider.
#[derive(Args, Debug, Clone, Default)]
pub struct KindUpArgs {
    /// kind: the cluster config [default: kind-configs/<kind-profile>-<minor>.yaml].
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// kind: the profile the default config is chosen by (baseline, jobset, gang).
    #[arg(long, default_value = "baseline")]
    pub kind_profile: String,
    /// kind: also install Kueue (its pinned release manifest).
    #[arg(long)]
    pub kueue: bool,
}

/// `up --hpcc …`: HPCC Systems from its Helm chart once the cluster is up.
#[derive(Args, Debug, Clone)]
pub struct HpccArgs {
    /// Install HPCC Systems (needs a provider that runs containers: kind).
    #[arg(long, value_enum)]
    pub hpcc: Option<crate::install::hpcc::HpccMode>,
    /// The chart: a directory, .tgz, oci://… or REPO/CHART (default: the
    /// pinned release; required for jobset: the proof-of-concept chart).
    #[arg(long, requires = "hpcc")]
    pub hpcc_chart: Option<String>,
    /// A values file merged over manifests/hpcc/values/kind.yaml.
    #[arg(long, requires = "hpcc")]
    pub hpcc_values: Option<PathBuf>,
    /// Thor's numWorkers (default: suites/thor/smoke.yaml's).
    #[arg(long, requires = "hpcc", value_parser = clap::value_parser!(u32).range(1..))]
    pub hpcc_workers: Option<u32>,
    /// Seconds to wait for HPCC's pods to be Ready after helm returns.
    #[arg(long, default_value_t = 900)]
    pub hpcc_timeout: u64,
    /// If the HPCC install fails, leave the cluster running for inspection.
    #[arg(long)]
    pub keep: bool,
}

impl HpccArgs {
    /// The install options, checked before any cluster is started: a
    /// missing jobset chart, a bad values file or no helm fail fast.
    pub fn options(&self) -> Result<Option<crate::install::hpcc::HpccOptions>> {
        let Some(mode) = self.hpcc else {
            return Ok(None);
        };
        let opts = crate::install::hpcc::HpccOptions {
            mode,
            chart: self.hpcc_chart.clone(),
            values: self.hpcc_values.clone(),
            workers: self.hpcc_workers,
            timeout: Duration::from_secs(self.hpcc_timeout),
        };
        crate::install::hpcc::preflight(&opts)?;
        Ok(Some(opts))
    }
}

/// HPCC on a cluster that `up` just brought up. On failure the cluster is
/// stopped (its state kept) unless `keep`, and the error says where it is.
pub async fn install_hpcc<C: Cluster>(
    cluster: C,
    opts: &crate::install::hpcc::HpccOptions,
    keep: bool,
) -> Result<Option<C>> {
    let outcome = tokio::select! {
        r = crate::install::hpcc::install(&cluster, opts) => Some(r),
        sig = interrupted() => {
            eprintln!("\nharness: {sig}: tearing down cluster {:?}", cluster.name());
            None
        }
    };
    let name = cluster.name().to_string();
    match outcome {
        None => {
            cluster.down(false)?;
            Ok(None)
        }
        Some(Ok(rec)) => {
            eprintln!(
                "HPCC {} ({} mode, {} Thor workers) ready in namespace {}: ECL Watch is service {}:{}; values in {}",
                rec.chart_version.as_deref().unwrap_or(&rec.chart),
                rec.mode.name(),
                rec.num_workers,
                rec.namespace,
                rec.eclwatch_service,
                rec.eclwatch_port,
                rec.values_file.display()
            );
            Ok(Some(cluster))
        }
        Some(Err(e)) if keep => Err(e.context(format!(
            "installing HPCC on cluster {name:?} failed; the cluster is left running for inspection (--keep): \
             export KUBECONFIG={}; `harness down --name {name}` removes it",
            cluster.kubeconfig().display()
        ))),
        Some(Err(e)) => {
            let dir = crate::cluster::state::cluster_dir(&name);
            match cluster.down(true) {
                Ok(()) => Err(e.context(format!(
                    "installing HPCC on cluster {name:?} failed; the cluster was stopped (state and helm log kept in {}; \
                     rerun with --keep to leave it running for inspection; `harness down --name {name}` removes the state)",
                    dir.display()
                ))),
                Err(down) => Err(e.context(format!(
                    "installing HPCC on cluster {name:?} failed, and stopping the cluster failed too: {down:#}"
                ))),
            }
        }
    }
}

#[derive(Args, Debug)]
pub struct DownArgs {
    #[arg(long, default_value = "dev")]
    pub name: String,
    /// Keep the state directory (logs, audit log, certificates).
    #[arg(long)]
    pub keep: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Only this cluster.
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// "A=true,B=false" → map. Values must be true or false.
pub fn parse_gates(s: &str) -> Result<BTreeMap<String, bool>> {
    let mut out = BTreeMap::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            bad_input(format!("--feature-gates: {item:?} is not NAME=true|false"))
        })?;
        let v = match v.trim() {
            "true" => true,
            "false" => false,
            other => {
                return Err(bad_input(format!(
                    "--feature-gates: {k}={other}: the value must be true or false"
                )));
            }
        };
        if k.trim().is_empty() || !k.trim().chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad_input(format!(
                "--feature-gates: {k:?} is not a feature gate name"
            )));
        }
        out.insert(k.trim().to_string(), v);
    }
    Ok(out)
}

/// "group/version=true,api/all=false" → map.
pub fn parse_runtime_config(s: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            bad_input(format!(
                "--runtime-config: {item:?} is not GROUP/VERSION=true|false"
            ))
        })?;
        if !matches!(v, "true" | "false") || k.is_empty() || k.contains(char::is_whitespace) {
            return Err(bad_input(format!(
                "--runtime-config: {item:?} is not GROUP/VERSION=true|false"
            )));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

pub fn parse_bins(items: &[String]) -> Result<BTreeMap<Component, PathBuf>> {
    let mut out = BTreeMap::new();
    for item in items {
        let (name, path) = item
            .split_once('=')
            .ok_or_else(|| bad_input(format!("--bin {item:?}: expected NAME=PATH")))?;
        let c = Component::from_name(name).ok_or_else(|| {
            bad_input(format!(
                "--bin {name}: unknown binary; one of {}",
                Component::ALL.map(|c| c.name()).join(", ")
            ))
        })?;
        out.insert(c, PathBuf::from(path));
    }
    Ok(out)
}

fn resolver(args: &ToolsArgs) -> Result<Resolver> {
    let k8s = K8sRelease::parse(args.k8s_version())?;
    Ok(Resolver::from_env(k8s, parse_bins(&args.bins)?))
}

/// Warnings, less kube-rs's per-attempt connection errors while a
/// component is starting (readiness polling reports those itself).
pub const DEFAULT_LOG_FILTER: &str = "warn,kube_client::client::builder=off";

/// Entry point of the binary: returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { error::EXIT_USAGE } else { 0 };
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HARNESS_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_writer(std::io::stderr)
        .init();
    crate::init_crypto();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return error::EXIT_FAILED;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            error::exit_code(&e)
        }
    }
}

async fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Tools(ToolsCommand::Install(args)) => tools_install(&args).await,
        Command::Tools(ToolsCommand::List(args)) => tools_list(&args),
        Command::Up(args) => up(*args).await,
        Command::Down(args) => {
            let started = Instant::now();
            crate::cluster::AnyCluster::load(&args.name)?.down(args.keep)?;
            eprintln!(
                "cluster {:?} stopped in {:.1} s{}",
                args.name,
                started.elapsed().as_secs_f64(),
                if args.keep { " (state kept)" } else { "" }
            );
            Ok(0)
        }
        Command::Status(args) => status(&args).await,
        Command::Validate(args) => validate(&args),
        Command::Bench(BenchCommand::Thor(args)) => bench_thor(&args).await,
    }
}

async fn tools_install(args: &ToolsInstallArgs) -> Result<i32> {
    let r = resolver(&args.tools)?;
    let wanted: Vec<Component> = if args.only.is_empty() {
        Component::ALL.to_vec()
    } else {
        args.only
            .iter()
            .map(|n| {
                Component::from_name(n).ok_or_else(|| {
                    bad_input(format!(
                        "--only {n}: unknown binary; one of {}",
                        Component::ALL.map(|c| c.name()).join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    let mut rows = Vec::new();
    for c in wanted {
        let r = r.clone();
        let started = Instant::now();
        let resolved = tokio::task::spawn_blocking(move || r.resolve(c))
            .await
            .context("tool resolution panicked")??;
        rows.push((resolved, started.elapsed()));
    }
    println!(
        "{:<24} {:<9} {:<7} {:>8}  PATH",
        "BINARY", "VERSION", "SOURCE", "TIME"
    );
    for (r, took) in rows {
        println!(
            "{:<24} {:<9} {:<7} {:>7.1}s  {}",
            r.component,
            r.version,
            r.source.to_string(),
            took.as_secs_f64(),
            r.path.display()
        );
    }
    Ok(0)
}

fn tools_list(args: &ToolsListArgs) -> Result<i32> {
    let r = resolver(&args.tools)?;
    let mut rows = Vec::new();
    let mut missing = 0;
    for c in Component::ALL {
        match r.find(c) {
            Ok(found) => rows.push(serde_json::json!({
                "binary": c.name(), "wanted": c.version(r.k8s), "found": found.version,
                "source": found.source, "path": found.path, "skipped": found.skipped,
            })),
            Err(skipped) => {
                missing += 1;
                rows.push(serde_json::json!({
                    "binary": c.name(), "wanted": c.version(r.k8s), "found": null,
                    "source": null, "path": null, "skipped": skipped,
                }))
            }
        }
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Text => {
            println!(
                "{:<24} {:<9} {:<9} {:<7} PATH",
                "BINARY", "PINNED", "FOUND", "SOURCE"
            );
            for row in &rows {
                println!(
                    "{:<24} {:<9} {:<9} {:<7} {}",
                    row["binary"].as_str().unwrap_or_default(),
                    row["wanted"].as_str().unwrap_or_default(),
                    row["found"].as_str().unwrap_or("-"),
                    row["source"].as_str().unwrap_or("-"),
                    row["path"]
                        .as_str()
                        .unwrap_or("(missing: `harness tools install` builds it)"),
                );
                for s in row["skipped"].as_array().into_iter().flatten() {
                    println!("{:<24} note: {}", "", s.as_str().unwrap_or_default());
                }
            }
            if missing > 0 {
                println!(
                    "\n{missing} binary(ies) missing; `harness tools install --k8s-version {}` builds them",
                    r.k8s.minor
                );
            }
        }
    }
    Ok(0)
}

async fn up(args: UpArgs) -> Result<i32> {
    match args.provider {
        Provider::Local => {
            if args.kind.config.is_some() || args.kind.kueue {
                return Err(bad_input(
                    "--config and --kueue are for --provider kind (the local provider installs JobSet itself)",
                ));
            }
            if args.hpcc.hpcc.is_some() {
                return Err(bad_input(
                    "--hpcc needs --provider kind: the local provider's kwok nodes run no containers, \
                     so HPCC's pods could never start",
                ));
            }
            up_local(args).await
        }
        Provider::Kind => up_kind(args).await,
    }
}

async fn up_kind(args: UpArgs) -> Result<i32> {
    use crate::cluster::kind::{self, KindSpec};
    crate::cluster::state::validate_name(&args.name)?;
    if !args.feature_gates.trim().is_empty() || !args.runtime_config.trim().is_empty() {
        return Err(bad_input(
            "--feature-gates/--runtime-config: with --provider kind they come from the kind config (--config; the gang profiles set them)",
        ));
    }
    if !args.tools.bins.is_empty() {
        return Err(bad_input(
            "--bin: the kind provider runs the binaries of its node image; --bin is for --provider local",
        ));
    }
    let config = match &args.kind.config {
        Some(c) => c.clone(),
        None => {
            let minor = K8sRelease::parse(args.tools.k8s_version())?.minor;
            let cwd = std::env::current_dir()?;
            let root = crate::validate::find_root(&cwd).ok_or_else(|| {
                bad_input(format!(
                    "no --config, and {} is not inside the repository (kind-configs/): pass --config FILE",
                    cwd.display()
                ))
            })?;
            kind::config::default_config(&root, &args.kind.kind_profile, minor)?
        }
    };
    // A missing jobset chart, a bad values file or no helm fail before
    // any cluster exists.
    let hpcc = args.hpcc.options()?;
    let opts = lifecycle::KindUpOptions {
        spec: KindSpec {
            name: args.name.clone(),
            config,
            k8s_version: args.tools.k8s_version.clone(),
            wait: Duration::from_secs(args.timeout),
        },
        kueue: args.kind.kueue,
        timeout: Duration::from_secs(args.timeout),
    };
    let started = Instant::now();
    let result = tokio::select! {
        r = lifecycle::up_kind(&opts) => r,
        sig = interrupted() => {
            eprintln!("\nharness: {sig}: deleting kind cluster {:?}", kind::kind_cluster_name(&args.name));
            // Dropping the up future killed a running `kind create`.
            kind::abandon(&args.name)?;
            return Ok(130);
        }
    };
    let cluster = result?;
    let cluster = match &hpcc {
        None => cluster,
        Some(h) => match install_hpcc(cluster, h, args.hpcc.keep).await? {
            Some(c) => c,
            None => return Ok(130),
        },
    };
    eprintln!(
        "kind cluster {:?} ({}, Kubernetes v{}) ready in {:.1} s; state in {}",
        args.name,
        cluster.state.kind_cluster,
        cluster.state.k8s_version,
        started.elapsed().as_secs_f64(),
        cluster.root.display()
    );
    println!("export KUBECONFIG={}", cluster.kubeconfig().display());
    Ok(0)
}

async fn up_local(args: UpArgs) -> Result<i32> {
    crate::cluster::state::validate_name(&args.name)?;
    let k8s = K8sRelease::parse(args.tools.k8s_version())?;
    let spec = ClusterSpec {
        name: args.name.clone(),
        k8s_minor: k8s.minor.to_string(),
        feature_gates: parse_gates(&args.feature_gates)?,
        runtime_config: parse_runtime_config(&args.runtime_config)?,
        nodes: NodeSpec {
            count: args.nodes,
            cpu: args.node_cpu.clone(),
            memory: args.node_memory.clone(),
            pods: args.node_pods,
        },
    };
    let opts = UpOptions {
        spec,
        bins: parse_bins(&args.tools.bins)?,
        timeout: Duration::from_secs(args.timeout),
    };
    let started = Instant::now();
    let result = tokio::select! {
        r = lifecycle::up(&opts) => r,
        sig = interrupted() => {
            eprintln!("\nharness: {sig}: tearing down cluster {:?}", args.name);
            // The up future is dropped: stop whatever it had started.
            if let Ok(c) = LocalCluster::load(&args.name) {
                c.down(false)?;
            }
            return Ok(130);
        }
    };
    let cluster = result?;
    eprintln!(
        "cluster {:?} (Kubernetes v{}) ready in {:.1} s; state in {}",
        args.name,
        cluster.state.k8s_version,
        started.elapsed().as_secs_f64(),
        cluster.layout.display()
    );
    println!("export KUBECONFIG={}", cluster.kubeconfig().display());
    Ok(0)
}

async fn bench_thor(args: &BenchThorArgs) -> Result<i32> {
    use crate::workload::thor::Mode;
    let modes = if args.modes.is_empty() {
        None
    } else {
        Some(
            args.modes
                .iter()
                .map(|m| {
                    Mode::parse(m).ok_or_else(|| {
                        bad_input(format!(
                            "--modes: unknown mode {m:?}; one of baseline, jobset, jobset-gang"
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        )
    };
    let root = crate::validate::find_root(&std::env::current_dir()?);
    let opts = crate::bench::ThorBenchOptions {
        scenario: args.scenario.clone(),
        modes,
        repeat: args.repeat,
        bins: parse_bins(&args.bins)?,
        cluster_prefix: format!("bench-{}", std::process::id()),
    };
    let prefix = opts.cluster_prefix.clone();
    let result = tokio::select! {
        r = crate::bench::bench_thor(&opts) => r?,
        sig = interrupted() => {
            eprintln!("\nharness: {sig}: tearing down the benchmark's clusters");
            for name in crate::cluster::state::list_clusters()?.into_iter().filter(|n| n.starts_with(&prefix)) {
                if let Ok(c) = LocalCluster::load(&name) {
                    c.down(false)?;
                }
            }
            return Ok(130);
        }
    };
    let written = crate::report::write_all(&result, &args.out)?;
    for p in &written {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", crate::report::markdown(&result, None));
    let mut code = 0;
    if args.compare || args.record {
        let root = root.ok_or_else(|| {
            bad_input("--compare/--record need the repository (baselines/): run from inside it")
        })?;
        let path = crate::baseline::path_for(&root, &result);
        if args.compare {
            let base = crate::baseline::load(&path)?;
            let mut verdicts = crate::baseline::compare(&base, &result);
            if args.counts_only {
                crate::baseline::not_judging_latency(&mut verdicts);
            }
            print!("{}", crate::report::compare_markdown(&verdicts, &path));
            std::fs::write(
                args.out.join("compare.md"),
                crate::report::compare_markdown(&verdicts, &path),
            )?;
            std::fs::write(
                args.out.join("compare-junit.xml"),
                crate::report::compare_junit(&verdicts),
            )?;
            if verdicts.iter().any(|v| !v.pass) {
                code = error::EXIT_FAILED;
            }
        }
        if args.record {
            let relative = args
                .scenario
                .canonicalize()
                .ok()
                .and_then(|p| {
                    p.strip_prefix(root.canonicalize().ok()?)
                        .ok()
                        .map(Path::to_path_buf)
                })
                .unwrap_or(args.scenario.clone());
            crate::baseline::record(&path, &result, &relative.display().to_string())?;
            eprintln!("recorded {}", path.display());
        }
    }
    Ok(code)
}

fn validate(args: &ValidateArgs) -> Result<i32> {
    let root = match &args.root {
        Some(r) => r.clone(),
        None => {
            let cwd = std::env::current_dir()?;
            crate::validate::find_root(&cwd).ok_or_else(|| {
                bad_input(format!(
                    "{} is not inside the harness repository (no Cargo.toml with manifests/ above it); pass --root",
                    cwd.display()
                ))
            })?
        }
    };
    let report = crate::validate::run(&root, &args.paths)?;
    let text = match args.format {
        ValidateFormat::Human => crate::validate::report::human(&report),
        ValidateFormat::Json => crate::validate::report::json(&report),
        ValidateFormat::Junit => crate::validate::report::junit(&report),
        ValidateFormat::Markdown => crate::validate::report::markdown(&report),
    };
    print!("{text}");
    Ok(if report.ok() { 0 } else { error::EXIT_FAILED })
}

/// Resolves on SIGINT or SIGTERM, naming the signal.
async fn interrupted() -> &'static str {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "interrupted";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted",
        _ = term.recv() => "terminated",
    }
}

async fn status(args: &StatusArgs) -> Result<i32> {
    let names = match &args.name {
        Some(n) => vec![n.clone()],
        None => crate::cluster::state::list_clusters()?,
    };
    let mut all_healthy = true;
    let mut report = Vec::new();
    for name in &names {
        let c = crate::cluster::AnyCluster::load(name)?;
        let health = c.health().await;
        let healthy = health.iter().all(|h| h.healthy);
        all_healthy &= healthy;
        report.push((c, health, healthy));
    }
    match args.format {
        Format::Json => {
            let v: Vec<_> = report
                .iter()
                .map(|(c, h, ok)| {
                    serde_json::json!({
                        "name": c.name(), "provider": c.provider(),
                        "k8s_version": c.k8s_version(), "kubeconfig": c.kubeconfig(),
                        "healthy": ok, "components": h,
                    })
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => {
            if report.is_empty() {
                println!(
                    "no clusters (state dir {})",
                    crate::paths::clusters_dir().display()
                );
            }
            for (c, health, ok) in &report {
                println!(
                    "{} ({} provider, Kubernetes v{}): {}\n  KUBECONFIG={}",
                    c.name(),
                    c.provider(),
                    c.k8s_version(),
                    if *ok { "healthy" } else { "UNHEALTHY" },
                    c.kubeconfig().display()
                );
                for h in health {
                    println!(
                        "  {:<24} pid {:<8} {:<8} {}",
                        h.component,
                        h.pid.map(|p| p.to_string()).unwrap_or_default(),
                        if h.running { "running" } else { "EXITED" },
                        h.health
                    );
                }
                if !ok && let Err(e) = c.diagnose() {
                    eprintln!("{e:#}");
                }
            }
        }
    }
    Ok(if all_healthy { 0 } else { error::EXIT_FAILED })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_and_reject() {
        let g = parse_gates("GenericWorkload=true, WorkloadWithJob=false").unwrap();
        assert!(g["GenericWorkload"]);
        assert!(!g["WorkloadWithJob"]);
        assert!(parse_gates("").unwrap().is_empty());
        for bad in ["A", "A=yes", "=true", "A-B=true"] {
            let e = parse_gates(bad).unwrap_err();
            assert_eq!(error::exit_code(&e), 2, "{bad}");
        }
    }

    #[test]
    fn runtime_config_parses() {
        let rc = parse_runtime_config("scheduling.k8s.io/v1alpha2=true").unwrap();
        assert_eq!(rc["scheduling.k8s.io/v1alpha2"], "true");
        assert!(parse_runtime_config("scheduling.k8s.io/v1alpha2").is_err());
        assert!(parse_runtime_config("a=maybe").is_err());
    }

    #[test]
    fn bins_parse() {
        let b = parse_bins(&["etcd=/opt/etcd".into()]).unwrap();
        assert_eq!(b[&Component::Etcd], PathBuf::from("/opt/etcd"));
        assert!(parse_bins(&["nope=/x".into()]).is_err());
        assert!(parse_bins(&["etcd".into()]).is_err());
    }

    #[test]
    fn cli_parses_up_flags() {
        let cli = Cli::try_parse_from([
            "harness",
            "up",
            "--name",
            "g",
            "--k8s-version",
            "1.36",
            "--nodes",
            "2",
            "--node-cpu",
            "4",
            "--feature-gates",
            "GenericWorkload=true",
        ])
        .unwrap();
        match cli.command {
            Command::Up(a) => {
                assert_eq!(a.name, "g");
                assert_eq!(a.nodes, 2);
                assert_eq!(a.tools.k8s_version(), "1.36");
                assert_eq!(a.provider, Provider::Local);
            }
            other => panic!("parsed as {other:?}"),
        }
    }
}

#[cfg(test)]
mod kind_cli_tests {
    use super::*;

    #[test]
    fn kind_flags_parse() {
        let cli = Cli::try_parse_from([
            "harness",
            "up",
            "--provider",
            "kind",
            "--name",
            "e2e",
            "--config",
            "kind-configs/gang-1.37.yaml",
            "--kueue",
        ])
        .unwrap();
        match cli.command {
            Command::Up(a) => {
                assert_eq!(a.provider, Provider::Kind);
                assert_eq!(
                    a.kind.config.as_deref(),
                    Some(Path::new("kind-configs/gang-1.37.yaml"))
                );
                assert!(a.kind.kueue);
                assert_eq!(a.kind.kind_profile, "baseline");
                assert_eq!(a.tools.k8s_version, None);
                assert_eq!(a.tools.k8s_version(), "1.37");
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn hpcc_flags_parse_and_depend_on_hpcc() {
        let cli = Cli::try_parse_from([
            "harness",
            "up",
            "--name",
            "e2e",
            "--hpcc",
            "jobset",
            "--hpcc-chart",
            "./poc",
            "--hpcc-values",
            "v.yaml",
            "--hpcc-workers",
            "4",
            "--keep",
        ])
        .unwrap();
        let Command::Up(a) = cli.command else {
            panic!("not up")
        };
        assert_eq!(a.hpcc.hpcc, Some(crate::install::hpcc::HpccMode::Jobset));
        assert_eq!(a.hpcc.hpcc_chart.as_deref(), Some("./poc"));
        assert_eq!(a.hpcc.hpcc_workers, Some(4));
        assert_eq!(a.hpcc.hpcc_timeout, 900);
        assert!(a.hpcc.keep);
        for bad in [
            vec!["harness", "up", "--hpcc-chart", "./poc"],
            vec!["harness", "up", "--hpcc-workers", "2"],
            vec!["harness", "up", "--hpcc", "baseline", "--hpcc-workers", "0"],
            vec!["harness", "up", "--hpcc", "roxie"],
        ] {
            let e = Cli::try_parse_from(&bad).unwrap_err();
            assert!(e.use_stderr(), "{bad:?} parsed");
        }
    }

    #[test]
    fn hpcc_on_the_local_provider_is_refused_before_anything_starts() {
        let cli = Cli::try_parse_from(["harness", "up", "--name", "never", "--hpcc", "baseline"])
            .unwrap();
        let Command::Up(a) = cli.command else {
            panic!("not up")
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        let e = rt.block_on(up(*a)).unwrap_err();
        assert_eq!(error::exit_code(&e), 2);
        assert!(e.to_string().contains("--provider kind"), "{e}");
        assert!(
            !crate::cluster::state::cluster_dir("never")
                .join("state.json")
                .exists()
        );
    }
}
