//! The kubelet suite: kwok's kubelet models, measured (`model`), and the
//! kubelet-like model against a real kubelet (`real`, run by the realnode
//! and kind suites).

pub mod model;
pub mod real;

pub use crate::suite::kubelet::model::suite;
