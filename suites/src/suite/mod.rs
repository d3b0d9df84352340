//! The suites that run on local clusters, each `pub fn suite(&Arguments)
//! -> Suite` (see `crate::runner`); `tests/<name>.rs` runs one of them,
//! `tests/all.rs` all of them at once. The declarative-case suites (gang,
//! Kueue, batch) are `crate::case_suite` with their directory. A suite of
//! several files is a folder (kind, kubelet, thor, existing) whose mod.rs
//! declares them and re-exports its `suite`.

pub mod batch;
pub mod contention;
pub mod existing;
pub mod faults;
pub mod gang;
pub mod image;
pub mod kind;
pub mod kubectl;
pub mod kubelet;
pub mod kueue;
pub mod local;
pub mod logs;
pub mod measure;
pub mod realnode;
pub mod thor;
