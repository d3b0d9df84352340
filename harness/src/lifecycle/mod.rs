//! Clusters from start to end: `up` brings one up (provider start, then
//! installs, capacity, readiness) and down, HPCC's install policy, and
//! tears down after Ctrl-C; `target` is where a run set's runs go — a
//! fresh cluster of its provider per run, or the existing one it attached
//! to — and what is done with each after its run; `measured` is where a
//! measured workload acts on each provider's cluster, `thor` where a
//! Thor run does. The one place that composes the layers, so providers
//! and installers stay independent of each other.

pub mod measured;
pub mod target;
pub mod thor;
pub mod up;

pub use crate::lifecycle::target::{OnCluster, Target, same_clients};
pub use crate::lifecycle::up::*;
