//! `up`: provider start, then installs, then capacity, then readiness. The
//! one place that composes the layers, so providers and installers stay
//! independent of each other.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use crate::cluster::local::LocalCluster;
use crate::cluster::{Cluster, ClusterSpec};
use crate::install;
use crate::progress::Step;
use crate::tools::{Component, K8sRelease, Resolver, Tools};

#[derive(Debug, Clone)]
pub struct UpOptions {
    pub spec: ClusterSpec,
    /// Explicit binaries (`--bin NAME=PATH`).
    pub bins: BTreeMap<Component, PathBuf>,
    pub timeout: Duration,
}

/// Find or build every binary the local provider needs.
pub async fn resolve_tools(k8s: K8sRelease, bins: BTreeMap<Component, PathBuf>) -> Result<Tools> {
    tokio::task::spawn_blocking(move || Resolver::from_env(k8s, bins).resolve_all())
        .await
        .context("tool resolution panicked")?
}

/// Bring a local cluster up and wait until it is ready for work. On any
/// failure, what was started is stopped (logs stay in the state dir).
pub async fn up(opts: &UpOptions) -> Result<LocalCluster> {
    let k8s = K8sRelease::parse(&opts.spec.k8s_minor)?;
    let tools = resolve_tools(k8s, opts.bins.clone()).await?;
    let started = Instant::now();
    let cluster = LocalCluster::start(&opts.spec, &tools).await?;
    match finish_up(&cluster, opts).await {
        Ok(()) => {
            tracing::info!(
                "cluster {} ready in {:.1} s",
                opts.spec.name,
                started.elapsed().as_secs_f64()
            );
            Ok(cluster)
        }
        Err(e) => {
            let name = cluster.state.name.clone();
            let dir = cluster.layout.root.clone();
            if let Err(down_err) = cluster.down(true) {
                tracing::error!("stopping the half-started cluster: {down_err:#}");
            }
            Err(e.context(format!(
                "bringing up local cluster {name:?} (logs kept in {}; `harness down --name {name}` removes them)",
                dir.display()
            )))
        }
    }
}

async fn finish_up(cluster: &LocalCluster, opts: &UpOptions) -> Result<()> {
    let client = cluster.client().await?;
    let step = Step::start("installing JobSet CRDs, RBAC and webhooks");
    install::jobset::install(&client, &cluster.jobset_webhook()?).await?;
    step.done("applied");

    let step = Step::start(format!("creating {} kwok node(s)", opts.spec.nodes.count));
    cluster.set_capacity(&opts.spec.nodes).await?;
    step.done("created");

    let step = Step::start("waiting for the JobSet CRD and webhooks");
    install::jobset::wait_ready(&client, opts.timeout, || cluster.check_processes()).await?;
    step.done("ready");

    let step = Step::start("waiting for nodes to be Ready");
    wait_nodes_ready(&client, opts.spec.nodes.count, opts.timeout, || {
        cluster.check_processes()
    })
    .await?;
    step.done("ready");
    Ok(())
}

/// Wait until `count` kwok nodes report Ready=True.
pub async fn wait_nodes_ready(
    client: &kube::Client,
    count: usize,
    timeout: Duration,
    mut alive: impl FnMut() -> Result<()>,
) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        alive()?;
        let list = nodes
            .list(&ListParams::default().labels("type=kwok"))
            .await
            .context("listing nodes")?;
        let ready = list
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        if ready >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{ready} of {count} nodes Ready after {} s",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
