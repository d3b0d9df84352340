//! The local provider: a real control plane run as processes on loopback —
//! etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the JobSet
//! controller — with kwok standing in for kubelets on fake nodes.
//!
//! `harness up` starts the processes and exits; they keep running, recorded
//! in `state.json` of the cluster's state directory, until `harness down`.
//!
//! `cluster` is the provider (`LocalCluster` and its `Cluster` trait),
//! `state` what it records; the others are its parts.

pub mod cluster;
pub mod components;
pub mod endpoints;
pub mod files;
pub mod flags;
pub mod health;
pub mod identity;
pub mod kueue;
pub mod kwok_logs;
pub mod layout;
pub mod nodes;
pub mod pod_calls;
pub mod ports;
pub mod process;
pub mod realnode;
pub mod start_up;
pub mod state;

pub use crate::cluster::local::cluster::LocalCluster;
pub use crate::cluster::local::components::{
    APISERVER, CONTROLLER_MANAGER, ETCD, JOBSET, KUEUE, KWOK, SCHEDULER,
};
pub use crate::cluster::local::identity::{ADMIN_USER, AUDIT_POLICY, IDENTITIES};
pub use crate::cluster::local::state::{PROVIDER, State};
