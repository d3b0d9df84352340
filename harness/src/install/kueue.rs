//! Kueue on kind clusters (`--kueue`), from its pinned release manifest
//! (`KUEUE_VERSION` in tools/versions.rs).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use serde_json::{Value, json};

use crate::install::release;
use crate::tools::versions::kueue_manifest_url;

pub const NAMESPACE: &str = "kueue-system";
pub const DEPLOYMENTS: &[&str] = &["kueue-controller-manager"];
pub const FLAVOR_CRD: &str = "resourceflavors.kueue.x-k8s.io";

pub async fn install(kubectl: &Path, kubeconfig: &Path) -> Result<()> {
    release::apply_url(kubectl, kubeconfig, &kueue_manifest_url()).await
}

/// An empty ResourceFlavor in `version` (the CRD's storage version, read
/// from the server: Kueue releases move it): Kueue's webhooks must accept it.
pub fn probe(version: &str) -> Value {
    json!({
        "apiVersion": format!("kueue.x-k8s.io/{version}"),
        "kind": "ResourceFlavor",
        "metadata": {"name": "harness-webhook-probe"},
        "spec": {}
    })
}

async fn storage_version(client: &kube::Client) -> Result<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds
        .get(FLAVOR_CRD)
        .await
        .with_context(|| format!("reading CRD {FLAVOR_CRD}"))?;
    crd.spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
        .with_context(|| format!("CRD {FLAVOR_CRD} has no storage version"))
}

pub async fn wait_ready(
    client: &kube::Client,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let version = storage_version(client).await?;
    release::wait_ready(
        client,
        "Kueue",
        NAMESPACE,
        DEPLOYMENTS,
        Some(&probe(&version)),
        timeout,
        alive,
    )
    .await
}
