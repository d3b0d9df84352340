//! Gang scheduling cases: data files that apply objects, act on them and
//! check, per Kubernetes minor, what the Job controller and the scheduler
//! really did — and a gang placement latency benchmark.

pub mod bench;
pub mod case;
pub mod matcher;
pub mod report;
pub mod run;
