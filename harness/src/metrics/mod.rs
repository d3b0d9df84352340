//! Measuring a run: one measurement window (`window`) around whatever a
//! workload does — API server and etcd metric deltas (`figures`), the audit
//! log in between (`attribution`: requests per client identity) — plus a
//! pod watch (`pods`: creation → scheduled → running), CPU and memory per
//! component (`procfs`, `usage`), metrics over time (`timeline`), API
//! latency against the SLOs (`slo`), client-side throttling (`throttle`)
//! and the one percentile type.

pub mod apf;
pub mod attribution;
pub mod combine;
pub mod figures;
pub mod jobs;
pub mod node_procs;
pub mod percentiles;
pub mod pods;
pub mod pprof;
pub mod procfs;
pub mod prom;
pub mod slo;
pub mod snapshot;
pub mod throttle;
pub mod timeline;
pub mod usage;
pub mod window;

pub use figures::EtcdFigures;
pub use percentiles::Percentiles;
pub use window::{Closed, Options, Window, WindowFigures};
