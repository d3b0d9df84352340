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
    /// Watch events sent per resource, and their bytes.
    pub watch_events: BTreeMap<String, WatchEvents>,
}

const LONG_RUNNING: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];

/// Watch events the API server sent for one resource in a window, and
/// their size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchEvents {
    pub events: u64,
    pub bytes: u64,
}

/// Per resource ("jobs.batch", "pods"): the watch events the API server
/// sent (`apiserver_watch_events_total`) and their bytes
/// (`apiserver_watch_events_sizes`' sum), deltas of the window;
/// resources that sent none are left out.
fn watch_events(b: &[Sample], a: &[Sample]) -> BTreeMap<String, WatchEvents> {
    let resource = |s: &Sample| {
        let g = s.labels.get("group").map_or("", String::as_str);
        let r = s.labels.get("resource").map_or("", String::as_str);
        if g.is_empty() {
            r.to_string()
        } else {
            format!("{r}.{g}")
        }
    };
    let mut names: Vec<String> = a
        .iter()
        .filter(|s| s.name == "apiserver_watch_events_total")
        .map(resource)
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let of = |s: &Sample| resource(s) == name;
            let w = WatchEvents {
                events: counter_delta(b, a, "apiserver_watch_events_total", of) as u64,
                bytes: counter_delta(b, a, "apiserver_watch_events_sizes_sum", of) as u64,
            };
            (name, w)
        })
        .filter(|(_, w)| w.events > 0)
        .collect()
}

/// Per resource: the mean events and bytes (absent: 0).
impl crate::metrics::combine::Combine for BTreeMap<String, WatchEvents> {
    fn combine(runs: &[&Self]) -> Self {
        use crate::metrics::combine::Combine;
        let field = |f: fn(&WatchEvents) -> u64| -> BTreeMap<String, u64> {
            let maps: Vec<BTreeMap<String, u64>> = runs
                .iter()
                .map(|m| m.iter().map(|(k, w)| (k.clone(), f(w))).collect())
                .collect();
            Combine::combine(&maps.iter().collect::<Vec<_>>())
        };
        let (events, bytes) = (field(|w| w.events), field(|w| w.bytes));
        events
            .into_iter()
            .map(|(k, e)| {
                let b = bytes.get(&k).copied().unwrap_or(0);
                (
                    k,
                    WatchEvents {
                        events: e,
                        bytes: b,
                    },
                )
            })
            .collect()
    }
}

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
        watch_events: watch_events(b, a),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_events_are_the_window_s_deltas_per_resource_with_their_bytes() {
        let text = |jobs: u64, pods: u64, bytes: u64| {
            format!(
                "apiserver_watch_events_total{{group=\"batch\",resource=\"jobs\",version=\"v1\"}} {jobs}\n\
                 apiserver_watch_events_total{{group=\"\",resource=\"pods\",version=\"v1\"}} {pods}\n\
                 apiserver_watch_events_total{{group=\"\",resource=\"nodes\",version=\"v1\"}} 5\n\
                 apiserver_watch_events_sizes_sum{{group=\"batch\",resource=\"jobs\",version=\"v1\"}} {bytes}\n"
            )
        };
        let (b, a) = (
            crate::metrics::prom::parse(&text(10, 100, 1000)),
            crate::metrics::prom::parse(&text(16, 140, 7000)),
        );
        let w = watch_events(&b, &a);
        assert_eq!(
            w["jobs.batch"],
            WatchEvents {
                events: 6,
                bytes: 6000
            }
        );
        assert_eq!(w["pods"].events, 40);
        // A resource that sent nothing in the window is left out.
        assert!(!w.contains_key("nodes"), "{w:?}");
    }
}
