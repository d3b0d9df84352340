//! What a local cluster records in `state.json` of its state directory:
//! its spec, ports, processes and binaries, and whether `up` finished.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cluster::local::layout::Ports;
use crate::cluster::local::process::Proc;
use crate::cluster::local::realnode;
use crate::cluster::spec::ClusterSpec;

/// The provider's name, as results, baselines and state files say it.
pub const PROVIDER: &str = "local";

/// What `state.json` records about a cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub name: String,
    pub provider: String,
    pub k8s_version: String,
    pub spec: ClusterSpec,
    pub ports: Ports,
    pub procs: Vec<Proc>,
    pub created_unix: u64,
    pub binaries: BTreeMap<String, String>,
    /// Set when `up` finished (installs, nodes, readiness): a cluster
    /// without it is incomplete, whatever runs.
    #[serde(default)]
    pub ready: bool,
    /// Where the real node sits (`--real-node`), chosen at `up`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_node: Option<realnode::Placement>,
}
