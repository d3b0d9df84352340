//! Clusters the harness runs against. One trait, several providers:
//! `local` (processes + kwok) and `kind` (node containers); `existing`
//! plugs in beside them.

pub mod any;
pub mod audit;
pub mod client;
pub mod kind;
pub mod local;
pub mod pool;
pub mod state;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use any::AnyCluster;
pub use audit::AuditEvent;
pub use pool::NodePool;

/// The fake nodes of a cluster: how many and how big.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    pub count: usize,
    /// A Kubernetes quantity, e.g. "32".
    pub cpu: String,
    /// A Kubernetes quantity, e.g. "256Gi".
    pub memory: String,
    pub pods: u32,
}

impl Default for NodeSpec {
    fn default() -> Self {
        NodeSpec {
            count: 3,
            cpu: "32".into(),
            memory: "256Gi".into(),
            pods: 110,
        }
    }
}

/// What a cluster should look like.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSpec {
    pub name: String,
    /// "1.37"
    pub k8s_minor: String,
    pub feature_gates: BTreeMap<String, bool>,
    pub runtime_config: BTreeMap<String, String>,
    pub nodes: NodeSpec,
}

/// Health of one component, for `harness status`.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentHealth {
    pub component: String,
    pub pid: Option<i32>,
    pub running: bool,
    /// What the component's health endpoint said ("ok", or the error).
    pub health: String,
    pub healthy: bool,
}

/// A running cluster, whichever provider made it.
pub trait Cluster: Sync {
    fn name(&self) -> &str;
    fn kubeconfig(&self) -> &Path;
    /// A client with the cluster-admin identity. Fails, naming the
    /// component, when part of the control plane is down.
    fn client(&self) -> impl Future<Output = Result<kube::Client>> + Send;
    /// The API server's Prometheus metrics text, read through the admin
    /// client (so a provider's `client` checks apply).
    fn apiserver_metrics(&self) -> impl Future<Output = Result<String>> + Send {
        async move { client::client_get(&self.client().await?, "/metrics").await }
    }
    /// etcd's Prometheus metrics text.
    fn etcd_metrics(&self) -> impl Future<Output = Result<String>> + Send;
    /// kube-scheduler's Prometheus metrics text, when the provider can
    /// reach it (None otherwise).
    fn scheduler_metrics(&self) -> impl Future<Output = Result<Option<String>>> + Send {
        async { Ok(None) }
    }
    /// The user names the harness itself acts as on this cluster (its
    /// setup, watches, scrapes): measurement counts their requests apart.
    fn harness_users(&self) -> Vec<String>;
    /// Audit events written since byte `offset` of the audit log, and the
    /// offset to read from next time.
    fn audit_events(&self, offset: u64) -> Result<(Vec<AuditEvent>, u64)>;
    /// The audit log's current end (after its last complete event).
    fn audit_end(&self) -> Result<u64>;
    /// Make the cluster's schedulable capacity exactly `nodes`.
    fn set_capacity(&self, nodes: &NodeSpec) -> impl Future<Output = Result<()>> + Send;
    /// Add a pool of nodes for one workload and wait until they are Ready;
    /// their names. Providers whose nodes are not fake refuse (exit 2).
    fn add_pool(&self, pool: &NodePool) -> impl Future<Output = Result<Vec<String>>> + Send {
        let name = self.name().to_string();
        let n = pool.count;
        async move {
            Err(crate::error::bad_input(format!(
                "cluster {name:?} cannot add nodes (asked for {n}): its provider runs real nodes"
            )))
        }
    }
    /// Remove nodes a pool added.
    fn remove_nodes(&self, names: &[String]) -> impl Future<Output = Result<()>> + Send {
        let n = names.len();
        async move {
            if n == 0 {
                Ok(())
            } else {
                Err(crate::error::bad_input("this provider adds no nodes"))
            }
        }
    }
    /// Per-component health.
    fn health(&self) -> impl Future<Output = Vec<ComponentHealth>> + Send;
    /// Stop everything; keep the state directory when `keep`.
    fn down(self, keep: bool) -> Result<()>;
}

/// Whether a Node reports Ready=True.
pub fn node_ready(n: &k8s_openapi::api::core::v1::Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
