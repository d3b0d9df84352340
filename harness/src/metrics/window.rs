//! The one measurement window every workload uses: `Window::open` snapshots
//! the API server's and etcd's metrics (and the scheduler's, when asked)
//! and the audit log's end; `close` snapshots again, reads the audit events
//! in between and turns both into `WindowFigures` — requests per client
//! (the cluster's harness identities set apart), API latency, etcd writes,
//! objects created and stored.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::cluster::provider::Cluster;
use crate::metrics::attribution::attribute;
use crate::metrics::figures::{EtcdFigures, api_figures, etcd_figures};
use crate::metrics::percentiles::Percentiles;
use crate::metrics::snapshot::{Snapshot, snapshot};

/// What the control plane did in a window. Flattened into every workload's
/// result (Thor modes, ECL cases), so these keys are the same everywhere.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowFigures {
    /// Requests by every client but the harness (from the audit log).
    #[serde(default)]
    pub api_requests_total: u64,
    /// "verb resource[/subresource]" → count.
    #[serde(default)]
    pub api_requests: BTreeMap<String, u64>,
    /// client identity → count.
    #[serde(default)]
    pub api_requests_by_client: BTreeMap<String, u64>,
    /// client identity → "verb resource" → count.
    #[serde(default)]
    pub api_requests_by_client_request: BTreeMap<String, BTreeMap<String, u64>>,
    /// client → "verb resource code" → count of failed requests (≥ 400,
    /// not 404/409).
    #[serde(default)]
    pub failed_requests: BTreeMap<String, BTreeMap<String, u64>>,
    /// The harness's own requests in the window (excluded above).
    #[serde(default)]
    pub harness_requests: u64,
    /// What apiserver_request_total counted (everyone, the harness too).
    #[serde(default)]
    pub apiserver_requests_counted: u64,
    /// The audited requests that metric counts: those for a resource,
    /// everyone's (discovery and OpenAPI GETs are audited, not counted).
    #[serde(default)]
    pub audited_resource_requests: u64,
    #[serde(default)]
    pub etcd_writes_total: u64,
    #[serde(default)]
    pub etcd: EtcdFigures,
    /// Objects created by clients other than the harness, by resource.
    #[serde(default)]
    pub objects_created: BTreeMap<String, u64>,
    /// Latency (ms) of mutating and read-only requests.
    #[serde(default)]
    pub api_latency_ms: BTreeMap<String, Percentiles>,
    /// Objects stored at the end, by resource.
    #[serde(default)]
    pub objects_after: BTreeMap<String, u64>,
}

/// An open window.
pub struct Window {
    before: Snapshot,
    opened: Instant,
    scheduler: bool,
}

/// A closed window: its figures and the raw snapshots (for workload-
/// specific metrics such as the scheduler's podgroup histograms).
#[derive(Debug, Clone)]
pub struct Closed {
    pub figures: WindowFigures,
    pub before: Snapshot,
    pub after: Snapshot,
    pub elapsed: Duration,
}

impl Window {
    /// Snapshot the API server, etcd and the audit log's end.
    pub async fn open(cluster: &impl Cluster) -> Result<Window> {
        Self::open_with(cluster, false).await
    }

    /// As `open`, also snapshotting the scheduler's metrics.
    pub async fn open_with(cluster: &impl Cluster, scheduler: bool) -> Result<Window> {
        Ok(Window {
            before: snapshot(cluster, scheduler).await?,
            opened: Instant::now(),
            scheduler,
        })
    }

    /// Snapshot again and compute the window's figures.
    pub async fn close(self, cluster: &impl Cluster) -> Result<Closed> {
        let elapsed = self.opened.elapsed();
        let after = snapshot(cluster, self.scheduler).await?;
        let (events, _) = cluster.audit_events(self.before.audit_offset)?;
        let attribution = attribute(&events, &cluster.harness_users());
        let api = api_figures(&self.before, &after);
        let etcd = etcd_figures(&self.before, &after);
        let figures = WindowFigures {
            api_requests_total: attribution.total,
            api_requests: attribution.by_request,
            api_requests_by_client: attribution.by_client,
            api_requests_by_client_request: attribution.by_client_request,
            failed_requests: attribution.failed,
            harness_requests: attribution.harness,
            apiserver_requests_counted: api.requests_total,
            audited_resource_requests: attribution.resource_requests,
            etcd_writes_total: etcd.writes,
            etcd,
            objects_created: attribution.created,
            api_latency_ms: api.latency_ms,
            objects_after: api.objects_after,
        };
        Ok(Closed {
            figures,
            before: self.before,
            after,
            elapsed,
        })
    }
}
