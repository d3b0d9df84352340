//! A real node beside the kwok ones (`up --real-node`): the cluster's own
//! kubelet with containerd, runc and the CNI bridge, all built from Go
//! modules, running real containers of one image made here (image.rs).
//!
//! Everything lives under the cluster's `node/` directory except what the
//! programs fix themselves: the kubelet's device-plugin socket
//! (`/var/lib/kubelet/device-plugins`), its `/var/log/containers` links,
//! the shims' sockets (`/run/containerd/s`), libcni's result cache
//! (`/var/lib/cni`) and the bridge interface. Those make a real node one
//! per machine (`check_alone`); `cleanup` removes what a node left.
//!
//! Choices, each forced by what this kind of machine allows:
//! - cgroup v1 hierarchies: the kubelet runs with `failCgroupV1: false`
//!   (KubeletConfiguration; since 1.35 it refuses v1 by default) and the
//!   cgroupfs driver, without per-QoS cgroups;
//! - no CAP_SYS_RESOURCE: containerd's `restrict_oom_score_adj` keeps the
//!   kubelet's -998 for sandboxes from failing runc's write to
//!   oom_score_adj;
//! - no registry: the sandbox ("pause") image is pinned to the local image
//!   so containerd never pulls it, and pods use `imagePullPolicy: Never`.
//!
//! `placement` where the node sits and what the machine must allow,
//! `dirs` its files, `config` its programs' configuration, `setup` what is
//! laid out before containerd starts.

pub mod cleanup;
pub mod config;
pub mod dirs;
pub mod host;
pub mod image;
pub mod names;
pub mod placement;
pub mod setup;

pub use crate::cluster::local::realnode::config::{
    cni_conflist, containerd_config, kubelet_args, kubelet_config,
};
pub use crate::cluster::local::realnode::dirs::NodeDirs;
pub use crate::cluster::local::realnode::names::{
    BRIDGE, CNI_NETWORK, CONTAINERD, KUBELET, NODE_NAME, NODE_USER,
};
pub use crate::cluster::local::realnode::placement::{
    Placement, check_machine, free_pod_subnet, host_ip, place,
};
pub use crate::cluster::local::realnode::setup::{import_image, lay_out};
