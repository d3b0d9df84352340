//! Benchmarks: the core every benchmark shares (`core`: metrics declared
//! once, rounds, the Result, baselines, compare, renderers), and the
//! workloads — the Thor lifecycle per mode (`thor`), any workload in the
//! same window (`measure`), gang placement latency (`gang`) and scheduled
//! jobs at scale (`cron`). Each prints figures and writes its reports;
//! none runs inside `cargo test` (the suites keep small smoke runs of
//! each). `saved` reads any saved result back by its schema.

pub mod core;
pub mod cron;
pub mod gang;
pub mod measure;
pub mod merge;
pub mod on_cluster;
pub mod saved;
pub mod thor;
