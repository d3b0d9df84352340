//! The controllers the harness installs beside a control plane (JobSet,
//! Kueue), as the providers and install/ both know them: the users their
//! client certificates name (RBAC binds them), the namespace Kueue works
//! in, and where a controller run as a process serves its webhooks — the
//! local provider reports it (`LocalCluster::jobset_webhook`), install
//! points the CRDs and webhook configurations there. Plain data, so that
//! install names no provider.

/// A webhook server a controller runs as a local process: its URL and
/// the CA that signed its certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// e.g. https://127.0.0.1:40123 (paths are appended)
    pub base_url: String,
    pub ca_pem: String,
}

/// The user name the JobSet controller runs as (RBAC binds it).
pub const JOBSET_USER: &str = "jobset-controller";

/// The user name the Kueue controller runs as (RBAC binds it).
pub const KUEUE_USER: &str = "kueue-controller";

/// The scheduler's user name (the same on every cluster).
pub const SCHEDULER_USER: &str = "system:kube-scheduler";

/// The namespace Kueue works in (its Configuration's `namespace`): the one
/// its release manifests create.
pub const KUEUE_NAMESPACE: &str = "kueue-system";
