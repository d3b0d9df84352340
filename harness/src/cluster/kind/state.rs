//! What a kind cluster records in `state.json` of its state directory,
//! and the names it goes by.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub const PROVIDER: &str = "kind";

/// The kind cluster behind harness cluster `name`.
pub fn kind_cluster_name(name: &str) -> String {
    format!("harness-{name}")
}

/// `state.json` of a kind cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KindState {
    pub name: String,
    /// Always "kind".
    pub provider: String,
    pub kind_cluster: String,
    /// "1.37.0", from the node image.
    pub k8s_version: String,
    pub node_image: String,
    /// The profile the cluster was made from.
    pub profile: PathBuf,
    /// The effective config given to kind.
    pub config: PathBuf,
    pub kubeconfig: PathBuf,
    /// Node container names; empty until `kind create` succeeded.
    pub nodes: Vec<String>,
    pub control_plane: String,
    pub audit_log: PathBuf,
    pub audit_policy: PathBuf,
    pub kind_version: String,
    pub created_unix: u64,
    /// "pulled" or "built" (tools/kindnode); older state files: pulled.
    #[serde(default = "pulled")]
    pub images: String,
    /// Why cert-manager is not installed, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_manager_absent: Option<String>,
    /// kwok runs in the cluster (`up --kwok`), so pools can be added.
    #[serde(default)]
    pub kwok: bool,
    /// Why each `kind create` before the one that made the cluster failed
    /// (`retry`): a slow start on a loaded machine, said, not hidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_creates: Vec<String>,
    /// The nodes use the cgroupfs driver (a cgroup v1 host:
    /// `cgroup_driver`); false: kind's systemd driver.
    #[serde(default)]
    pub cgroupfs: bool,
}

fn pulled() -> String {
    "pulled".to_string()
}
