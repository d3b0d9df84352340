//! `up`: provider start, then one bring-up sequence for every provider
//! (`bring_up`: installs, capacity, readiness; a failure downs the
//! half-started cluster): the local provider's (`up`) and kind's
//! (`up_kind`, whose capacity is its config's nodes). The one place that
//! composes the layers, so providers and installers stay independent of
//! each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use crate::cluster::kind::commands::KindEnv;
use crate::cluster::kind::{KindCluster, KindSpec};
use crate::cluster::local::LocalCluster;
use crate::cluster::{Cluster, ClusterSpec, node_ready};
use crate::install;
use crate::k8s::K8sRelease;
use crate::poll::Poll;
use crate::progress::Step;
use crate::signal::Raced;
use crate::tools::{Component, Resolver, Tools};

#[derive(Debug, Clone)]
pub struct UpOptions {
    pub spec: ClusterSpec,
    /// Explicit binaries (`--bin NAME=PATH`).
    pub bins: BTreeMap<Component, PathBuf>,
    pub timeout: Duration,
}

/// The release of a local cluster of this spec and what it runs beside
/// every cluster's binaries (`Component::CLUSTER`): Kueue, a real node's.
fn extra_tools(spec: &ClusterSpec) -> Result<(K8sRelease, Vec<Component>)> {
    let k8s = K8sRelease::parse(&spec.k8s_minor)?;
    let mut extra: Vec<Component> = spec.kueue.iter().map(|_| Component::Kueue).collect();
    if spec.real_node {
        extra.extend(Component::NODE);
    }
    Ok((k8s, extra))
}

/// Find or build every binary a local cluster of this spec runs.
pub async fn resolve_tools(
    spec: &ClusterSpec,
    bins: BTreeMap<Component, PathBuf>,
) -> Result<Tools> {
    let (k8s, extra) = extra_tools(spec)?;
    tokio::task::spawn_blocking(move || Resolver::from_env(k8s, bins).resolve_all(&extra))
        .await
        .context("tool resolution panicked")?
}

/// Every binary a local cluster of this spec runs, and its release:
/// what a test runner builds before the tests that start one.
pub fn tools_needed(spec: &ClusterSpec) -> Result<(K8sRelease, Vec<Component>)> {
    let (k8s, extra) = extra_tools(spec)?;
    Ok((k8s, Component::CLUSTER.into_iter().chain(extra).collect()))
}

/// Find or build one binary (one the local provider does not start, such
/// as HPCC's kubectl).
pub async fn resolve_tool(
    k8s: K8sRelease,
    bins: BTreeMap<Component, PathBuf>,
    c: Component,
) -> Result<PathBuf> {
    tokio::task::spawn_blocking(move || Resolver::from_env(k8s, bins).resolve(c).map(|r| r.path))
        .await
        .context("tool resolution panicked")?
}

/// Bring a local cluster up and wait until it is ready for work. On any
/// failure, what was started is stopped (logs stay in the state dir).
pub async fn up(opts: &UpOptions) -> Result<LocalCluster> {
    let tools = resolve_tools(&opts.spec, opts.bins.clone()).await?;
    let started = Instant::now();
    let cluster = LocalCluster::start(&opts.spec, &tools).await?;
    let failed = |c: &LocalCluster| {
        let name = &c.state.name;
        format!(
            "bringing up local cluster {name:?} (logs kept in {}; `harness down --name {name}` removes them)",
            c.layout.root.display()
        )
    };
    let finish = async |c: &mut LocalCluster| {
        finish_up(c, opts, &tools).await?;
        c.mark_ready()
    };
    bring_up("local", cluster, started, finish, true, failed).await
}

/// The one bring-up sequence every provider's fresh cluster takes once
/// its provider has started it: its installs, capacity and readiness
/// (`finish`), then ready, logged with the time since `started`; on a
/// failure the half-started cluster of `provider` is downed its way (its
/// state kept when `keep_state`) and the error says so (`failed`).
async fn bring_up<C: Cluster>(
    provider: &str,
    mut cluster: C,
    started: Instant,
    finish: impl AsyncFnOnce(&mut C) -> Result<()>,
    keep_state: bool,
    failed: impl FnOnce(&C) -> String,
) -> Result<C> {
    match finish(&mut cluster).await {
        Ok(()) => {
            tracing::info!(
                "{} cluster {} ready in {:.1} s",
                provider,
                cluster.name(),
                started.elapsed().as_secs_f64()
            );
            Ok(cluster)
        }
        Err(e) => {
            let what = failed(&cluster);
            if let Err(down_err) = cluster.down(keep_state) {
                tracing::error!("downing the half-started {provider} cluster: {down_err:#}");
            }
            Err(e.context(what))
        }
    }
}

async fn finish_up(cluster: &mut LocalCluster, opts: &UpOptions, tools: &Tools) -> Result<()> {
    let client = cluster.client().await?;
    let step = Step::start("creating the default StorageClass (hostPath provisioner)");
    install::storage::install(&client).await?;
    step.done("created");

    // The controllers start once their CRDs are served and their RBAC
    // bound: what they need is there at their first list.
    let step = Step::start("installing JobSet CRDs, RBAC and webhooks");
    install::jobset::install(&client, &cluster.jobset_webhook()?, opts.timeout, || {
        cluster.check_processes()
    })
    .await?;
    step.done("applied");

    if opts.spec.kueue.is_some() {
        let step = Step::start("installing Kueue's CRDs, RBAC and webhooks");
        install::kueue::install(&client, &cluster.kueue_webhook()?, opts.timeout, || {
            cluster.check_processes()
        })
        .await?;
        step.done("applied");
    }
    cluster.start_after_install(tools).await?;

    let step = Step::start(format!("creating {} kwok node(s)", opts.spec.nodes.count));
    cluster.set_capacity(&opts.spec.nodes).await?;
    step.done("created");

    let step = Step::start("waiting for the JobSet CRD and webhooks");
    install::jobset::wait_ready(&client, opts.timeout, || cluster.check_processes()).await?;
    step.done("ready");

    if opts.spec.kueue.is_some() {
        let step = Step::start("waiting for Kueue's webhooks (a dry-run Workload)");
        install::kueue::wait_ready(&client, opts.timeout, || cluster.check_processes()).await?;
        step.done("ready");
    }

    let step = Step::start("waiting for nodes to be Ready");
    wait_nodes_ready(&client, opts.spec.nodes.count, opts.timeout, || {
        cluster.check_processes()
    })
    .await?;
    if opts.spec.real_node {
        let real = format!(
            "kubernetes.io/hostname={}",
            crate::cluster::local::realnode::NODE_NAME
        );
        wait_nodes_ready_matching(&client, &real, 1, opts.timeout, || {
            cluster.check_processes()
        })
        .await?;
    }
    step.done("ready");
    Ok(())
}

/// Wait until `count` kwok nodes report Ready=True.
pub async fn wait_nodes_ready(
    client: &kube::Client,
    count: usize,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    wait_nodes_ready_matching(client, "type=kwok", count, timeout, alive).await
}

/// Wait until `count` nodes matching `labels` ("" for all) are Ready.
pub async fn wait_nodes_ready_matching(
    client: &kube::Client,
    labels: &str,
    count: usize,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    Poll::new(format!("{count} nodes Ready"), timeout)
        .every(Duration::from_millis(200))
        .alive(alive)
        .until_state(|| async {
            let list = nodes
                .list(&ListParams::default().labels(labels))
                .await
                .context("listing nodes")?;
            let ready = list.items.iter().filter(|n| node_ready(n)).count();
            Ok(if ready >= count {
                Ok(())
            } else {
                Err(format!("{ready} of {count} Ready"))
            })
        })
        .await
}

/// `up --provider kind`.
#[derive(Debug, Clone)]
pub struct KindUpOptions {
    pub spec: KindSpec,
    /// Also install Kueue.
    pub kueue: bool,
    /// Also run kwok in the cluster (install/kwok.rs), for node pools.
    pub kwok: bool,
    /// For each readiness wait after `kind create`.
    pub timeout: Duration,
}

/// The config must pass `harness validate`'s kind checks (typed fields,
/// gates and APIs of its minor) before anything is created.
pub fn validate_kind_config(path: &std::path::Path) -> Result<()> {
    let text = crate::input::read(path).map_err(|e| e.context("kind config"))?;
    let file = path.display().to_string();
    let (_, findings) = crate::schema::check_yaml(&file, &text, crate::schema::kind::check);
    if findings.is_empty() {
        return Ok(());
    }
    Err(crate::error::bad_input(format!(
        "kind config {} has problems:\n{}",
        path.display(),
        findings
            .iter()
            .map(|f| format!("  {f}"))
            .collect::<Vec<_>>()
            .join("\n")
    )))
}

/// Bring a kind cluster up: provider start (preflight, `kind create`), then
/// cert-manager and JobSet (and Kueue) from their release manifests, then
/// readiness. On a failure after `kind create`, the cluster is deleted.
pub async fn up_kind(opts: &KindUpOptions) -> Result<KindCluster> {
    validate_kind_config(&opts.spec.config)?;
    let started = Instant::now();
    let cluster = KindCluster::start(&opts.spec, &KindEnv::from_process()).await?;
    let failed = |c: &KindCluster| {
        format!(
            "installing on kind cluster {:?} ({} deleted, state dir removed)",
            c.state.name, c.state.kind_cluster
        )
    };
    let finish = async |c: &mut KindCluster| finish_kind(c, opts).await;
    bring_up("kind", cluster, started, finish, false, failed).await
}

async fn finish_kind(cluster: &mut KindCluster, opts: &KindUpOptions) -> Result<()> {
    let kubectl = cluster.tools()?.kubectl;
    let kc = cluster.kubeconfig().to_path_buf();
    let built = cluster.built();
    let release = kind_release(cluster)?;
    // Controllers built here get the kind control plane's lease
    // (install::release::lasting_leader_election).
    let lease = install::release::Lease {
        duration: crate::cluster::kind::patches::LEASE_DURATION,
        renew_deadline: crate::cluster::kind::patches::RENEW_DEADLINE,
    };
    wait_kube_proxy(cluster, opts).await?;
    apply_cert_manager(cluster, &kubectl, &kc, built).await?;
    apply_controllers(cluster, opts, &kubectl, &kc, built, release, lease).await?;
    wait_kind_ready(cluster, opts).await
}

/// The Kubernetes minor a kind cluster runs, from its recorded version.
fn kind_release(cluster: &KindCluster) -> Result<K8sRelease> {
    // The minor: a pulled node image may run another patch release
    // (kindest/node v1.37.0) than the one the harness builds.
    let v = &cluster.state.k8s_version;
    crate::k8s::K8sRelease::parse(v.rsplit_once('.').map_or(v.as_str(), |(m, _)| m))
}

/// Waits until every node's kube-proxy has written the Service rules.
async fn wait_kube_proxy(cluster: &KindCluster, opts: &KindUpOptions) -> Result<()> {
    // Before any controller (cert-manager's, JobSet's, Kueue's) is
    // applied: a pod that starts before its node's kube-proxy has written
    // the Service rules cannot reach the API server for 30 s.
    let step = Step::start("waiting for kube-proxy's rules on every node");
    {
        let client = cluster.client().await?;
        let nodes = cluster.state.nodes.clone();
        crate::cluster::kind::kube_proxy::wait_synced(&client, &nodes, opts.timeout, || {
            cluster.check_containers()
        })
        .await?;
    }
    step.done("written");
    Ok(())
}

/// Applies cert-manager, or records why it is absent when its images
/// cannot be had for a built cluster.
async fn apply_cert_manager(
    cluster: &mut KindCluster,
    kubectl: &Path,
    kc: &Path,
    built: bool,
) -> Result<()> {
    let cert_manager = if built {
        install::certmanager::images_available(&cluster.tools()?.docker).await
    } else {
        Ok(())
    };
    match cert_manager {
        Ok(()) => {
            let step = Step::start(format!(
                "applying cert-manager v{}",
                crate::tools::versions::CERT_MANAGER_VERSION
            ));
            install::certmanager::install(kubectl, kc).await?;
            step.done("applied");
        }
        Err(why) => {
            eprintln!(
                "harness: cert-manager v{} not installed: {why}; going on without it (only HPCC with certificates needs it)",
                crate::tools::versions::CERT_MANAGER_VERSION
            );
            cluster.set_cert_manager_absent(why)?;
        }
    }
    Ok(())
}

/// Applies JobSet, then Kueue and kwok when asked, then loads agnhost
/// into the nodes of a built cluster.
async fn apply_controllers(
    cluster: &mut KindCluster,
    opts: &KindUpOptions,
    kubectl: &Path,
    kc: &Path,
    built: bool,
    release: K8sRelease,
    lease: install::release::Lease,
) -> Result<()> {
    let step = Step::start(format!(
        "applying JobSet v{}{}",
        crate::tools::versions::JOBSET_VERSION,
        if built {
            " (controller built here)"
        } else {
            ""
        }
    ));
    if built {
        install::jobset::RELEASE
            .install_built(&*cluster, kubectl, release, lease)
            .await?;
    } else {
        install::jobset::RELEASE.install(kubectl, kc).await?;
    }
    step.done("applied");
    if opts.kueue {
        let step = Step::start(format!(
            "applying Kueue v{}",
            crate::tools::versions::KUEUE_VERSION
        ));
        if built {
            install::kueue::RELEASE
                .install_built(&*cluster, kubectl, release, lease)
                .await?;
        } else {
            install::kueue::RELEASE.install(kubectl, kc).await?;
        }
        step.done("applied");
    }
    if opts.kwok {
        let step = Step::start(format!(
            "applying kwok v{}{}",
            crate::tools::versions::KWOK_VERSION,
            if built { " (built here)" } else { "" }
        ));
        install::kwok::install(&*cluster, kubectl, release, built).await?;
        cluster.set_kwok()?;
        step.done("applied");
    }
    if built {
        // What Thor's and the suites' containers run on real nodes.
        let step = Step::start("loading agnhost (built here) into the nodes");
        install::release::load_built_image(&*cluster, crate::tools::Component::Agnhost, release)
            .await?;
        step.done("loaded");
    }
    Ok(())
}

/// Waits for what was applied (cert-manager, JobSet, Kueue, kwok) and for
/// every node to be Ready.
async fn wait_kind_ready(cluster: &KindCluster, opts: &KindUpOptions) -> Result<()> {
    let client = cluster.client().await?;
    let alive = || cluster.check_containers();
    if cluster.state.cert_manager_absent.is_none() {
        let step = Step::start("waiting for cert-manager and its webhook");
        install::certmanager::wait_ready(&client, opts.timeout, alive).await?;
        step.done("ready");
    }
    let step = Step::start("waiting for the JobSet controller and webhooks");
    // The controller Available, then the CRD and a dry-run JobSet through
    // its webhooks (as for a local controller).
    install::jobset::RELEASE
        .wait_available(&client, opts.timeout, alive)
        .await?;
    install::jobset::wait_ready(&client, opts.timeout, alive).await?;
    step.done("ready");
    if opts.kueue {
        let step = Step::start("waiting for Kueue and its webhooks");
        install::kueue::RELEASE
            .wait_available(&client, opts.timeout, alive)
            .await?;
        install::kueue::wait_ready(&client, opts.timeout, alive).await?;
        step.done("ready");
    }
    if opts.kwok {
        let step = Step::start("waiting for kwok");
        install::release::wait_ready(
            &client,
            "kwok",
            install::kwok::NAMESPACE,
            &[install::kwok::DEPLOYMENT],
            None,
            opts.timeout,
            alive,
        )
        .await?;
        step.done("ready");
    }
    let step = Step::start(format!(
        "waiting for {} node(s) to be Ready",
        cluster.state.nodes.len()
    ));
    wait_nodes_ready_matching(&client, "", cluster.state.nodes.len(), opts.timeout, alive).await?;
    step.done("ready");
    Ok(())
}

/// What `up --hpcc` came to.
pub enum HpccUp<C> {
    Ready(C, crate::install::hpcc::HpccInstall),
    /// Ctrl-C or SIGTERM during the install; the cluster was torn down.
    Interrupted(&'static str),
}

/// HPCC on a cluster `up` just brought up. On a signal the cluster is torn
/// down; on failure it is stopped (its state and helm log kept) unless
/// `keep`, and the error says where it is and how to remove it.
pub async fn install_hpcc<C: Cluster>(
    cluster: C,
    opts: &crate::install::hpcc::HpccOptions,
    keep: bool,
) -> Result<HpccUp<C>> {
    let outcome = crate::signal::race(crate::install::hpcc::install(&cluster, opts)).await;
    let name = cluster.name().to_string();
    match outcome {
        Raced::Interrupted(sig) => {
            cluster.down(false)?;
            Ok(HpccUp::Interrupted(sig))
        }
        Raced::Finished(Ok(rec)) => Ok(HpccUp::Ready(cluster, rec)),
        Raced::Finished(Err(e)) if keep => Err(e.context(format!(
            "installing HPCC on cluster {name:?} failed; the cluster is left running for inspection (--keep): \
             export KUBECONFIG={}; `harness down --name {name}` removes it",
            cluster.kubeconfig().display()
        ))),
        Raced::Finished(Err(e)) => {
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

/// After Ctrl-C during a local `up`: stop whatever the dropped `up` had
/// started and remove its state.
pub fn abandon_local(name: &str) -> Result<()> {
    if let Ok(c) = LocalCluster::load(name) {
        c.down(false)?;
    }
    Ok(())
}

/// Stop every cluster, of any provider, whose name starts with `prefix` (a
/// benchmark's clusters, after Ctrl-C), half-made ones too.
pub fn down_all(prefix: &str) -> Result<()> {
    for name in crate::cluster::state::list_clusters()?
        .into_iter()
        .filter(|n| n.starts_with(prefix))
    {
        down(&name, false)?;
    }
    Ok(())
}

/// What `down` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Down {
    Stopped,
    /// A directory a start left without its state file, removed.
    RemovedHalfMade,
    /// A cluster whose state file cannot be read: the processes found
    /// under its directory were stopped and the directory removed.
    RemovedDamaged {
        why: String,
        stopped: Vec<i32>,
    },
}

/// Stop cluster `name` (or remove what a start that died left behind).
pub fn down(name: &str, keep: bool) -> Result<Down> {
    let dir = crate::cluster::state::cluster_dir(name);
    crate::cluster::state::validate_name(name)?;
    if dir.is_dir() && std::fs::symlink_metadata(dir.join("state.json")).is_err() {
        let _lock = crate::cluster::state::lock(name)?;
        // A start that died (or was abandoned) before writing its state
        // may have started components: stop what runs from the dir.
        crate::cluster::state::stop_pids(
            &crate::cluster::state::processes_under(&dir),
            Duration::from_secs(10),
        );
        if !keep {
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        return Ok(Down::RemovedHalfMade);
    }
    let cluster = match crate::cluster::AnyCluster::load(name) {
        Ok(c) => c,
        // Its state file is there but unreadable (empty, truncated, not
        // UTF-8, a FIFO): stop what runs from its directory and remove it.
        Err(e) if dir.is_dir() => {
            let _lock = crate::cluster::state::lock(name)?;
            let stopped = crate::cluster::state::processes_under(&dir);
            crate::cluster::state::stop_pids(&stopped, Duration::from_secs(10));
            if !keep {
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
            }
            return Ok(Down::RemovedDamaged {
                why: format!("{e:#}"),
                stopped,
            });
        }
        Err(e) => return Err(e),
    };
    cluster.down(keep)?;
    Ok(Down::Stopped)
}

/// Run `work` on `cluster`, checking every second that the cluster's parts
/// are alive: a component that dies ends the work at once, named with its
/// log's tail, instead of surfacing later as a connection reset or a
/// timeout. A failure while every part runs carries what the provider
/// saw besides (`Cluster::explain_failure`: a kind control plane's
/// restarted components).
pub async fn while_alive<T>(
    cluster: &impl Cluster,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            r = &mut work => {
                // An error while a component is dead is about that death;
                // one while all runs says what the provider saw (restarts).
                return match (r, cluster.check_alive()) {
                    (Err(e), Err(dead)) => Err(dead.context(format!("(the work failed meanwhile: {e:#})"))),
                    (Err(e), Ok(())) => Err(match cluster.explain_failure().await {
                        Some(seen) => e.context(seen),
                        None => e,
                    }),
                    (r, _) => r,
                };
            }
            _ = tokio::time::sleep(Duration::from_secs(1)) => cluster.check_alive()?,
        }
    }
}
