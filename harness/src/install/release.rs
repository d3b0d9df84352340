//! Components installed from their published release manifests (kind
//! clusters, where controllers run as pods): `kubectl apply --server-side`
//! of the pinned release URL, fetched at run time, then readiness — the
//! controller Deployments Available and the webhooks answering a server-side
//! dry-run of a probe object.

use std::path::Path;
use std::time::Duration;

use crate::poll::Poll;
use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

use crate::cluster::kind::commands::{self, plan};

/// A controller installed on kind from its pinned release manifest.
pub struct Release {
    /// For messages: "JobSet".
    pub component: &'static str,
    pub namespace: &'static str,
    pub deployments: &'static [&'static str],
    pub url: fn() -> String,
}

impl Release {
    pub async fn install(&self, kubectl: &Path, kubeconfig: &Path) -> Result<()> {
        apply_url(kubectl, kubeconfig, &(self.url)()).await
    }

    /// Its Deployments Available (the webhooks are probed by the caller,
    /// as for a local controller).
    pub async fn wait_available(
        &self,
        client: &kube::Client,
        timeout: Duration,
        alive: impl FnMut() -> Result<()> + Send,
    ) -> Result<()> {
        wait_ready(
            client,
            self.component,
            self.namespace,
            self.deployments,
            None,
            timeout,
            alive,
        )
        .await
    }
}

/// Apply a release manifest from `url` with kubectl (which fetches it).
pub async fn apply_url(kubectl: &Path, kubeconfig: &Path, url: &str) -> Result<()> {
    commands::run(&plan::apply_url(kubectl, kubeconfig, url))
        .await
        .with_context(|| format!("applying {url}"))?;
    Ok(())
}

fn available(d: &Deployment) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    let status = d.status.as_ref();
    let ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
    let cond = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
            })
        });
    cond && ready >= want
}

/// Server-side dry-run create of `obj`: passes when every admission
/// webhook on its path answers and accepts it.
pub async fn dry_run_create(client: &kube::Client, obj: &Value) -> Result<()> {
    let api_version = obj["apiVersion"]
        .as_str()
        .context("probe without apiVersion")?;
    let kind = obj["kind"].as_str().context("probe without kind")?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("the API server does not serve {api_version} {kind} yet"))?;
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        _ => Api::all_with(client.clone(), &ar),
    };
    let probe: DynamicObject = serde_json::from_value(obj.clone())?;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&pp, &probe)
        .await
        .with_context(|| format!("dry-run create of {kind} {}", obj["metadata"]["name"]))?;
    Ok(())
}

/// Wait until the Deployments `names` in `namespace` are Available and
/// `probe` (if any) is accepted; `alive` fails early when the cluster
/// itself broke.
pub async fn wait_ready(
    client: &kube::Client,
    component: &str,
    namespace: &str,
    names: &[&str],
    probe: Option<&Value>,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    Poll::new(format!("{component} ready"), timeout)
        .every(Duration::from_secs(1))
        .alive(alive)
        .until_state(|| async {
            let mut waiting = Vec::new();
            for n in names {
                match deployments.get_opt(n).await {
                    Ok(Some(d)) if available(&d) => {}
                    Ok(Some(_)) => waiting.push(format!("{namespace}/{n} not Available")),
                    Ok(None) => waiting.push(format!("{namespace}/{n} does not exist")),
                    Err(e) => waiting.push(format!("{namespace}/{n}: {e}")),
                }
            }
            if !waiting.is_empty() {
                return Ok(Err(waiting.join(", ")));
            }
            Ok(match probe {
                None => Ok(()),
                Some(p) => dry_run_create(client, p)
                    .await
                    .map_err(|e| format!("{e:#}")),
            })
        })
        .await
}
