//! `harness up` and `harness down`: bring a cluster up with the chosen
//! provider (and HPCC on kind), print how to use it; stop it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use harness::cluster::profile::{ControlPlane, Profile};
use harness::cluster::spec::{KubeletModel, KueueSpec};
use harness::cluster::{Ask, KindChoice, Provider};
use harness::cluster::{Cluster, ClusterSpec, NodeSpec};
use harness::error::bad_input;
use harness::k8s::K8sRelease;
use harness::lifecycle::{self, HpccUp, UpOptions};
use harness::signal::EXIT_INTERRUPTED;

use crate::cli::args::{parse_bins, parse_gates, parse_profile, parse_runtime_config};
use crate::cli::interrupt::{Made, or_tear_down};
use crate::cli::provider::ProviderArgs;
use crate::cli::tools::ToolsArgs;

/// `up --timeout`'s defaults per provider (seconds).
const LOCAL_TIMEOUT_S: u64 = 120;
const KIND_TIMEOUT_S: u64 = 300;

#[derive(Args, Debug)]
pub struct UpArgs {
    #[command(flatten)]
    pub target: ProviderArgs,
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
    /// Seconds to wait for readiness after the processes started
    /// [default: 120 on the local provider; 300 on kind, whose nodes,
    /// images and controllers start as containers and take longer on a
    /// busy machine (JobSet's controller took over 120 s under a load
    /// average of 8 on 2 cores)].
    #[arg(long)]
    pub timeout: Option<u64>,
    /// The fake kubelets' API traffic per pod: kwok's own stages
    /// (kwok-minimal) or the status PATCHes and events of a real kubelet
    /// (kubelet-like; manifests/kwok/README.md).
    #[arg(long, default_value = "kwok-minimal", value_parser = parse_kubelet)]
    pub kubelet: KubeletModel,
    /// Control-plane profile: default (a stock cluster: no rate or
    /// inflight flag) or tuned (Kubernetes' 5000-node validation values:
    /// controller-manager and scheduler 100 QPS, API server 3000/1000
    /// inflight; README "Control-plane profiles").
    #[arg(long = "control-plane", default_value = "default", value_parser = parse_profile)]
    pub control_plane: Profile,
    #[command(flatten)]
    pub kueue: KueueArgs,
    #[command(flatten)]
    pub hpcc: HpccArgs,
}

/// `up --kueue …`: Kueue beside JobSet.
#[derive(Args, Debug, Clone, Default)]
pub struct KueueArgs {
    /// Also run Kueue (the pinned version): on the local provider its
    /// controller as a process built from Go modules, on kind its
    /// release manifest.
    #[arg(long)]
    pub kueue: bool,
    /// local: Kueue's waitForPodsReady timeout — evict an admitted
    /// workload whose pods are not all Ready within this many seconds
    /// [default: Kueue's, 30 min in v0.19].
    #[arg(long, value_name = "SECONDS", requires = "kueue",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub kueue_pods_ready_timeout: Option<u64>,
    /// local: with --kueue-pods-ready-timeout, admit the next workload
    /// only once the admitted ones' pods are Ready (waitForPodsReady.blockAdmission).
    #[arg(long, requires = "kueue_pods_ready_timeout")]
    pub kueue_block_admission: bool,
}

impl KueueArgs {
    pub fn spec(&self) -> Option<KueueSpec> {
        self.kueue.then_some(KueueSpec {
            pods_ready_timeout_s: self.kueue_pods_ready_timeout,
            block_admission: self.kueue_block_admission,
        })
    }
}

/// `up --hpcc …`: HPCC Systems from its Helm chart once the cluster is up.
#[derive(Args, Debug, Clone)]
pub struct HpccArgs {
    /// Install HPCC Systems (needs a provider that runs containers: kind).
    #[arg(long, value_enum)]
    pub hpcc: Option<harness::install::hpcc::HpccMode>,
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
    pub fn options(&self) -> Result<Option<harness::install::hpcc::HpccOptions>> {
        let Some(mode) = self.hpcc else {
            return Ok(None);
        };
        let opts = harness::install::hpcc::HpccOptions {
            mode,
            chart: self.hpcc_chart.clone(),
            values: self.hpcc_values.clone(),
            workers: self.hpcc_workers,
            timeout: Duration::from_secs(self.hpcc_timeout),
        };
        harness::install::hpcc::preflight(&opts)?;
        Ok(Some(opts))
    }
}

fn parse_kubelet(s: &str) -> Result<KubeletModel, String> {
    s.parse()
}

#[derive(Args, Debug)]
pub struct DownArgs {
    #[arg(long, default_value = "dev")]
    pub name: String,
    /// Keep the state directory (logs, audit log, certificates).
    #[arg(long)]
    pub keep: bool,
    /// A cluster the harness did not start (`--provider existing
    /// --kubeconfig F`): refused, the harness never stops one.
    #[arg(long)]
    pub provider: Option<String>,
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
}

/// Every `up` flag checked before any process or directory is made (issue
/// 30): the name, the release, counts and timeouts at least 1, node
/// capacities as Kubernetes quantities above zero, and feature gates and
/// runtime-config keys against the release's facts (harness/data/k8s).
/// Exit 2 naming the flag.
pub fn preflight(args: &UpArgs) -> Result<()> {
    harness::cluster::state::validate_name(&args.name)?;
    let k8s = K8sRelease::parse(args.tools.k8s_version())?;
    for (flag, n) in [
        ("--nodes", args.nodes as u64),
        ("--node-pods", u64::from(args.node_pods)),
        ("--timeout", args.timeout.unwrap_or(1)),
        ("--hpcc-timeout", args.hpcc.hpcc_timeout),
    ] {
        if n == 0 {
            return Err(bad_input(format!("{flag} 0: must be at least 1")));
        }
    }
    for (flag, q) in [
        ("--node-cpu", &args.node_cpu),
        ("--node-memory", &args.node_memory),
    ] {
        harness::k8s::names::positive_quantity(q).map_err(|e| bad_input(format!("{flag}: {e}")))?;
    }
    let gates = parse_gates(&args.feature_gates)?;
    let runtime = parse_runtime_config(&args.runtime_config)?;
    if let Some(facts) = harness::k8s::facts::for_minor(k8s.minor) {
        for gate in gates.keys() {
            if facts.gate(gate).is_none() {
                let similar = facts.similar_gates(gate);
                let hint = if similar.is_empty() {
                    String::new()
                } else {
                    format!(" (similar: {})", similar.join(", "))
                };
                return Err(bad_input(format!(
                    "--feature-gates: {gate:?} is not a feature gate of Kubernetes {}{hint}",
                    k8s.minor
                )));
            }
        }
        for key in runtime.keys() {
            if !facts.has_runtime_config_key(key) {
                return Err(bad_input(format!(
                    "--runtime-config: API {key:?} does not exist in Kubernetes {}",
                    k8s.minor
                )));
            }
        }
    }
    parse_bins(&args.tools.bins)?;
    Ok(())
}

pub async fn up(args: UpArgs) -> Result<i32> {
    preflight(&args)?;
    let provider = args.target.provider("")?;
    provider.check(Ask::Start, "up")?;
    match &provider {
        Provider::Local { .. } => {
            if args.hpcc.hpcc.is_some() {
                return Err(bad_input(
                    "--hpcc needs --provider kind: the local provider's kwok nodes run no containers, \
                     so HPCC's pods could never start",
                ));
            }
            up_local(args, &provider).await
        }
        Provider::Kind(choice) => up_kind(&args, &provider, choice).await,
        Provider::Existing(_) => unreachable!("refused by Ask::Start above"),
    }
}

/// Build the kind and kubectl the kind provider lacks (neither on PATH
/// nor linked in the harness cache), from Go modules as `harness tools
/// install --kind` does, and link them where the provider looks: a first
/// `up --provider kind` needs no command before it. Docker is not built:
/// without an engine the provider says so (exit 3).
async fn kind_tools(tools: &ToolsArgs) -> Result<()> {
    use harness::tools::Component;
    let search = harness::cluster::kind::commands::KindEnv::from_process().search_path;
    let cwd = std::env::current_dir()?;
    let lacks: Vec<Component> = [Component::Kind, Component::Kubectl]
        .into_iter()
        .filter(|c| which::which_in(c.name(), Some(&search), &cwd).is_err())
        .collect();
    if lacks.is_empty() {
        return Ok(());
    }
    let r = crate::cli::tools::resolver(tools)?;
    for c in lacks {
        let step = harness::progress::Step::start(format!(
            "{} for the kind provider (not on PATH: built once, then linked in {})",
            c.name(),
            harness::cluster::kind::commands::tools_dir().display()
        ));
        let r = r.clone();
        let got = tokio::task::spawn_blocking(move || r.resolve(c))
            .await
            .map_err(|e| anyhow::anyhow!("building {}: {e}", c.name()))??;
        step.done(&format!(
            "{} {} ({})",
            got.component, got.version, got.source
        ));
    }
    harness::cluster::kind::commands::link_tools(r.k8s)?;
    Ok(())
}

async fn up_kind(args: &UpArgs, provider: &Provider, choice: &KindChoice) -> Result<i32> {
    use harness::cluster::kind;
    harness::cluster::state::validate_name(&args.name)?;
    if !args.feature_gates.trim().is_empty() || !args.runtime_config.trim().is_empty() {
        provider.check(Ask::Gates, "--feature-gates/--runtime-config")?;
    }
    if !args.tools.bins.is_empty() {
        provider.check(Ask::Binaries, "--bin")?;
    }
    if args.kubelet != KubeletModel::default() {
        provider.check(Ask::KubeletModel, "--kubelet")?;
    }
    if args.control_plane != Profile::Default {
        provider.check(Ask::ControlPlane, "--control-plane")?;
    }
    if args.kueue.kueue_pods_ready_timeout.is_some() {
        provider.check(Ask::KueueOptions, "--kueue-pods-ready-timeout")?;
    }
    let minor = K8sRelease::parse(args.tools.k8s_version())?.minor;
    let config = harness::lifecycle::target::kind_config(choice, None, minor)?;
    // A missing jobset chart, a bad values file or no helm, and a bad
    // config, fail before anything is built or any cluster exists.
    let hpcc = args.hpcc.options()?;
    kind::config::load_profile(&config)?;
    kind_tools(&args.tools).await?;
    if let Some(h) = &hpcc {
        // The chart and its image, before any cluster exists (exit 3).
        let docker = harness::tools::kindnode::docker::docker()?;
        let h = h.clone();
        let image =
            tokio::task::spawn_blocking(move || harness::install::hpcc::check_sources(&h, &docker))
                .await??;
        eprintln!("harness: HPCC's chart can be read and its image {image} is in the engine");
    }
    let opts = lifecycle::KindUpOptions {
        spec: kind::KindSpec {
            name: args.name.clone(),
            config,
            k8s_version: args.tools.k8s_version.clone(),
            wait: Duration::from_secs(args.timeout.unwrap_or(KIND_TIMEOUT_S)),
            images: choice.images,
        },
        kueue: args.kueue.kueue,
        kwok: choice.kwok,
        timeout: Duration::from_secs(args.timeout.unwrap_or(KIND_TIMEOUT_S)),
    };
    let started = Instant::now();
    let up = lifecycle::up_kind(&opts);
    let cluster = match or_tear_down(up, provider, Made::Named(&args.name)).await? {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let cluster = match &hpcc {
        None => cluster,
        Some(h) => match lifecycle::install_hpcc(cluster, h, args.hpcc.keep).await? {
            HpccUp::Ready(c, rec) => {
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
                c
            }
            HpccUp::Interrupted(sig) => {
                eprintln!("\nharness: {sig}: tore down cluster {:?}", args.name);
                return Ok(EXIT_INTERRUPTED);
            }
        },
    };
    ready(
        &format!(
            "kind cluster {:?} ({}, Kubernetes v{})",
            args.name, cluster.state.kind_cluster, cluster.state.k8s_version
        ),
        started,
        &cluster.root,
        cluster.kubeconfig(),
    )
}

/// What `up` says of a cluster that is ready: how long it took and where
/// its state is on standard error, the `export KUBECONFIG=…` line on
/// standard output (for `eval`); exit 0.
fn ready(
    what: &str,
    started: Instant,
    state: &std::path::Path,
    kubeconfig: &std::path::Path,
) -> Result<i32> {
    eprintln!(
        "{what} ready in {:.1} s; state in {}",
        started.elapsed().as_secs_f64(),
        state.display()
    );
    println!("export KUBECONFIG={}", kubeconfig.display());
    Ok(0)
}

async fn up_local(args: UpArgs, provider: &Provider) -> Result<i32> {
    harness::cluster::state::validate_name(&args.name)?;
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
        kubelet: args.kubelet,
        control_plane: ControlPlane::of(args.control_plane),
        kueue: args.kueue.spec(),
        real_node: args.target.real_node,
    };
    let opts = UpOptions {
        spec,
        bins: parse_bins(&args.tools.bins)?,
        timeout: Duration::from_secs(args.timeout.unwrap_or(LOCAL_TIMEOUT_S)),
    };
    let started = Instant::now();
    let cluster =
        match or_tear_down(lifecycle::up(&opts), provider, Made::Named(&args.name)).await? {
            Ok(c) => c,
            Err(code) => return Ok(code),
        };
    ready(
        &format!(
            "cluster {:?} (Kubernetes v{})",
            args.name, cluster.state.k8s_version
        ),
        started,
        &cluster.layout.root,
        cluster.kubeconfig(),
    )
}

pub fn down(args: &DownArgs) -> Result<i32> {
    if let Some(kc) = &args.kubeconfig {
        return Err(harness::cluster::existing::refuse_down(
            &kc.display().to_string(),
        ));
    }
    match args.provider.as_deref() {
        None | Some("local") | Some("kind") => {}
        Some("existing") => {
            return Err(harness::cluster::existing::refuse_down(
                "--provider existing",
            ));
        }
        Some(other) => {
            return Err(bad_input(format!(
                "--provider {other}: one of local, kind (existing clusters are never stopped)"
            )));
        }
    }
    let started = Instant::now();
    harness::cluster::state::clean_stale_locks();
    match lifecycle::down(&args.name, args.keep)? {
        lifecycle::Down::Stopped => {}
        lifecycle::Down::RemovedHalfMade => {
            eprintln!(
                "cluster {:?} had no state file (a start that died half-way): its directory was {}",
                args.name,
                if args.keep { "kept" } else { "removed" }
            );
            return Ok(0);
        }
        lifecycle::Down::RemovedDamaged { why, stopped } => {
            eprintln!(
                "cluster {:?} is damaged ({why}); stopped {} process(es) found under its directory{}, which was {}",
                args.name,
                stopped.len(),
                if stopped.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (pids {})",
                        stopped
                            .iter()
                            .map(i32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
                if args.keep { "kept" } else { "removed" }
            );
            return Ok(0);
        }
    }
    eprintln!(
        "cluster {:?} stopped in {:.1} s{}",
        args.name,
        started.elapsed().as_secs_f64(),
        if args.keep { " (state kept)" } else { "" }
    );
    Ok(0)
}
