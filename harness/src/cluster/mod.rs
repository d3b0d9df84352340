//! Clusters the harness runs against. One trait, several providers:
//! `local` (processes + kwok) and `kind` (node containers); `existing`
//! plugs in beside them.

pub mod any;
pub mod audit;
pub mod client;
pub mod kind;
pub mod local;
pub mod state;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use any::AnyCluster;
pub use audit::AuditEvent;

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
    /// Audit events written since byte `offset` of the audit log, and the
    /// offset to read from next time.
    fn audit_events(&self, offset: u64) -> Result<(Vec<AuditEvent>, u64)>;
    /// The audit log's current end (after its last complete event).
    fn audit_end(&self) -> Result<u64>;
    /// Make the cluster's schedulable capacity exactly `nodes`.
    fn set_capacity(&self, nodes: &NodeSpec) -> impl Future<Output = Result<()>> + Send;
    /// Per-component health.
    fn health(&self) -> impl Future<Output = Vec<ComponentHealth>> + Send;
    /// Stop everything; keep the state directory when `keep`.
    fn down(self, keep: bool) -> Result<()>;
}
