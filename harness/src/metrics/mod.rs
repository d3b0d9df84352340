//! Measuring a run: one measurement window (`window`) around whatever a
//! workload does — API server and etcd metric deltas (`figures`), the audit
//! log in between (`attribution`: requests per client identity) — plus a
//! pod watch (`pods`: creation → scheduled → running) and the one
//! percentile type.

pub mod attribution;
pub mod figures;
pub mod percentiles;
pub mod pods;
pub mod prom;
pub mod snapshot;
pub mod window;

pub use figures::EtcdFigures;
pub use percentiles::Percentiles;
pub use window::{Closed, Window, WindowFigures};
