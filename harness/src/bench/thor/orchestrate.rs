//! `harness bench thor`: each mode of a scenario on a fresh local cluster,
//! the Thor drivers inside one measurement window, as one Result
//! (`result`), rendered by `report` and judged against a stored baseline by
//! `baseline`.

use crate::bench::thor::dry_run;
use crate::bench::thor::existing;
use crate::bench::thor::run;
use crate::bench::thor::runs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::bench::core::baseline;
use crate::bench::thor::result::ThorResult;
use crate::bench::thor::runs::Runs;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::pprof;
use crate::tools::Component;
use crate::workload::thor::Mode;
use crate::workload::thor::scenario::{self, ThorScenario};

pub struct ThorBenchOptions {
    pub scenario: PathBuf,
    /// None: the scenario's modes.
    pub modes: Option<Vec<Mode>>,
    pub repeat: u32,
    /// Seed of the run order (`--seed`); None: one from the clock, printed
    /// and kept in the Result.
    pub seed: Option<u64>,
    pub bins: BTreeMap<Component, PathBuf>,
    /// Name prefix of the clusters (each mode gets a fresh one).
    pub cluster_prefix: String,
    /// `--set key.path=value` overrides of the scenario.
    pub overrides: Vec<String>,
    /// Where `result.json` is written as each mode finishes (so a later
    /// failure loses nothing); None: nowhere.
    pub out: Option<PathBuf>,
    /// Also scrape the API server's and etcd's metrics every second into
    /// each run's timeline (`--scrape-metrics`; costs API server CPU).
    pub scrape: bool,
    /// pprof profiles of kube-apiserver and etcd to take in each run
    /// (into `<out>/profiles/`), and the CPU profile's length in seconds.
    pub profiles: Option<(Vec<pprof::Kind>, u32)>,
    /// Run on this cluster the harness did not start (`--provider
    /// existing`) instead of fresh local clusters.
    pub existing: Option<existing::ExistingTarget>,
    /// Thor's pods on real nodes (`--real-node`), whatever the scenario
    /// says.
    pub real_node: bool,
    /// Run on fresh kind clusters (`--provider kind`) instead of local ones.
    pub kind: Option<KindBench>,
}

/// `bench thor --provider kind`: where the node images come from and the
/// repository whose kind-configs/ give each mode's cluster.
pub struct KindBench {
    pub images: crate::cluster::kind::KindImages,
    pub root: PathBuf,
}

/// What `bench thor` checks before it starts any cluster: the scenario
/// (every rule `validate` applies), `--out` writable, the baseline to
/// compare with loadable, the one to record inside `baselines/`.
pub struct Preflight {
    pub scenario: ThorScenario,
}

/// Check everything a benchmark needs before a cluster starts; errors are
/// bad input naming what and where.
pub fn preflight(
    opts: &ThorBenchOptions,
    root: Option<&Path>,
    compare: bool,
    record: bool,
) -> Result<Preflight> {
    let mut s = scenario::load_with(&opts.scenario, &scenario::parse_overrides(&opts.overrides)?)?;
    // kind's nodes are real kubelets.
    s.cluster.real_node |= opts.real_node || opts.kind.is_some();
    if let Some(out) = &opts.out {
        std::fs::create_dir_all(out)
            .and_then(|()| tempfile::NamedTempFile::new_in(out).map(|_| ()))
            .map_err(|e| {
                crate::error::bad_input(format!("--out {}: not writable: {e}", out.display()))
            })?;
    }
    if compare || record {
        let root = root.ok_or_else(|| {
            crate::error::bad_input(
                "--compare/--record need the repository (baselines/): run from inside it",
            )
        })?;
        let profile = baseline::variant(&s.cluster.control_plane.label(), s.cluster.real_node);
        let provider = match (&opts.existing, &opts.kind) {
            (Some(_), _) => crate::cluster::existing::PROVIDER,
            (None, Some(_)) => "kind",
            (None, None) => "local",
        };
        let path = baseline::path_of(root, provider, &s.cluster.k8s_minor, &s.name, &profile);
        if !path.starts_with(root.join("baselines")) {
            return Err(crate::error::bad_input(format!(
                "{}: outside baselines/",
                path.display()
            )));
        }
        if compare {
            baseline::load(&path)?;
        }
    }
    Ok(Preflight { scenario: s })
}

/// The cluster a mode runs on: the scenario's nodes, and for gang mode the
/// release's gang feature set.
fn mode_cluster(s: &ThorScenario, k8s: K8sRelease, mode: Mode, name: String) -> ClusterSpec {
    let gang = mode == Mode::JobsetGang;
    ClusterSpec {
        name,
        k8s_minor: k8s.minor.into(),
        feature_gates: if gang {
            k8s.gang_feature_gates()
        } else {
            Default::default()
        },
        runtime_config: if gang {
            k8s.gang_runtime_config()
        } else {
            Default::default()
        },
        nodes: NodeSpec {
            count: s.cluster.nodes as usize,
            cpu: s.node_cpu(),
            memory: s.cluster.node_memory.clone(),
            pods: s.cluster.node_pods,
        },
        kubelet: s.kubelet,
        control_plane: s.cluster.control_plane.clone(),
        kueue: mode
            .needs_kueue()
            .then(crate::cluster::spec::KueueSpec::default),
        real_node: s.cluster.real_node,
    }
}

/// The kubectl binary a scenario's HPCC forks: HPCC's own (1.29.7) or the
/// cluster's.
fn kubectl_component(s: &ThorScenario) -> Component {
    if s.kubectl.version.trim_start_matches('v') == crate::tools::versions::HPCC_KUBECTL_VERSION {
        Component::HpccKubectl
    } else {
        Component::Kubectl
    }
}

/// `--dry-run` on an existing cluster: the probe, then what each mode
/// would create and call (bench::thor::dry_run); nothing is created.
pub async fn plan_only(opts: &ThorBenchOptions) -> Result<String> {
    let s = preflight(opts, None, false, false)?.scenario;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    let target = opts.existing.as_ref().ok_or_else(|| {
        crate::error::bad_input(
            "--dry-run is for --provider existing (a local run creates its own cluster)",
        )
    })?;
    dry_run::dry_run(target, &s, &modes).await
}

/// Run every mode (× repeats), each on a fresh cluster torn down after
/// (or in a fresh namespace of an existing cluster, removed after).
pub async fn bench_thor(opts: &ThorBenchOptions) -> Result<ThorResult> {
    let mut s = preflight(opts, None, false, false)?.scenario;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    if let Some(target) = &opts.existing {
        if let Some(m) = modes.iter().find(|m| m.needs_kueue()) {
            return Err(crate::error::bad_input(format!(
                "{} runs on the local provider only: it creates cluster-wide Kueue queues",
                m.name()
            )));
        }
        let r = on_existing(opts, target, &mut s, &modes).await;
        if r.is_err() {
            // Nothing that carries the run id stays behind.
            if let Err(e) = existing::cleanup(target).await {
                return r.map_err(|r| r.context(format!("cleaning up failed too: {e:#}")));
            }
        }
        return r;
    }
    if let Some(kind) = &opts.kind {
        return on_kind(opts, kind.images, &kind.root, &mut s, &modes).await;
    }
    let k8s = K8sRelease::parse(&s.cluster.k8s_minor)?;
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), kubectl_component(&s)).await?;
    let profile_req = match (&opts.profiles, &opts.out) {
        (Some((kinds, seconds)), Some(out)) => Some(pprof::Request {
            kinds: kinds.clone(),
            seconds: *seconds,
            dir: out.join("profiles"),
        }),
        (Some(_), None) => return Err(crate::error::bad_input("--profile needs --out")),
        _ => None,
    };
    let mut runs = Runs::start(&plan_of(opts, &modes), &s, "local", k8s.version, None);
    for (rep, mode) in runs.order() {
        let profile = profile_req
            .as_ref()
            .map(|r| (r, format!("{}-{rep}", mode.name())));
        let name = format!("{}-{}-{rep}", opts.cluster_prefix, mode.name());
        let cluster = lifecycle::up(&UpOptions {
            spec: mode_cluster(&s, k8s, mode, name.clone()),
            bins: opts.bins.clone(),
            timeout: Duration::from_secs(180),
        })
        .await?;
        let step = runs.step(&s, mode, rep, "");
        let r = lifecycle::while_alive(&cluster, async {
            let site = run::Site::local(&cluster, mode).await?;
            run::run_mode(&cluster, &site, &s, mode, &kubectl, opts.scrape, profile).await
        })
        .await;
        let dir = cluster.layout.root.clone();
        let (r, timeline) = end_of_run(cluster, r, &name, mode, &dir)?;
        runs.add(step, mode, rep, r, timeline)?;
    }
    Ok(runs.progress.result)
}

/// A run's cluster after its run: down when it went well; on failure kept
/// (its logs say why) and the error says where.
fn end_of_run<T>(
    cluster: impl Cluster,
    r: Result<T>,
    name: &str,
    mode: Mode,
    dir: &Path,
) -> Result<T> {
    match r {
        Ok(v) => {
            cluster.down(false)?;
            Ok(v)
        }
        Err(e) => {
            let down = cluster.down(true);
            let e = e.context(format!(
                "{} mode on cluster {name} (its state and logs are kept in {}; `harness down --name {name}` removes them)",
                mode.name(),
                dir.display()
            ));
            Err(match down {
                Ok(()) => e,
                Err(d) => e.context(format!("stopping the cluster failed too: {d:#}")),
            })
        }
    }
}

/// The runs' order and where their Result goes, from the options.
fn plan_of<'a>(opts: &'a ThorBenchOptions, modes: &'a [Mode]) -> runs::Plan<'a> {
    runs::Plan {
        scenario_file: &opts.scenario,
        modes,
        repeat: opts.repeat,
        seed: opts.seed,
        out: opts.out.as_deref(),
    }
}

/// Every mode on an existing cluster: probe first (nothing is created
/// when something is missing), then each run in its own namespace,
/// removed after it.
async fn on_existing(
    opts: &ThorBenchOptions,
    target: &existing::ExistingTarget,
    s: &mut ThorScenario,
    modes: &[Mode],
) -> Result<ThorResult> {
    if modes.is_empty() {
        return Err(crate::error::bad_input("no modes to run"));
    }
    let (cluster, caps) = existing::prepare(target, s, modes).await?;
    // The templates follow the server's release, not the scenario's.
    let k8s = existing::server_release(&caps)?;
    s.cluster.k8s_minor = k8s.minor.to_string();
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), kubectl_component(s)).await?;
    let version = caps.server_version.trim_start_matches('v').to_string();
    let provider = crate::cluster::existing::PROVIDER;
    let mut runs = Runs::start(&plan_of(opts, modes), s, provider, &version, Some(caps));
    let tokens = existing::token_dir()?;
    for (rep, mode) in runs.order() {
        let site = existing::site(
            &cluster,
            target,
            mode,
            rep,
            tokens.path(),
            s.cluster.real_node,
        )
        .await?;
        let step = runs.step(s, mode, rep, &format!(" in namespace {}", site.namespace));
        let (r, timeline) =
            run::run_mode(&cluster, &site, s, mode, &kubectl, opts.scrape, None).await?;
        existing::cleanup(target).await?;
        runs.add(step, mode, rep, r, timeline)?;
    }
    Ok(runs.progress.result)
}

/// Every mode (× repeats) on a fresh kind cluster of the mode's profile
/// (kind-configs/: baseline, jobset, gang; jobset-kueue on jobset with
/// Kueue installed). Thor's pods are real containers on the worker's
/// kubelet (agnhost, loaded by `up`); HPCC's identities are
/// ServiceAccounts in a namespace of the run, exactly as on an existing
/// cluster (existing::site); the window reads the kind nodes (the audit
/// log on the host, etcd's metrics and each component's CPU and memory
/// through `docker exec`).
async fn on_kind(
    opts: &ThorBenchOptions,
    images: crate::cluster::kind::KindImages,
    root: &Path,
    s: &mut ThorScenario,
    modes: &[Mode],
) -> Result<ThorResult> {
    use crate::cluster::existing::{ExistingCluster, ExistingOptions};
    use crate::cluster::kind::{KindSpec, config};
    s.cluster.real_node = true;
    let k8s = K8sRelease::parse(&s.cluster.k8s_minor)?;
    let configs = modes
        .iter()
        .map(|&m| config::default_config(root, kind_profile(m), k8s.minor))
        .collect::<Result<Vec<_>>>()?;
    for c in &configs {
        lifecycle::validate_kind_config(c)?;
    }
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), kubectl_component(s)).await?;
    let mut runs = Runs::start(&plan_of(opts, modes), s, "kind", k8s.version, None);
    let tokens = existing::token_dir()?;
    for (rep, mode) in runs.order() {
        let name = format!("{}-{}-{rep}", opts.cluster_prefix, mode.name());
        let cluster = lifecycle::up_kind(&lifecycle::KindUpOptions {
            spec: KindSpec {
                name: name.clone(),
                config: config::default_config(root, kind_profile(mode), k8s.minor)?,
                k8s_version: Some(k8s.version.to_string()),
                wait: Duration::from_secs(300),
                images,
            },
            kueue: mode.needs_kueue(),
            kwok: false,
            timeout: Duration::from_secs(300),
        })
        .await?;
        // What the nodes run (a pulled image may be another patch).
        runs.result().k8s_version = cluster.state.k8s_version.clone();
        let target = existing::ExistingTarget {
            cluster: ExistingOptions {
                kubeconfig: cluster.state.kubeconfig.clone(),
                audit_log: Some(cluster.state.audit_log.clone()),
                ..Default::default()
            },
            run_id: crate::cluster::existing::site::new_run_id(),
            yes: true,
            node_image: crate::cluster::local::realnode::image::image_name(
                &cluster.state.k8s_version,
            ),
        };
        let step = runs.step(s, mode, rep, &format!(" on kind cluster {name}"));
        let r = lifecycle::while_alive(&cluster, async {
            let mut ex = ExistingCluster::attach(target.cluster.clone()).await?;
            ex.run_id = target.run_id.clone();
            let site = existing::site(&ex, &target, mode, rep, tokens.path(), true).await?;
            run::run_mode(&cluster, &site, s, mode, &kubectl, opts.scrape, None).await
        })
        .await;
        let dir = cluster.root.clone();
        let kind_prefix = format!("{}-", cluster.state.kind_cluster);
        let (mut r, timeline) = end_of_run(cluster, r, &name, mode, &dir)?;
        // Each run has its own cluster (node names) and namespace: named
        // alike so that runs and modes line up by client.
        let ns = format!(
            "system:serviceaccount:{}:",
            existing::namespace_of(&target.run_id, mode, rep)
        );
        let same = |c: &str| {
            c.replace(&ns, "system:serviceaccount:<run>:")
                .replace(&kind_prefix, "<kind>-")
        };
        r.run.window.rename_clients(same);
        r.thor_agent_user = same(&r.thor_agent_user);
        runs.add(step, mode, rep, r, timeline)?;
    }
    Ok(runs.progress.result)
}

/// The kind profile a mode runs on: Thor's two shapes on the same
/// cluster (baseline and jobset differ only in name), gang scheduling on
/// the release's gang gates, Kueue beside JobSet.
pub fn kind_profile(mode: Mode) -> &'static str {
    match mode {
        Mode::Baseline => "baseline",
        Mode::Jobset | Mode::JobsetKueue => "jobset",
        Mode::JobsetGang => "gang",
    }
}
