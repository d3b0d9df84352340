//! cert-manager on kind clusters, from its pinned release manifest
//! (`CERT_MANAGER_VERSION` in tools/versions.rs).

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde_json::{Value, json};

use crate::install::release;
use crate::tools::versions::{CERT_MANAGER_VERSION, cert_manager_manifest_url};

pub const NAMESPACE: &str = "cert-manager";
pub const DEPLOYMENTS: &[&str] = &[
    "cert-manager",
    "cert-manager-cainjector",
    "cert-manager-webhook",
];

/// cert-manager's release images (its controller, webhook and
/// cainjector: nested Go modules the module proxy does not serve, so they
/// cannot be built here).
pub fn images() -> Vec<String> {
    ["controller", "webhook", "cainjector"]
        .iter()
        .map(|c| format!("quay.io/jetstack/cert-manager-{c}:v{CERT_MANAGER_VERSION}"))
        .collect()
}

/// Ok when every image is in the engine or can be pulled; else why not,
/// in one line (the first that cannot be had).
pub async fn images_available(docker: &Path) -> std::result::Result<(), String> {
    use crate::tools::command::{Cmd, output, tail};
    for image in images() {
        let inspect = Cmd::new(docker, &["image", "inspect", "--format", "{{.Id}}", &image]);
        if output(&inspect).await.is_ok_and(|o| o.status.success()) {
            continue;
        }
        let pull = Cmd::new(docker, &["pull", "--quiet", &image]);
        match tokio::time::timeout(Duration::from_secs(300), output(&pull)).await {
            Ok(Ok(o)) if o.status.success() => continue,
            Ok(Ok(o)) => {
                let why = tail(&o, 1);
                return Err(format!(
                    "its image {image} is not in the engine and cannot be pulled ({}), and cert-manager cannot be built from Go modules (its commands are nested modules the proxy does not serve)",
                    why.trim()
                ));
            }
            Ok(Err(e)) => return Err(format!("pulling {image}: {e:#}")),
            Err(_) => return Err(format!("pulling {image} did not finish within 300 s")),
        }
    }
    Ok(())
}

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
