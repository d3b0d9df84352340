//! The real node's fixed names: its processes in the cluster's state, the
//! node and its identity, and what it makes on the machine.

/// Process names in the cluster's state.
pub const CONTAINERD: &str = "containerd";
pub const KUBELET: &str = "kubelet";
/// The node's name (one per cluster) and its identity's.
pub const NODE_NAME: &str = "real-node-0";
pub const NODE_USER: &str = "system:node:real-node-0";
/// The CNI bridge (one per machine, like the node) and network name.
pub const BRIDGE: &str = "harness-rn0";
pub const CNI_NETWORK: &str = "harness-real-node";
