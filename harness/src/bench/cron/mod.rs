//! `harness bench cron`: what scheduled jobs cost the control plane. N
//! tenants (a namespace each) × M CronJobs each, every one firing every
//! minute for K minutes on a fresh local cluster — the shape a platform
//! that moves users from a batch grid's cron onto Kubernetes runs (one
//! namespace per tool, a few scheduled jobs each, `concurrencyPolicy:
//! Forbid`, short history). One measurement window (metrics::window) over
//! the K minutes: requests by client from the audit log and etcd writes,
//! divided by the scheduled runs (the Jobs the CronJob controller created
//! in the window, from the audit log). A workload of the core
//! (`result::CronRun`): `--repeat N` rounds on fresh clusters, shards,
//! merge, reports and baselines are the core's. Not part of `cargo test`;
//! the batch suite keeps a CronJob case.

mod orchestrate;
pub mod result;
pub mod v1;

pub use orchestrate::{CronBenchOptions, bench_cron};
