//! Benchmarks: the Thor lifecycle per mode (`thor`), gang placement
//! latency (`gang`) and scheduled jobs at scale (`cron`); any workload
//! in the same window (`measure`). Each prints
//! figures and writes its reports; none runs inside `cargo test` (the
//! suites keep small smoke runs of each).

pub mod cron;
pub mod gang;
pub mod measure;
pub mod over_rounds;
pub mod saved;
pub mod thor;
