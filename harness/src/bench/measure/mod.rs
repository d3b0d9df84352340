//! `harness measure`: any workload — a command, a folder of manifests —
//! inside the one measurement window (metrics::window) on a fresh local
//! cluster per run, with the Thor benchmark's Result, report, statistics
//! and baselines (each variant a "mode"): requests per client identity
//! (user and user agent), etcd writes, CPU and memory per component, API
//! latency against the SLOs, pod start-up, a timeline. Variants run
//! interleaved over `--repeat` rounds in an order shuffled from a printed
//! seed.

pub mod apply;
pub mod command;
pub mod kueue_perf;
pub mod orchestrate;
pub mod report;
pub mod result;
pub mod run;
pub mod workload;

pub use crate::bench::measure::orchestrate::*;
