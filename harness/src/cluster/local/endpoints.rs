//! What the local cluster's components serve beyond the API: where the
//! controllers that run as local processes (JobSet, Kueue) serve their
//! webhooks — what `install` needs to point webhook configurations and CRD
//! conversion at them — and the scheduler's and controller manager's
//! metrics ports.

use std::time::Duration;

use anyhow::{Context, Result};

use crate::cluster::client::ok_body;
use crate::cluster::controllers::WebhookEndpoint;
use crate::cluster::local::layout::Layout;

/// The webhook server on `port`, its certificate signed by the cluster CA.
pub fn webhook(layout: &Layout, port: u16) -> Result<WebhookEndpoint> {
    let ca = layout.ca_cert();
    Ok(WebhookEndpoint {
        base_url: format!("https://127.0.0.1:{port}"),
        ca_pem: crate::input::read(&ca)?,
    })
}

/// A component's Prometheus metrics (kube-scheduler's, kube-controller-
/// manager's), read from its secure `port` with the admin client
/// certificate: the component authenticates it through the API server's
/// client CA and authorizes it by RBAC (the scheduler) or lets /metrics
/// through unasked (the controller manager: flags::controller_manager).
pub async fn component_metrics(layout: &Layout, port: u16, component: &str) -> Result<String> {
    crate::init_crypto();
    let read = |f: &str| {
        let path = layout.pki(f);
        crate::input::bytes_flag("", &path)
    };
    let mut pem = read("client-admin.crt")?;
    pem.extend(read("client-admin.key")?);
    let identity =
        reqwest::Identity::from_pem(&pem).context("loading the admin client certificate")?;
    let ca = reqwest::Certificate::from_pem(&read("ca.crt")?).context("loading the cluster CA")?;
    let url = format!("https://127.0.0.1:{port}/metrics");
    let resp = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .tls_certs_only([ca])
        .identity(identity)
        .build()
        .context("building an HTTP client")?
        .get(&url)
        .send()
        .await
        .with_context(|| format!("GET {url} ({component})"))?;
    ok_body(resp, &format!("{url} ({component})")).await
}
