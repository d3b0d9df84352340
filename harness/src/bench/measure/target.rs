//! The cluster a measured run gets afresh, and the identity its workload
//! acts as. `--provider local` (the default): the local provider with the
//! run's node, control-plane and Kueue settings, the workload as the
//! `workload` user its CA certifies (a cluster admin). `--provider kind`:
//! a kind cluster of the chosen profile (node images built here or
//! pulled), the workload as the ServiceAccount `harness-workload` of the
//! namespace `harness-measure`, bound to cluster-admin, through a token
//! kubeconfig — as `bench thor --provider kind` gives HPCC's identities
//! (cluster/existing/site.rs). The identity is made before the window
//! opens, so its requests are not the workload's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;

use crate::cluster::existing::ExistingOptions;
use crate::cluster::kind::{KindImages, KindSpec};
use crate::cluster::local::identity::WORKLOAD_USER;
use crate::cluster::{AnyCluster, Cluster, ClusterSpec};
use crate::lifecycle::{self, KindUpOptions, UpOptions};
use crate::tools::Component;

/// Where `harness measure` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provider {
    Local,
    /// kind: the cluster config (a profile's kind-configs file) and where
    /// its images come from.
    Kind {
        config: PathBuf,
        images: KindImages,
    },
    /// A cluster the harness did not start: a namespace per run
    /// (existing.rs).
    Existing(Box<ExistingTarget>),
}

/// The cluster, the run's id and the user's leave to load a busy cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingTarget {
    pub cluster: ExistingOptions,
    /// Every namespace and FlowSchema of the run carries it.
    pub run_id: String,
    /// Measure on a cluster that runs other workloads.
    pub yes: bool,
}

impl Provider {
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Local => "local",
            Provider::Kind { .. } => crate::cluster::kind::PROVIDER,
            Provider::Existing(_) => crate::cluster::existing::PROVIDER,
        }
    }
}

/// The workload's ServiceAccount on kind (and, in its run's namespace,
/// on an existing cluster: existing.rs).
const NAMESPACE: &str = "harness-measure";
pub const ACCOUNT: &str = "harness-workload";

/// Bring up a fresh cluster called `name` (local or kind; an existing
/// cluster is attached to once, not started: existing.rs).
pub async fn start(
    provider: &Provider,
    spec: &ClusterSpec,
    bins: &std::collections::BTreeMap<Component, PathBuf>,
    name: &str,
) -> Result<AnyCluster> {
    match provider {
        Provider::Local => {
            let mut spec = spec.clone();
            spec.name = name.to_string();
            let c = lifecycle::up(&UpOptions {
                spec,
                bins: bins.clone(),
                timeout: Duration::from_secs(180),
            })
            .await?;
            Ok(AnyCluster::Local(c))
        }
        Provider::Kind { config, images } => {
            let c = lifecycle::up_kind(&KindUpOptions {
                spec: KindSpec {
                    name: name.to_string(),
                    config: config.clone(),
                    k8s_version: Some(spec.k8s_minor.clone()),
                    wait: Duration::from_secs(300),
                    images: *images,
                },
                kueue: spec.kueue.is_some(),
                kwok: false,
                timeout: Duration::from_secs(300),
            })
            .await?;
            Ok(AnyCluster::Kind(c))
        }
        Provider::Existing(_) => {
            anyhow::bail!("an existing cluster is attached to, never started (existing.rs)")
        }
    }
}

/// The workload's identity on a cluster: its kubeconfig and a client.
pub struct Identity {
    pub kubeconfig: PathBuf,
    pub client: kube::Client,
}

/// Make (on kind) or find (locally) the workload's identity; a kind
/// token lives `ttl` and its kubeconfig is written into the cluster's
/// state dir, removed with the cluster.
pub async fn identity(cluster: &AnyCluster, ttl: Duration) -> Result<Identity> {
    match cluster {
        AnyCluster::Local(c) => Ok(Identity {
            kubeconfig: c.kubeconfig_of(WORKLOAD_USER),
            client: c.client_as(WORKLOAD_USER).await?,
        }),
        AnyCluster::Kind(c) => {
            let admin = c.client().await?;
            crate::install::apply::apply_all(&admin, &service_account_objects())
                .await
                .context("the workload's namespace and its cluster-admin binding")?;
            let (kubeconfig, _) = crate::cluster::existing::site::service_account_kubeconfig(
                &admin,
                &c.state.kubeconfig,
                None,
                NAMESPACE,
                ACCOUNT,
                &c.root,
                ttl,
            )
            .await?;
            let client = crate::cluster::client::client_from_kubeconfig(&kubeconfig).await?;
            Ok(Identity { kubeconfig, client })
        }
    }
}

/// The namespace and the binding of the workload's ServiceAccount (the
/// account itself is made with its token).
fn service_account_objects() -> Vec<serde_json::Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{NAMESPACE}-{ACCOUNT}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
        }),
    ]
}

/// Client names that differ from cluster to cluster (kind's node names
/// carry the cluster's name) made alike, so that rounds and variants line
/// up by client.
pub fn same_clients(cluster: &AnyCluster) -> impl Fn(&str) -> String + use<> {
    let prefix = match cluster {
        AnyCluster::Kind(c) => Some(format!("{}-", c.state.kind_cluster)),
        AnyCluster::Local(_) => None,
    };
    move |c: &str| match &prefix {
        Some(p) => c.replace(p.as_str(), "<kind>-"),
        None => c.to_string(),
    }
}

/// Where a failed run's state and logs are kept.
pub fn state_dir(cluster: &AnyCluster) -> &Path {
    match cluster {
        AnyCluster::Local(c) => &c.layout.root,
        AnyCluster::Kind(c) => &c.root,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_account_is_bound_to_cluster_admin() {
        let objs = service_account_objects();
        assert_eq!(objs[0]["metadata"]["name"], NAMESPACE);
        assert_eq!(objs[1]["roleRef"]["name"], "cluster-admin");
        assert_eq!(objs[1]["subjects"][0]["name"], ACCOUNT);
        assert_eq!(objs[1]["subjects"][0]["namespace"], NAMESPACE);
    }
}
