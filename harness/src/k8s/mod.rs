//! Facts about Kubernetes that runtime code and offline validation share:
//! the releases the harness runs (one pinned patch per minor) and what
//! differs between them, feature gates and API versions per minor (from
//! harness/data/k8s/), object-name rules, and the JobSet API.

pub mod changes;
pub mod facts;
pub mod jobset;
pub mod names;
pub mod release;

pub use release::{
    DEFAULT_K8S_MINOR, K8S_PRERELEASES, K8S_RELEASES, K8sRelease, MINORS_ENV,
    PRERELEASE_MINORS_ENV, releases_for_suites, releases_to_run,
};
