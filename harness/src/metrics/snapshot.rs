//! Metrics and the audit log position at one moment: what a measurement
//! window takes when it opens and when it closes.

use anyhow::Result;

use crate::cluster::provider::Cluster;
use crate::metrics::prom::{self, Sample};
use crate::metrics::throttle;

/// Metrics and the audit log position at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub apiserver: Vec<Sample>,
    pub etcd: Vec<Sample>,
    /// Empty unless the window was opened with the scheduler's metrics and
    /// the provider exposes them.
    pub scheduler: Vec<Sample>,
    /// kube-controller-manager's client-side throttling histogram
    /// (metrics::throttle); empty where the provider does not serve it.
    pub controller_manager: Vec<Sample>,
    pub audit_offset: u64,
}

/// Take a snapshot; its audit offset is the log's current end (0 when the
/// cluster's log is out of reach), so the events of a run are read from
/// there afterwards.
pub async fn snapshot(cluster: &impl Cluster, scheduler: bool) -> Result<Snapshot> {
    let apiserver = cluster.apiserver_metrics().await?;
    // The audit log's end right after the API server's counters, before
    // parsing them and before the other scrapes: the two count the same
    // requests only if taken at one moment (on a loaded machine the
    // scrapes between took long enough for the controller manager's
    // burst to fall between them).
    let audit_offset = match cluster.audit_log() {
        Some(_) => cluster.audit_end()?,
        None => 0,
    };
    let apiserver = prom::parse(&apiserver);
    let etcd = match cluster.measures_etcd() {
        true => prom::parse(&cluster.etcd_metrics().await?),
        false => Vec::new(),
    };
    let scheduler = match scheduler {
        true => cluster
            .scheduler_metrics()
            .await?
            .map(|t| prom::parse(&t))
            .unwrap_or_default(),
        false => Vec::new(),
    };
    // Last, as measured: scraped right after the audit log's end instead,
    // its limiter counts and the audit log's requests of its identities
    // were 1–2 apart in 5 of 12 windows under load, against equal in 12
    // of 12 here (smoke, 3 modes × 4, 3 CPU hogs). Not fatal: a cluster
    // started before the controller manager served its metrics to the
    // harness (or a provider that cannot reach it) reports its throttling
    // as not measured.
    let controller_manager = match cluster.controller_manager_metrics().await {
        Ok(Some(t)) => throttle::keep(prom::parse(&t)),
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::debug!("kube-controller-manager's metrics: {e:#}");
            Vec::new()
        }
    };
    Ok(Snapshot {
        apiserver,
        etcd,
        scheduler,
        controller_manager,
        audit_offset,
    })
}
