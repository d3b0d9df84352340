//! Measuring a run: API server and etcd metrics before and after (deltas,
//! quantiles from histogram deltas), the audit log in between (requests per
//! client identity), and a pod watch (creation → scheduled → running).

pub mod pods;
pub mod prom;

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::cluster::{AuditEvent, Cluster};
use prom::Sample;

/// Metrics and the audit log position at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub apiserver: Vec<Sample>,
    pub etcd: Vec<Sample>,
    pub audit_offset: u64,
}

/// Take a snapshot; its audit offset is the log's current end, so the
/// events of a run are read from there afterwards.
pub async fn snapshot(cluster: &impl Cluster) -> Result<Snapshot> {
    let apiserver = prom::parse(&cluster.apiserver_metrics().await?);
    let etcd = prom::parse(&cluster.etcd_metrics().await?);
    let audit_offset = cluster.audit_end()?;
    Ok(Snapshot {
        apiserver,
        etcd,
        audit_offset,
    })
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

fn sum_where(samples: &[Sample], name: &str, pred: impl Fn(&Sample) -> bool) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && pred(s))
        .map(|s| s.value)
        .sum()
}

/// after − before of a counter, summed over the series matching `pred`.
pub fn counter_delta(
    before: &[Sample],
    after: &[Sample],
    name: &str,
    pred: impl Fn(&Sample) -> bool + Copy,
) -> f64 {
    (sum_where(after, name, pred) - sum_where(before, name, pred)).max(0.0)
}

/// Quantiles of the observations a histogram gained between two
/// snapshots (in the histogram's unit, seconds for both components).
pub fn histogram_delta(
    before: &[Sample],
    after: &[Sample],
    base: &str,
    pred: impl Fn(&Sample) -> bool + Copy,
) -> Option<Percentiles> {
    let bucket = format!("{base}_bucket");
    let mut les: BTreeMap<String, f64> = BTreeMap::new();
    for (sign, set) in [(-1.0, before), (1.0, after)] {
        for s in set.iter().filter(|s| s.name == bucket && pred(s)) {
            if let Some(le) = s.labels.get("le") {
                *les.entry(le.clone()).or_default() += sign * s.value;
            }
        }
    }
    let buckets: Vec<(f64, f64)> = les
        .into_iter()
        .filter_map(|(le, c)| {
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((bound, c.max(0.0)))
        })
        .collect();
    let q = |p| prom::histogram_quantile(p, &buckets);
    let max = buckets
        .iter()
        .filter(|(b, _)| b.is_finite())
        .fold((0.0, 0.0), |(prev_b, prev_c), &(b, c)| {
            if c > prev_c { (b, c) } else { (prev_b, prev_c) }
        })
        .0;
    Some(Percentiles {
        p50: q(0.5)?,
        p90: q(0.9)?,
        p99: q(0.99)?,
        max,
    })
}

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
            latency_ms.insert(class.to_string(), scale(p, 1000.0));
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

fn scale(p: Percentiles, f: f64) -> Percentiles {
    Percentiles {
        p50: p.p50 * f,
        p90: p.p90 * f,
        p99: p.p99 * f,
        max: p.max * f,
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
    pub db_size_bytes: u64,
    pub db_in_use_bytes: u64,
    pub wal_fsync_ms: Option<Percentiles>,
    pub backend_commit_ms: Option<Percentiles>,
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
        db_size_bytes: g("etcd_mvcc_db_total_size_in_bytes"),
        db_in_use_bytes: g("etcd_mvcc_db_total_size_in_use_in_bytes"),
        wal_fsync_ms: histogram_delta(b, a, "etcd_disk_wal_fsync_duration_seconds", |_| true)
            .map(|p| scale(p, 1000.0)),
        backend_commit_ms: histogram_delta(
            b,
            a,
            "etcd_disk_backend_commit_duration_seconds",
            |_| true,
        )
        .map(|p| scale(p, 1000.0)),
    }
}

/// Requests from the audit log, one per request (watches are seen twice,
/// at ResponseStarted and ResponseComplete: counted once by audit ID).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// "verb resource[/subresource]" → count, the harness's own excluded.
    pub by_request: BTreeMap<String, u64>,
    /// user → count, the harness's own excluded.
    pub by_client: BTreeMap<String, u64>,
    /// user → "verb resource" → count, the harness's own excluded.
    pub by_client_request: BTreeMap<String, BTreeMap<String, u64>>,
    /// created objects by resource, the harness's own excluded.
    pub created: BTreeMap<String, u64>,
    pub total: u64,
    /// Requests the harness itself made (watches, scrapes, setup).
    pub harness: u64,
    /// user → "verb resource code" → count, for responses ≥ 400 other
    /// than 404 and 409 (which kubectl replace --force expects).
    pub failed: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Whether an attribution key ("verb resource[/subresource]") is a write:
/// create, update, patch, delete or deletecollection.
pub fn is_write_request(key: &str) -> bool {
    matches!(
        key.split(' ').next(),
        Some("create" | "update" | "patch" | "delete" | "deletecollection")
    )
}

/// Attribute audit events to clients; `harness_users` are excluded from
/// the totals and counted apart.
pub fn attribute(events: &[AuditEvent], harness_users: &[&str]) -> Attribution {
    let mut seen = BTreeSet::new();
    let mut a = Attribution::default();
    for e in events {
        if !e.audit_id.is_empty() && !seen.insert(e.audit_id.clone()) {
            continue;
        }
        if harness_users.contains(&e.user.username.as_str()) {
            a.harness += 1;
            continue;
        }
        let key = e.key();
        a.total += 1;
        *a.by_request.entry(key.clone()).or_default() += 1;
        *a.by_client.entry(e.user.username.clone()).or_default() += 1;
        let code = e.response_status.as_ref().map_or(0, |s| s.code);
        if code >= 400 && code != 404 && code != 409 {
            *a.failed
                .entry(e.user.username.clone())
                .or_default()
                .entry(format!("{key} {code}"))
                .or_default() += 1;
        }
        *a.by_client_request
            .entry(e.user.username.clone())
            .or_default()
            .entry(key)
            .or_default() += 1;
        if e.verb == "create"
            && let Some(o) = &e.object_ref
            && o.subresource.is_empty()
            && e.response_status.as_ref().is_some_and(|s| s.code < 300)
        {
            *a.created.entry(o.resource.clone()).or_default() += 1;
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::audit::{AuditUser, ObjectRef, ResponseStatus};

    fn s(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
        }
    }

    #[test]
    fn write_requests_are_told_from_reads() {
        for w in [
            "create jobsets",
            "delete jobs",
            "patch pods/status",
            "update leases",
        ] {
            assert!(is_write_request(w), "{w}");
        }
        for r in [
            "get ",
            "get jobsets",
            "list pods",
            "watch jobs",
            "",
            "created x",
        ] {
            assert!(!is_write_request(r), "{r}");
        }
    }

    #[test]
    fn deltas_and_histograms() {
        let before = vec![
            s("c", &[("verb", "POST")], 10.0),
            s("h_bucket", &[("le", "0.1")], 5.0),
            s("h_bucket", &[("le", "1")], 5.0),
            s("h_bucket", &[("le", "+Inf")], 5.0),
        ];
        let after = vec![
            s("c", &[("verb", "POST")], 25.0),
            s("c", &[("verb", "GET")], 3.0),
            s("h_bucket", &[("le", "0.1")], 95.0),
            s("h_bucket", &[("le", "1")], 105.0),
            s("h_bucket", &[("le", "+Inf")], 105.0),
        ];
        assert_eq!(counter_delta(&before, &after, "c", |_| true), 18.0);
        assert_eq!(
            counter_delta(&before, &after, "c", |x| x.labels["verb"] == "POST"),
            15.0
        );
        let p = histogram_delta(&before, &after, "h", |_| true).unwrap();
        assert!(p.p50 <= 0.1 && p.p99 > 0.1 && p.p99 <= 1.0, "{p:?}");
        assert_eq!(p.max, 1.0);
    }

    fn ev(
        id: &str,
        stage: &str,
        user: &str,
        verb: &str,
        resource: &str,
        sub: &str,
        code: u16,
    ) -> AuditEvent {
        AuditEvent {
            audit_id: id.into(),
            stage: stage.into(),
            verb: verb.into(),
            user: AuditUser {
                username: user.into(),
                groups: vec![],
            },
            object_ref: Some(ObjectRef {
                resource: resource.into(),
                subresource: sub.into(),
                ..Default::default()
            }),
            response_status: Some(ResponseStatus { code }),
            ..Default::default()
        }
    }

    #[test]
    fn attribution_counts_each_request_once_and_sets_the_harness_apart() {
        let events = vec![
            ev(
                "1",
                "ResponseComplete",
                "thor-agent",
                "create",
                "jobs",
                "",
                201,
            ),
            ev(
                "2",
                "ResponseStarted",
                "system:kube-scheduler",
                "watch",
                "pods",
                "",
                200,
            ),
            ev(
                "2",
                "ResponseComplete",
                "system:kube-scheduler",
                "watch",
                "pods",
                "",
                200,
            ),
            ev(
                "3",
                "ResponseComplete",
                "system:kube-scheduler",
                "create",
                "pods",
                "binding",
                201,
            ),
            ev("4", "ResponseComplete", "admin", "list", "pods", "", 200),
            ev(
                "5",
                "ResponseComplete",
                "thor-agent",
                "create",
                "jobs",
                "",
                409,
            ),
        ];
        let a = attribute(&events, &["admin"]);
        assert_eq!(a.total, 4);
        assert_eq!(a.harness, 1);
        assert_eq!(a.by_client["system:kube-scheduler"], 2);
        assert_eq!(a.by_request["create pods/binding"], 1);
        assert_eq!(a.created.get("jobs"), Some(&1));
        assert_eq!(a.created.get("pods"), None);
    }
}
