//! The marks the harness reads and writes on a cluster it did not start
//! (a leaf module: the cluster, its probe, its sites and the APF copies
//! all use them).

/// The annotation kwok manages nodes by (kwok's `--manage-nodes-with-
/// annotation-selector`, as the local provider runs it).
pub const KWOK_NODE_ANNOTATION: &str = crate::cluster::kwok::KWOK_NODE_ANNOTATION;
/// The label everything the harness creates on such a cluster carries
/// (cluster::run_id).
pub use crate::cluster::run_id::RUN_ID_LABEL;
