//! The benchmark core, not any one workload's: a metric declared once
//! (`metric`) and the figures every run has (`figures`); what a workload
//! brings (`run`); runs × rounds in a replayable order (`rounds`); the one
//! Result (`result`) with each mode's typical run, spreads, statistics and
//! ratios; baselines, compare, the machine gate and the thin-p99 rule;
//! history and the README's answer; the renderers (`report`). It knows
//! no workload: each brings its own metrics and words through `Run`.

pub mod across;
pub mod baseline;
pub mod behind;
pub mod calibrate;
pub mod calibrate_across;
pub mod charts;
pub mod condition;
pub mod disk;
pub mod drivers;
pub mod figures;
pub mod here;
pub mod history;
pub mod merge;
pub mod metric;
pub mod on_cores;
pub mod policy;
pub mod report;
pub mod result;
pub mod rounds;
pub mod shard;
pub mod thin;
pub mod verdict;
