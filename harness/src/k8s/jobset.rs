//! The JobSet API as the harness uses it (sigs.k8s.io/jobset at the pinned
//! version, whose CRD serves only v1alpha2).

use kube::discovery::ApiResource;

pub const GROUP: &str = "jobset.x-k8s.io";
pub const VERSION: &str = "v1alpha2";
pub const CRD_NAME: &str = "jobsets.jobset.x-k8s.io";

/// The JobSet resource, for dynamic clients.
pub fn api_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "JobSet".into(),
        plural: "jobsets".into(),
    }
}
