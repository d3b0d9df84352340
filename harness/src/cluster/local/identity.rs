//! Who is who on a local cluster: the client identities (each gets a
//! certificate and a kubeconfig; the audit log names them) and the audit
//! policy that makes per-client attribution possible.

// The controllers' users are re-exported: bench/ names KUEUE_USER here.
pub use crate::cluster::controllers::{JOBSET_USER, KUEUE_USER};
use crate::cluster::local::components::{CONTROLLER_MANAGER, JOBSET, KUEUE, KWOK, SCHEDULER};
use crate::cluster::local::realnode::names::{KUBELET, NODE_USER};

/// The audit policy applied to every cluster (our own file in manifests/).
pub const AUDIT_POLICY: &str = include_str!("../../../../manifests/audit-policy.yaml");

/// Client identities and their groups. Each gets a certificate and a
/// kubeconfig; the audit log names them.
pub const IDENTITIES: &[(&str, &str, &[&str])] = &[
    // (kubeconfig name, user name, groups)
    ("admin", "admin", &["system:masters"]),
    (CONTROLLER_MANAGER, "system:kube-controller-manager", &[]),
    (SCHEDULER, SCHEDULER_USER, &[]),
    (JOBSET, "jobset-controller", &[]),
    (KUEUE, KUEUE_USER, &[]),
    (KWOK, "kwok-controller", &["system:masters"]),
    // HPCC's thoragent and Thor manager; RBAC per mode in manifests/hpcc/rbac.
    ("thor-agent", "thor-agent", &[]),
    // HPCC's eclccserver launching compile Jobs; RBAC in
    // manifests/hpcc/rbac/eclccserver.yaml.
    ("eclccserver", "eclccserver", &[]),
    // What `harness measure` runs (its command's KUBECONFIG, what
    // --apply applies): a cluster admin, named apart from the harness.
    (WORKLOAD_USER, WORKLOAD_USER, &["system:masters"]),
    // A real node's kubelet (`up --real-node`): the Node authorizer and
    // NodeRestriction know it by this name and group.
    (KUBELET, NODE_USER, &["system:nodes"]),
];

/// The user the harness acts as (its kubeconfig is what `up` prints).
pub const ADMIN_USER: &str = "admin";

/// The identity of the workload `harness measure` runs.
pub const WORKLOAD_USER: &str = "workload";

/// The scheduler's user name (cluster::controllers).
pub use crate::cluster::controllers::SCHEDULER_USER;

#[cfg(test)]
mod tests {
    use crate::cluster::local::identity::AUDIT_POLICY;

    #[test]
    fn audit_policy_is_metadata_level() {
        assert!(AUDIT_POLICY.contains("level: Metadata"));
        assert!(AUDIT_POLICY.contains("kind: Policy"));
    }
}
