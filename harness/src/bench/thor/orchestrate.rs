//! `harness bench thor`: each mode of a scenario on the target (a fresh
//! cluster of the chosen provider per run, or an existing cluster), the
//! Thor drivers inside one measurement window, as one Result
//! (`result`), rendered by `report` and judged against a stored baseline by
//! `baseline`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::core::baseline;
use crate::bench::thor::result::ThorResult;
use crate::bench::thor::run;
use crate::bench::thor::runs;
use crate::bench::thor::runs::Runs;
use crate::cluster::{ClusterSpec, NodeSpec, Provider};
use crate::k8s::K8sRelease;
use crate::lifecycle::thor::existing;
use crate::lifecycle::thor::place::Place;
use crate::lifecycle::{self, Target};
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
    /// `--shard K/N`: run only this slice of the rounds (needs `seed`).
    pub shard: Option<crate::bench::core::shard::Shard>,
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
    /// Where each mode's run goes: a fresh local or kind cluster (kind: of
    /// the mode's profile, `kind_profile`), or a namespace of its own on
    /// an existing cluster.
    pub provider: Provider,
    /// Thor's pods on real nodes (`--real-node`), whatever the scenario
    /// says (kind's always are).
    pub real_node: bool,
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
    if let Some(sh) = opts.shard {
        sh.check(opts.repeat, opts.seed)?;
    }
    let mut s = scenario::load_with(&opts.scenario, &scenario::parse_overrides(&opts.overrides)?)?;
    // kind's nodes are real kubelets.
    s.cluster.real_node |= opts.provider.real_nodes(opts.real_node);
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
        let path = baseline::file_for(
            root,
            opts.provider.name(),
            &s.cluster.k8s_minor,
            &s.name,
            &s.cluster.control_plane.label(),
            s.cluster.real_node,
        );
        if !path.starts_with(root.join("baselines")) {
            return Err(crate::error::bad_input(format!(
                "{}: outside baselines/",
                path.display()
            )));
        }
        if compare {
            // Its modes checked too: which a baseline may hold is its
            // workload's.
            crate::bench::recorded::load(&path)?;
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
/// would create and call (lifecycle::thor::dry_run); nothing is created.
pub async fn plan_only(opts: &ThorBenchOptions) -> Result<String> {
    let s = preflight(opts, None, false, false)?.scenario;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    let target = opts.provider.existing().ok_or_else(|| {
        crate::error::bad_input(
            "--dry-run is for --provider existing (a local run creates its own cluster)",
        )
    })?;
    crate::lifecycle::thor::dry_run::dry_run(target, &s, &modes).await
}

/// Run every mode (× repeats), each on a fresh cluster torn down after
/// (or in a fresh namespace of an existing cluster, removed after): one
/// path for every provider (`lifecycle::Target`).
pub async fn bench_thor(opts: &ThorBenchOptions) -> Result<ThorResult> {
    let mut s = preflight(opts, None, false, false)?.scenario;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    if modes.is_empty() {
        return Err(crate::error::bad_input("no modes to run"));
    }
    let kueue = modes.iter().find(|m| m.needs_kueue()).map(|m| {
        format!(
            "{} runs on the local provider only: it creates cluster-wide Kueue queues",
            m.name()
        )
    });
    let profiles: Vec<Option<&str>> = modes.iter().map(|&m| Some(kind_profile(m))).collect();
    lifecycle::target::preflight(&opts.provider, &profiles, &s.cluster.k8s_minor, kueue)?;
    let target = Target::new(&opts.provider, opts.bins.clone(), &opts.cluster_prefix).await?;
    let r = runs_on(&target, opts, &mut s, &modes).await;
    if r.is_err()
        && target.attached().is_some()
        && let Err(e) = target.tear_down().await
    {
        // Nothing that carries the run id stays behind.
        return r.map_err(|r| r.context(format!("cleaning up failed too: {e:#}")));
    }
    r
}

/// Every run on `target`: an existing cluster probed first (nothing is
/// created when something is missing; the templates follow its release),
/// then each mode's rounds, each run's place made on its cluster (HPCC's
/// identities: the local provider's certificates, or ServiceAccounts in
/// a namespace of the run's on kind and existing clusters).
async fn runs_on(
    target: &Target,
    opts: &ThorBenchOptions,
    s: &mut ThorScenario,
    modes: &[Mode],
) -> Result<ThorResult> {
    let caps = match target.attached() {
        Some((c, t)) => Some(existing::prepare(c, t, s, modes).await?),
        None => None,
    };
    let k8s = match &caps {
        Some(caps) => {
            let k8s = caps.server_release()?;
            s.cluster.k8s_minor = k8s.minor.to_string();
            k8s
        }
        None => K8sRelease::parse(&s.cluster.k8s_minor)?,
    };
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), kubectl_component(s)).await?;
    let profile_req = match (&opts.profiles, &opts.out) {
        (Some((kinds, seconds)), Some(out)) => Some(pprof::Request {
            kinds: kinds.clone(),
            seconds: *seconds,
            dir: out.join("profiles"),
        }),
        (Some(_), None) => return Err(crate::error::bad_input("--profile needs --out")),
        _ => None,
    };
    let version = match &caps {
        Some(c) => c.server_version.trim_start_matches('v').to_string(),
        None => k8s.version.to_string(),
    };
    let provider = target.provider_name();
    let mut runs = Runs::start(&plan_of(opts, modes), s, provider, &version, caps);
    let tokens = lifecycle::target::token_dir()?;
    for (rep, mode) in runs.order() {
        let profile = profile_req
            .as_ref()
            .map(|r| (r, format!("{}-{rep}", mode.name())));
        let spec = mode_cluster(s, k8s, mode, String::new());
        let run = format!("{}-{rep}", mode.name());
        let on = target
            .cluster(&spec, &run, Some(kind_profile(mode)))
            .await?;
        let place = Place::of(&on, mode, rep)?;
        if let Some(release) = on.get().nodes_release() {
            // What the nodes run (a pulled image may be another patch).
            runs.result().k8s_version = release.to_string();
        }
        let step = runs.step(s, mode, rep, &place.where_);
        let r = lifecycle::while_alive(on.get(), async {
            let site = place.site(&on, s, mode, rep, tokens.path()).await?;
            run::run_mode(on.get(), &site, s, mode, &kubectl, opts.scrape, profile).await
        })
        .await;
        let same = lifecycle::same_clients(on.get(), place.namespace.as_deref());
        let (mut r, timeline) = on.finish(r, &format!("{} mode", mode.name())).await?;
        // Each run has its own cluster (node names) and namespace: named
        // alike so that runs and modes line up by client.
        r.run.window.rename_clients(&same);
        r.thor_agent_user = same(&r.thor_agent_user);
        runs.add(step, mode, rep, r, timeline)?;
    }
    Ok(runs.progress.result)
}

/// The runs' order and where their Result goes, from the options.
fn plan_of<'a>(opts: &'a ThorBenchOptions, modes: &'a [Mode]) -> runs::Plan<'a> {
    runs::Plan {
        scenario_file: &opts.scenario,
        modes,
        repeat: opts.repeat,
        seed: opts.seed,
        shard: opts.shard,
        out: opts.out.as_deref(),
    }
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
