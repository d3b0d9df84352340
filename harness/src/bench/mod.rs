//! Benchmarks: the Thor lifecycle per mode (`thor`) and gang placement
//! latency (`gang`). Each prints figures and writes its reports; none runs
//! inside `cargo test` (the suites keep small smoke runs of each).

pub mod gang;
pub mod thor;
