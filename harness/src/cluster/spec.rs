//! What a cluster is asked to be (nodes, version, gates) and what it
//! reports about its parts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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

/// Whether a Node reports Ready=True.
pub fn node_ready(n: &k8s_openapi::api::core::v1::Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
