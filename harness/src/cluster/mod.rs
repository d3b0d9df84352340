//! Clusters the harness runs against. One trait (`provider`), several
//! providers: `local` (processes + kwok), `kind` (node containers) and
//! `existing` (a cluster from a kubeconfig), the one a command chose as a
//! value (`choice`);
//! `any` attaches to a cluster by name whatever its provider; `state` is
//! the registry they share; `profile` the control plane's rate and
//! inflight limits; `apf_flows` which FlowSchemas count whose requests.
//! This file only declares and re-exports: the modules below import each
//! other by their own paths.

pub mod any;
pub mod apf_flows;
pub mod audit;
pub mod choice;
pub mod client;
pub mod controllers;
pub mod existing;
pub mod kind;
pub mod kwok;
pub mod local;
pub mod needs;
pub mod pool;
pub mod profile;
pub mod provider;
pub mod read_again;
pub mod run_id;
pub mod spec;
pub mod state;

pub use any::AnyCluster;
pub use audit::AuditEvent;
pub use choice::{Ask, ExistingTarget, KindChoice, Provider};
pub use pool::NodePool;
pub use provider::Cluster;
pub use spec::{ClusterSpec, ComponentHealth, NodeSpec, node_ready};
