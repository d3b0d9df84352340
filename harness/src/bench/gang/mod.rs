//! `harness bench gang`: gang placement latency on a fresh local cluster per
//! Kubernetes minor (that release's gang feature set and Job integration),
//! gangs of each size placed one after another on a pool of fake nodes.
//! A workload of the core (`result::GangRun`): each release is a mode,
//! `--repeat N` rounds run every release once per round on a fresh
//! cluster, in an order shuffled from a printed seed, and each release is
//! judged against the first asked for, paired by round — the core's
//! rounds, shards, merge, reports and baselines. Not part of `cargo
//! test` (the gang suite keeps a gang-of-8 smoke).

mod orchestrate;
pub mod result;
pub mod v1;

pub use orchestrate::{GangBenchOptions, bench_gang};
