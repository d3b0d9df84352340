//! The suites that run on local clusters, each `pub fn suite(&Arguments)
//! -> Suite` (see `crate::runner`); `tests/<name>.rs` runs one of them,
//! `tests/all.rs` all of them at once. The declarative-case suites (gang,
//! Kueue, batch) are `crate::case_suite` with their directory.

pub mod batch;
pub mod contention;
pub mod existing;
pub mod existing_measure;
pub mod faults;
pub mod gang;
pub mod kind;
pub mod kind_bench;
pub mod kind_fx;
pub mod kind_gang;
pub mod kind_measure;
pub mod kind_workloads;
pub mod kubectl;
pub mod kubelet;
pub mod kubelet_real;
pub mod kueue;
pub mod local;
pub mod logs;
pub mod measure;
pub mod realnode;
pub mod thor;
pub mod thor_real;
