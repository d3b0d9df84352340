//! cert-manager on kind clusters, from its pinned release manifest
//! (`CERT_MANAGER_VERSION` in tools/versions.rs).

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::install::release;
use crate::tools::versions::cert_manager_manifest_url;

pub const NAMESPACE: &str = "cert-manager";
pub const DEPLOYMENTS: &[&str] = &[
    "cert-manager",
    "cert-manager-cainjector",
    "cert-manager-webhook",
];

pub async fn install(kubectl: &Path, kubeconfig: &Path) -> Result<()> {
    release::apply_url(kubectl, kubeconfig, &cert_manager_manifest_url()).await
}

/// A self-signed Issuer: cert-manager's validating webhook must accept it.
pub fn probe() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": "harness-webhook-probe", "namespace": "default"},
        "spec": {"selfSigned": {}}
    })
}

pub async fn wait_ready(
    client: &kube::Client,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    release::wait_ready(
        client,
        "cert-manager",
        NAMESPACE,
        DEPLOYMENTS,
        Some(&probe()),
        timeout,
        alive,
    )
    .await
}
