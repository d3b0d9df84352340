//! The kind provider: a cluster of kind node containers (Kubernetes in
//! Docker) made with the `kind` CLI from a profile in kind-configs/.
//!
//! `start` = preflight (docker, kind, kubectl, helm on PATH; the Docker
//! daemon answers; kind is the pinned version) → the name is free (no state
//! dir, not in `kind get clusters`) → state dir with the effective config,
//! the audit policy and an audit log file the API server appends to through
//! a host mount → `kind create cluster` → kubeconfig (in the state dir, never
//! ~/.kube/config) and node container names recorded in `state.json`.
//! Installs (cert-manager, JobSet, Kueue) are `lifecycle::up_kind`'s next
//! step, in `install/`.
//!
//! In tests the external programs are recording fake commands (`fakes`).
//!
//! `cluster` is the provider (`KindCluster` and its `Cluster` trait),
//! `state` what it records; the others are its parts.

pub mod cgroup_driver;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod doctor;
/// Test support (recording fake commands): built for this crate's tests
/// and, with the `testkit` feature, for its integration tests.
#[cfg(any(test, feature = "testkit"))]
pub mod fakes;
pub mod health;
pub mod images;
pub mod inside;
pub mod kube_proxy;
pub mod network;
pub mod patches;
pub mod restarts;
pub mod retry;
pub mod state;
pub mod turns;

pub use crate::cluster::kind::cluster::{KindCluster, KindSpec, abandon};
pub use crate::cluster::kind::images::{BUILT_NETWORK, KindImages};
pub use crate::cluster::kind::state::{KindState, PROVIDER, kind_cluster_name};
