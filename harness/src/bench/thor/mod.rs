//! `harness bench thor`: each mode of a scenario on the target (a fresh
//! cluster of the chosen provider per run, or an existing cluster), the
//! Thor drivers inside one measurement window, as one Result
//! (`result`), rendered by `report` and judged against a stored baseline by
//! `baseline`.

pub mod answer;
pub mod contention;
pub mod headline;
pub mod metrics;
pub mod orchestrate;
pub mod plan;
pub mod report;
pub mod result;
pub mod run;
pub mod runs;
pub mod saved;

pub use crate::bench::thor::orchestrate::*;
