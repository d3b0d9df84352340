//! Where a mode runs and as whom (`Site`): built by the provider seam
//! (lifecycle::thor) — the local provider's `default` namespace and
//! certificate users, or a namespace of the run's with ServiceAccounts —
//! and the ServiceAccounts and fake-kubelet Role such a namespace holds.

use std::path::PathBuf;

use serde_json::Value;

use crate::workload::thor::driver::exits::Exits;
use crate::workload::thor::realpods::RealPods;

/// The ServiceAccounts a mode runs as in a namespace of its own.
pub const THOR_SA: &str = "harness-thor-agent";
pub const ECLCC_SA: &str = "harness-eclccserver";
pub const KUBELET_SA: &str = "harness-fake-kubelet";

/// Where a mode runs and as whom: the namespace, HPCC's two identities
/// (kubeconfig and user name each) and how its processes end.
pub struct Site {
    pub namespace: String,
    /// Where the identities' kubectl cache directories go.
    pub work_dir: PathBuf,
    /// How processes end: the fake kubelets' client, or real exits.
    pub exits: Exits,
    /// What makes Thor's pods run on real nodes; None: kwok's nodes.
    pub real_pods: Option<RealPods>,
    pub thor: (PathBuf, String),
    pub eclcc: (PathBuf, String),
    /// Bind the Roles to these ServiceAccounts (thor, eclcc) in the
    /// namespace instead of the templates' certificate users.
    pub service_accounts: Option<(String, String)>,
    /// The FlowSchemas that count requests per identity (--attribution
    /// apf), set up for this site.
    pub apf: Option<crate::cluster::apf_flows::ApfFlows>,
    /// Count HPCC's identities' requests client-side (`--attribution
    /// client`): where neither the audit log nor APF can.
    pub count_requests: bool,
}

/// The fake kubelets' Role in namespace `ns`: read pods, patch their
/// status.
pub fn kubelet_rbac(ns: &str) -> Vec<Value> {
    vec![
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": KUBELET_SA, "namespace": ns},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
            ],
        }),
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": KUBELET_SA, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": KUBELET_SA},
            "subjects": [{"kind": "ServiceAccount", "name": KUBELET_SA, "namespace": ns}],
        }),
    ]
}
