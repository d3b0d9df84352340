//! The existing-provider suite: a local cluster handed over only as a
//! kubeconfig. `cluster` holds its shared cluster, the list and the
//! trials of `bench thor` (and a gang case) on it; `measure` those of
//! `harness measure --provider existing`.

pub mod cluster;
pub mod measure;

pub use crate::suite::existing::cluster::suite;
