//! What a cluster is asked to be (nodes, version, gates) and what it
//! reports about its parts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cluster::profile::ControlPlane;

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
    /// How much API traffic kwok's fake kubelets make per pod.
    #[serde(default)]
    pub kubelet: KubeletModel,
    /// Client rate limits and inflight limits (profile + overrides).
    #[serde(default)]
    pub control_plane: ControlPlane,
    /// Kueue beside JobSet (`--kueue`): on the local provider its
    /// controller runs as one more process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kueue: Option<KueueSpec>,
    /// One real node beside the kwok ones (`--real-node`): the cluster's
    /// kubelet with containerd and runc, running real containers
    /// (cluster/local/realnode).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub real_node: bool,
}

impl ClusterSpec {
    /// A stock cluster of `k8s_minor`: default nodes, no gates, the
    /// kwok-minimal kubelet model, the default control plane, no Kueue.
    pub fn new(name: impl Into<String>, k8s_minor: &str) -> ClusterSpec {
        ClusterSpec {
            name: name.into(),
            k8s_minor: k8s_minor.to_string(),
            feature_gates: Default::default(),
            runtime_config: Default::default(),
            nodes: NodeSpec::default(),
            kubelet: Default::default(),
            control_plane: Default::default(),
            kueue: None,
            real_node: false,
        }
    }
}

/// What the harness writes into Kueue's Configuration beyond the upstream
/// file (see cluster/local/kueue.rs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KueueSpec {
    /// `waitForPodsReady.timeout`: evict an admitted workload whose pods
    /// are not all Ready within this many seconds. None: Kueue's default —
    /// which in v0.19 is on, with a 30-minute timeout
    /// (apis/config/v1beta2/defaults.go fills the field in; only the
    /// DisableWaitForPodsReady gate turns it off), as in a release install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_ready_timeout_s: Option<u64>,
    /// `waitForPodsReady.blockAdmission`: admit the next workload only
    /// once the admitted ones' pods are Ready.
    #[serde(default)]
    pub block_admission: bool,
}

/// The pod Stages kwok runs, i.e. how much API traffic a fake kubelet
/// makes per pod (manifests/kwok/README.md has the counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KubeletModel {
    /// kwok's own fast stages: one status PATCH per transition, no events.
    #[default]
    KwokMinimal,
    /// The harness's Stages (manifests/kwok/kubelet-like/): the status
    /// PATCHes and container events a real kubelet makes for a pod.
    KubeletLike,
}

impl KubeletModel {
    pub const ALL: [KubeletModel; 2] = [KubeletModel::KwokMinimal, KubeletModel::KubeletLike];

    /// The name the CLI and the cluster state use.
    pub fn name(self) -> &'static str {
        match self {
            KubeletModel::KwokMinimal => "kwok-minimal",
            KubeletModel::KubeletLike => "kubelet-like",
        }
    }
}

impl std::str::FromStr for KubeletModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        KubeletModel::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown kubelet model {s:?} (kwok-minimal, kubelet-like)"))
    }
}

impl std::fmt::Display for KubeletModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_model_is_kebab_case_and_defaults_to_kwok_minimal() {
        for m in KubeletModel::ALL {
            assert_eq!(
                serde_json::to_value(m).unwrap(),
                serde_json::json!(m.name())
            );
        }
        let old = serde_json::json!({
            "name": "a", "k8s_minor": "1.37", "feature_gates": {},
            "runtime_config": {},
            "nodes": {"count": 1, "cpu": "1", "memory": "1Gi", "pods": 10}
        });
        let spec: ClusterSpec = serde_json::from_value(old).unwrap();
        assert_eq!(spec.kubelet, KubeletModel::KwokMinimal);
        let like: KubeletModel = serde_json::from_str("\"kubelet-like\"").unwrap();
        assert_eq!(like, KubeletModel::KubeletLike);
        assert_eq!("kubelet-like".parse(), Ok(KubeletModel::KubeletLike));
        assert!("kubelet".parse::<KubeletModel>().is_err());
    }
}
