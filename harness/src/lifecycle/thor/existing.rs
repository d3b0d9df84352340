//! Thor's site on a cluster the harness did not start (`bench thor
//! --provider existing`, and kind's clusters reached the same way).
//! Before anything is created the cluster is probed for what the run
//! needs (workload::thor::needs, checked by cluster::existing::probe),
//! and a lack is an error naming each missing piece (exit 3). Each mode
//! then runs in a namespace of its own carrying the run's id, as
//! ServiceAccounts with the scenario's Roles; the namespace is deleted
//! after the mode, and on any failure everything carrying the run id is.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::cluster::ExistingTarget;
use crate::cluster::existing::apf::{self, Identity};
use crate::cluster::existing::lacks;
use crate::cluster::existing::probe;
use crate::cluster::existing::{ExistingCluster, ExistingOptions, site};
use crate::cluster::needs::{Attribution, Capabilities, Needs};
use crate::cluster::provider::Cluster;
use crate::workload::thor::Mode;
use crate::workload::thor::driver::exits::{Exits, Reach, RealExits};
use crate::workload::thor::needs::needs;
use crate::workload::thor::realpods::RealPods;
use crate::workload::thor::scenario::ThorScenario;
use crate::workload::thor::site::{ECLCC_SA, KUBELET_SA, Site, THOR_SA, kubelet_rbac};

/// Workers above which a busy cluster needs --yes (the smoke scenario's
/// size).
const SMOKE_WORKERS: u32 = 2;
/// How long the identities' tokens live.
const TOKEN_TTL: Duration = Duration::from_secs(4 * 3600);

/// Probe the attached cluster; the probe's table goes to stderr.
/// Anything the run needs and lacks is an error naming each piece (exit
/// 3), before anything is created.
pub async fn prepare(
    cluster: &ExistingCluster,
    target: &ExistingTarget,
    s: &ThorScenario,
    modes: &[Mode],
) -> Result<Capabilities> {
    let needs = needs(s, modes, target.cluster.attribution)?;
    let ns = namespace_of(&target.run_id, modes[0], 0)?;
    let workers = s.thor.num_workers;
    let busy = |others: u64| {
        format!(
            "the cluster runs other workloads ({others} pods outside kube-* namespaces) and this scenario has {workers} workers: add --yes to load it anyway, or run the smoke scenario"
        )
    };
    let busy: &dyn Fn(u64) -> String = &busy;
    lacks::require_run(
        cluster,
        target,
        &needs,
        &ns,
        (workers > SMOKE_WORKERS).then_some(busy),
    )
    .await
}

/// What `harness status --provider existing` shows: the cluster's health,
/// the probe against what the Thor benchmark needs in every mode, and
/// what runs left behind.
pub struct Survey {
    pub cluster: ExistingCluster,
    pub caps: Capabilities,
    pub needs: Needs,
    pub missing: Vec<lacks::Missing>,
    pub runs_left: std::collections::BTreeMap<String, Vec<String>>,
}

/// Probe `opts`' cluster for the Thor smoke in every mode; nothing is
/// created.
pub async fn survey(opts: &ExistingOptions, smoke: &ThorScenario) -> Result<Survey> {
    let cluster = ExistingCluster::attach(opts.clone()).await?;
    let modes = [Mode::Baseline, Mode::Jobset, Mode::JobsetGang];
    let needs = needs(smoke, &modes, opts.attribution)?;
    let caps = probe::probe(&cluster, &needs, "harness-status").await?;
    let missing = lacks::missing(&caps, &needs);
    let runs_left = site::runs_left(&cluster.client().await?).await?;
    Ok(Survey {
        cluster,
        caps,
        needs,
        missing,
        runs_left,
    })
}

/// The namespace of one run of a mode (the existing provider's
/// `site::run_namespace`).
pub fn namespace_of(run_id: &str, mode: Mode, rep: u32) -> Result<String> {
    site::run_namespace(run_id, mode.name(), rep)
}

/// The namespace, its identities and (on kwok's nodes) the fake
/// kubelets' Role for one run of a mode; `dir` holds the identities'
/// kubeconfigs. On real nodes (`real_node`) processes end through the
/// pod proxy, as the harness.
pub async fn site(
    cluster: &ExistingCluster,
    target: &ExistingTarget,
    mode: Mode,
    rep: u32,
    dir: &std::path::Path,
    real_node: bool,
) -> Result<Site> {
    let admin = cluster.client().await?;
    let ns = namespace_of(&target.run_id, mode, rep)?;
    site::create_namespace(&admin, &ns, &target.run_id).await?;
    if !real_node {
        crate::install::apply::apply_all(&admin, &kubelet_rbac(&ns))
            .await
            .context("the fake kubelets' Role")?;
    }
    let opts = &cluster.opts;
    let identity = |sa: &'static str| {
        let (admin, ns) = (admin.clone(), ns.clone());
        async move {
            site::service_account_kubeconfig(
                &admin,
                &opts.kubeconfig,
                opts.context.as_deref(),
                &ns,
                sa,
                dir,
                TOKEN_TTL,
            )
            .await
        }
    };
    let thor = identity(THOR_SA).await?;
    let eclcc = identity(ECLCC_SA).await?;
    let (exits, real_pods) = match real_node {
        true => (
            Exits::Real(RealExits {
                admin: crate::cluster::client::client_without_retries(
                    &opts.kubeconfig,
                    opts.context.as_deref(),
                )
                .await?,
                reach: Reach::ApiProxy,
            }),
            Some(RealPods {
                image: target.node_image.clone(),
                // Off kwok's nodes, where nothing would run.
                nodes: match cluster.nodes_by_kind().await? {
                    (_, kwok) if kwok.is_empty() => Vec::new(),
                    (real, _) => real,
                },
            }),
        ),
        false => {
            let (kubelet_kc, _) = identity(KUBELET_SA).await?;
            let kubelet = crate::cluster::client::client_from_kubeconfig(&kubelet_kc).await?;
            (Exits::Kwok(kubelet), None)
        }
    };
    let apf = match apf_plan(cluster, &ns).await? {
        Some(plan) => {
            apf::install(&admin, &plan).await?;
            Some(plan.flows)
        }
        None => None,
    };
    Ok(Site {
        apf,
        count_requests: opts.attribution == Attribution::Client,
        namespace: ns,
        work_dir: dir.join(format!("kubectl-{}-{rep}", mode.name())),
        exits,
        real_pods,
        thor,
        eclcc,
        service_accounts: Some((THOR_SA.into(), ECLCC_SA.into())),
    })
}

/// The FlowSchemas that count a run in namespace `ns` by identity (none
/// unless --attribution apf): its ServiceAccounts besides the harness and
/// the controllers, planned from the cluster's own.
pub async fn apf_plan(cluster: &ExistingCluster, ns: &str) -> Result<Option<apf::Plan>> {
    let run = [THOR_SA, ECLCC_SA, KUBELET_SA]
        .into_iter()
        .map(|sa| Identity::service_account(ns, sa))
        .collect();
    cluster.apf_plan(run).await
}
