//! The existing provider: any cluster a kubeconfig reaches, which the
//! harness never starts, stops or reconfigures. What it can measure there
//! is what the credentials and the user give it: the audit log only with
//! `--audit-log` (self-managed clusters), etcd's metrics only with
//! `--etcd-metrics-url`; `probe` finds the rest out before anything runs.

pub mod apf;
pub mod cluster;
pub mod labels;
pub mod lacks;
pub mod probe;
pub mod site;

pub use crate::cluster::existing::cluster::{
    ExistingCluster, ExistingOptions, PROVIDER, client_for, refuse_down,
};
