//! Where one Thor run sits on its cluster, per provider: the local
//! provider's `default` namespace and the certificate users the cluster
//! was made with (Thor's pods on its real node when it has one), or a
//! namespace of the run's with ServiceAccounts (`existing`: an existing
//! cluster, and a kind cluster reached by its kubeconfig and audit log
//! as one).

use std::path::Path;

use anyhow::{Context, Result};

use crate::cluster::ExistingTarget;
use crate::cluster::existing::ExistingCluster;
use crate::cluster::local::{LocalCluster, realnode};
use crate::cluster::provider::Cluster;
use crate::lifecycle::target::OnCluster;
use crate::lifecycle::thor::existing;
use crate::workload::thor::api::THOR_AGENT_USER;
use crate::workload::thor::driver::exits::{Exits, Reach, RealExits};
use crate::workload::thor::mode_plan::NAMESPACE;
use crate::workload::thor::realpods::RealPods;
use crate::workload::thor::scenario::ThorScenario;
use crate::workload::thor::site::Site;
use crate::workload::thor::template::ECLCCSERVER_USER;
use crate::workload::thor::template::Mode;

/// Where one run's HPCC lives on its cluster.
pub struct Place {
    /// The run on a cluster the run's namespace is made on (None: the
    /// local provider's own namespace and users).
    target: Option<ExistingTarget>,
    /// The run's namespace (None: the local provider's `default`).
    pub namespace: Option<String>,
    /// The progress line's "where".
    pub where_: String,
}

impl Place {
    /// The place of run `rep` of `mode` on `on`; nothing is created yet.
    pub fn of(on: &OnCluster<'_>, mode: Mode, rep: u32) -> Result<Place> {
        let Some(target) = on.as_existing() else {
            return Ok(Place {
                target: None,
                namespace: None,
                where_: String::new(),
            });
        };
        let ns = existing::namespace_of(&target.run_id, mode, rep)?;
        let where_ = match on.attached() {
            Some(_) => format!(" in namespace {ns}"),
            None => format!(" on {} cluster {}", on.get().provider(), on.get().name()),
        };
        Ok(Place {
            where_,
            namespace: Some(ns),
            target: Some(target),
        })
    }

    /// The run's site: its namespace, identities and how processes end
    /// (`tokens` holds the ServiceAccounts' kubeconfigs).
    pub async fn site(
        &self,
        on: &OnCluster<'_>,
        s: &ThorScenario,
        mode: Mode,
        rep: u32,
        tokens: &Path,
    ) -> Result<Site> {
        let Some(t) = &self.target else {
            let cluster = on.get();
            let local = cluster.as_local().with_context(|| {
                format!(
                    "a {} cluster's run has a namespace of its own (OnCluster::as_existing)",
                    cluster.provider()
                )
            })?;
            return local_site(local, mode).await;
        };
        match on.attached() {
            Some((c, _)) => existing::site(c, t, mode, rep, tokens, s.cluster.real_node).await,
            // A fresh cluster reached as an existing one: its nodes are
            // real (kind's workers).
            None => {
                let mut ex = ExistingCluster::attach(t.cluster.clone()).await?;
                ex.run_id = t.run_id.clone();
                existing::site(&ex, t, mode, rep, tokens, true).await
            }
        }
    }
}

/// A mode on the harness's own local cluster: HPCC's `default` namespace
/// and the certificate identities the cluster was made with; Thor's pods
/// on its real node when it has one.
async fn local_site(cluster: &LocalCluster, mode: Mode) -> Result<Site> {
    let user = |u: &str| (cluster.kubeconfig_of(u), u.to_string());
    let (exits, real_pods) = match &cluster.state.real_node {
        Some(_) => (
            Exits::Real(RealExits {
                admin: cluster.client().await?,
                reach: Reach::PodIp(crate::cluster::client::http_client()?),
            }),
            Some(RealPods {
                image: realnode::image::image_name(&cluster.state.k8s_version),
                nodes: vec![realnode::names::NODE_NAME.to_string()],
            }),
        ),
        None => (Exits::Kwok(cluster.client_as("kwok").await?), None),
    };
    Ok(Site {
        namespace: NAMESPACE.into(),
        work_dir: cluster.layout.root.join(format!("kubectl-{}", mode.name())),
        exits,
        real_pods,
        thor: user(THOR_AGENT_USER),
        eclcc: user(ECLCCSERVER_USER),
        service_accounts: None,
        apf: None,
        count_requests: false,
    })
}
