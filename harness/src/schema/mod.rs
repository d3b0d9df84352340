//! Typed decoding of positioned YAML (type errors and unknown fields at
//! file:line:column), the findings it reports, the harness's own models of
//! kinds k8s-openapi does not have (JobSet, the 1.36 Workload/PodGroup,
//! audit Policy, kind Cluster), and the document checks that runtime and
//! `harness validate` share.
//!
//! `check` is the one YAML entry (`check_yaml`) every check goes through.

pub mod check;
pub mod finding;
pub mod k8s;
pub mod kind;
pub mod models;
pub mod typed;

pub use crate::schema::check::{check_yaml, yaml_finding};
pub use crate::schema::finding::Finding;
