//! The kind suite: kind for real (`up --provider kind`), one cluster per
//! Kubernetes minor of the gang profile shared by its trials.
//!
//! - `cluster`: the suite's list and the trials on the shared cluster
//!   itself (nodes, flags, audit, usage, metrics, restarts, down);
//! - `fixtures`: the shared clusters and the helpers their trials share;
//! - `workloads`: workloads on them (a JobSet, a claim, a container's exit
//!   code, the Thor smoke, kwok's model against a kind worker's kubelet);
//! - `gang`: the gang cases on kwok pools beside the kind nodes;
//! - `bench` and `measure`: `bench thor` and `measure` on fresh kind
//!   clusters; `rounds`: a run set's rounds as an Indexed Job on one.

pub mod bench;
pub mod cluster;
pub mod fixtures;
pub mod gang;
pub mod measure;
pub mod rounds;
pub mod workloads;

pub use crate::suite::kind::cluster::suite;
