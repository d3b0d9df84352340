//! What kubectl finds when it discovers a server: whether it may keep a
//! discovery cache ([`DiscoveryCache`]), and what the server serves
//! ([`Discovery`], read from the live server) — the input of the
//! per-call cost model in kubectl.rs.

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cluster::client::client_get;

/// Whether kubectl can keep its discovery and HTTP caches between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryCache {
    /// HPCC's case: the cache directory cannot be created, so nothing is
    /// read from disk and nothing is written: every call is cold.
    None,
    /// A persistent, writable cache that earlier calls already filled.
    Warm,
}

impl DiscoveryCache {
    pub fn name(self) -> &'static str {
        match self {
            DiscoveryCache::None => "no-cache",
            DiscoveryCache::Warm => "warm",
        }
    }
}

/// What a server serves for discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The versions at /api ("v1").
    pub core_versions: Vec<String>,
    /// Every version of every group at /apis ("autoscaling/v2", "autoscaling/v1", …).
    pub group_versions: Vec<String>,
    /// The aggregated formats (apidiscovery.k8s.io "v2", "v2beta1") both
    /// /api and /apis answer in.
    pub aggregated: Vec<&'static str>,
}

impl Discovery {
    /// Read it from a live server (discovery is open to every authenticated user).
    pub async fn read(client: &kube::Client) -> Result<Discovery> {
        let json = |path: &'static str| async move {
            let text = client_get(client, path).await?;
            serde_json::from_str::<Value>(&text)
                .with_context(|| format!("kubectl model: {path} is not JSON"))
        };
        let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
        let core_versions: Vec<String> = items(&json("/api").await?["versions"])
            .iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        let group_versions: Vec<String> = items(&json("/apis").await?["groups"])
            .iter()
            .flat_map(|g| items(&g["versions"]))
            .filter_map(|v| v["groupVersion"].as_str().map(String::from))
            .collect();
        if core_versions.is_empty() || group_versions.is_empty() {
            bail!("kubectl model: the server lists no versions at /api or /apis");
        }
        let mut aggregated = Vec::new();
        for v in ["v2", "v2beta1"] {
            if answers_in(client, "/api", v).await? && answers_in(client, "/apis", v).await? {
                aggregated.push(v);
            }
        }
        Ok(Discovery {
            core_versions,
            group_versions,
            aggregated,
        })
    }

    /// Group-versions legacy discovery fetches one by one: /api's and /apis's.
    pub fn legacy_group_versions(&self) -> u32 {
        (self.core_versions.len() + self.group_versions.len()) as u32
    }
}

/// Whether `path` answers in aggregated discovery `version` when asked for it.
async fn answers_in(client: &kube::Client, path: &str, version: &str) -> Result<bool> {
    let accept =
        format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    let req = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::from(Vec::new()))?;
    let resp = client
        .send(req)
        .await
        .with_context(|| format!("kubectl model: GET {path} as {version}"))?;
    let content_type = resp.headers().get(http::header::CONTENT_TYPE);
    let content_type = content_type
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // client-go compares the parameters in any order (ContentTypeIsGVK).
    let params: Vec<&str> = content_type.split(';').map(str::trim).collect();
    let wanted = [
        "g=apidiscovery.k8s.io",
        &format!("v={version}"),
        "as=APIGroupDiscoveryList",
    ];
    Ok(resp.status().is_success() && wanted.iter().all(|w| params.contains(w)))
}
