//! Metrics and the audit log position at one moment: what a measurement
//! window takes when it opens and when it closes.

use anyhow::Result;

use crate::cluster::provider::Cluster;
use crate::metrics::prom::{self, Sample};

/// Metrics and the audit log position at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub apiserver: Vec<Sample>,
    pub etcd: Vec<Sample>,
    /// Empty unless the window was opened with the scheduler's metrics and
    /// the provider exposes them.
    pub scheduler: Vec<Sample>,
    pub audit_offset: u64,
}

/// Take a snapshot; its audit offset is the log's current end (0 when the
/// cluster's log is out of reach), so the events of a run are read from
/// there afterwards.
pub async fn snapshot(cluster: &impl Cluster, scheduler: bool) -> Result<Snapshot> {
    let apiserver = prom::parse(&cluster.apiserver_metrics().await?);
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
    let audit_offset = match cluster.audit_log() {
        Some(_) => cluster.audit_end()?,
        None => 0,
    };
    Ok(Snapshot {
        apiserver,
        etcd,
        scheduler,
        audit_offset,
    })
}
