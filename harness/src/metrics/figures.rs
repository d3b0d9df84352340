//! What the API server and etcd did between two snapshots, from their
//! metrics: request counts, latency percentiles, stored objects, etcd
//! writes and disk latency.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::percentiles::Percentiles;
use crate::metrics::prom::{Sample, counter_delta, histogram_delta, sum_where};
use crate::metrics::snapshot::Snapshot;

/// What the API server did during a run, from its metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiFigures {
    /// Every request the API server counted (all clients, the harness too).
    pub requests_total: u64,
    /// Latency (ms) of mutating and read-only requests, WATCH and
    /// long-running subresources excluded, from apiserver_request_sli_duration_seconds.
    pub latency_ms: BTreeMap<String, Percentiles>,
    /// Objects stored at the end, by resource (apiserver_resource_objects).
    pub objects_after: BTreeMap<String, u64>,
}

const LONG_RUNNING: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];

pub fn api_figures(before: &Snapshot, after: &Snapshot) -> ApiFigures {
    let (b, a) = (&before.apiserver, &after.apiserver);
    let requests_total = counter_delta(b, a, "apiserver_request_total", |_| true) as u64;
    let mut latency_ms = BTreeMap::new();
    for (class, verbs) in [
        ("mutating", &["POST", "PUT", "PATCH", "DELETE", "APPLY"][..]),
        ("read-only", &["GET", "LIST"][..]),
    ] {
        let pred = |s: &Sample| {
            s.labels
                .get("verb")
                .is_some_and(|v| verbs.contains(&v.as_str()))
                && !s
                    .labels
                    .get("subresource")
                    .is_some_and(|r| LONG_RUNNING.contains(&r.as_str()))
        };
        if let Some(p) = histogram_delta(b, a, "apiserver_request_sli_duration_seconds", pred) {
            latency_ms.insert(class.to_string(), p.scaled(1000.0));
        }
    }
    let objects_after = a
        .iter()
        .filter(|s| s.name == "apiserver_resource_objects" && s.value >= 0.0)
        .map(|s| {
            let g = s.labels.get("group").cloned().unwrap_or_default();
            let r = s.labels.get("resource").cloned().unwrap_or_default();
            (
                if g.is_empty() { r } else { format!("{r}.{g}") },
                s.value as u64,
            )
        })
        .collect();
    ApiFigures {
        requests_total,
        latency_ms,
        objects_after,
    }
}

/// What etcd did during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EtcdFigures {
    pub puts: u64,
    pub deletes: u64,
    pub txns: u64,
    pub ranges: u64,
    /// puts + deletes
    pub writes: u64,
    /// Bytes of the key-value pairs put (etcd's
    /// etcd_debugging_mvcc_total_put_size_in_bytes delta).
    #[serde(default)]
    pub put_bytes: u64,
    pub db_size_bytes: u64,
    pub db_in_use_bytes: u64,
    pub wal_fsync_ms: Option<Percentiles>,
    pub backend_commit_ms: Option<Percentiles>,
}

/// Each of etcd's figures, combined over runs (metrics::combine).
impl crate::metrics::combine::Combine for EtcdFigures {
    fn combine(runs: &[&Self]) -> Self {
        crate::metrics::combine::typical!(runs; EtcdFigures {
            puts,
            deletes,
            txns,
            ranges,
            writes,
            put_bytes,
            db_size_bytes,
            db_in_use_bytes,
            wal_fsync_ms,
            backend_commit_ms,
        })
    }
}

pub fn etcd_figures(before: &Snapshot, after: &Snapshot) -> EtcdFigures {
    let (b, a) = (&before.etcd, &after.etcd);
    let d = |n: &str| counter_delta(b, a, n, |_| true) as u64;
    let g = |n: &str| sum_where(a, n, |_| true) as u64;
    let (puts, deletes) = (d("etcd_mvcc_put_total"), d("etcd_mvcc_delete_total"));
    EtcdFigures {
        puts,
        deletes,
        txns: d("etcd_mvcc_txn_total"),
        ranges: d("etcd_mvcc_range_total"),
        writes: puts + deletes,
        put_bytes: d("etcd_debugging_mvcc_total_put_size_in_bytes"),
        db_size_bytes: g("etcd_mvcc_db_total_size_in_bytes"),
        db_in_use_bytes: g("etcd_mvcc_db_total_size_in_use_in_bytes"),
        wal_fsync_ms: histogram_delta(b, a, "etcd_disk_wal_fsync_duration_seconds", |_| true)
            .map(|p| p.scaled(1000.0)),
        backend_commit_ms: histogram_delta(
            b,
            a,
            "etcd_disk_backend_commit_duration_seconds",
            |_| true,
        )
        .map(|p| p.scaled(1000.0)),
    }
}
