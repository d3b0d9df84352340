//! API call latency against the Kubernetes SLOs (kubernetes/community,
//! sig-scalability/slos/api_call_latency.md): mutating calls (POST, PUT,
//! PATCH, DELETE) per (resource, verb) p99 ≤ 1 s; non-streaming reads
//! (GET and LIST) per (resource, scope) p99 ≤ 1 s for scope=resource,
//! 5 s for namespace, 30 s for cluster. Read from the window's deltas of
//! apiserver_request_sli_duration_seconds (the SLI histogram: no webhook
//! or fairness-queue time), quantiles interpolated inside its buckets.
//! Upstream judges a p99 per cluster-day over 5-minute windows; here the
//! p99 is the whole window's, so a breach says "this workload's calls were
//! slower than the SLO allows", not "the cluster is out of SLO".

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::metrics::percentiles::Percentiles;
use crate::metrics::prom::{Sample, counter_delta, histogram_delta};

const SLI: &str = "apiserver_request_sli_duration_seconds";
const MUTATING: &[&str] = &["POST", "PUT", "PATCH", "DELETE", "APPLY"];
const READ: &[&str] = &["GET", "LIST"];
const LONG_RUNNING: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];

/// One (verb class, resource, scope) row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SloRow {
    /// The verb for mutating rows; "GET/LIST" for reads.
    pub verb: String,
    /// resource[.group][/subresource]
    pub resource: String,
    /// resource, namespace or cluster (reads); the label's value for
    /// mutating rows.
    pub scope: String,
    pub count: u64,
    pub latency_ms: Percentiles,
    /// The SLO's p99 bound.
    pub slo_ms: f64,
}

impl SloRow {
    pub fn breached(&self) -> bool {
        self.latency_ms.p99 > self.slo_ms
    }
    /// p99 as a share of the SLO (1.0 = at the bound).
    pub fn load(&self) -> f64 {
        self.latency_ms.p99 / self.slo_ms
    }
    /// The row's key in comparisons: "verb resource scope".
    pub fn key(&self) -> String {
        format!("{} {} {}", self.verb, self.resource, self.scope)
    }
}

/// The SLO bound (ms) of a read with this scope.
pub fn read_slo_ms(scope: &str) -> f64 {
    match scope {
        "resource" => 1_000.0,
        "namespace" => 5_000.0,
        _ => 30_000.0,
    }
}

fn l<'a>(s: &'a Sample, k: &str) -> &'a str {
    s.labels.get(k).map_or("", String::as_str)
}

fn resource_of(s: &Sample) -> String {
    let (g, r, sub) = (l(s, "group"), l(s, "resource"), l(s, "subresource"));
    let base = if g.is_empty() {
        r.to_string()
    } else {
        format!("{r}.{g}")
    };
    if sub.is_empty() {
        base
    } else {
        format!("{base}/{sub}")
    }
}

/// Every row with calls in the window, worst (highest p99 / SLO) first.
pub fn rows(before: &[Sample], after: &[Sample]) -> Vec<SloRow> {
    let count = format!("{SLI}_count");
    let mut keys: BTreeSet<(String, String, String)> = BTreeSet::new();
    for s in after.iter().filter(|s| s.name == count) {
        let verb = l(s, "verb");
        if LONG_RUNNING.contains(&l(s, "subresource")) {
            continue;
        }
        let class = if MUTATING.contains(&verb) {
            verb.to_string()
        } else if READ.contains(&verb) {
            "GET/LIST".to_string()
        } else {
            continue;
        };
        keys.insert((class, resource_of(s), l(s, "scope").to_string()));
    }
    let mut out: Vec<SloRow> = keys
        .into_iter()
        .filter_map(|(verb, resource, scope)| {
            let m = |s: &Sample| {
                let v = l(s, "verb");
                let class_ok = match verb.as_str() {
                    "GET/LIST" => READ.contains(&v),
                    other => v == other,
                };
                class_ok && l(s, "scope") == scope && resource_of(s) == resource
            };
            let n = counter_delta(before, after, &count, m) as u64;
            if n == 0 {
                return None;
            }
            let p = histogram_delta(before, after, SLI, m)?.scaled(1000.0);
            let slo_ms = match verb.as_str() {
                "GET/LIST" => read_slo_ms(&scope),
                _ => 1_000.0,
            };
            Some(SloRow {
                verb,
                resource,
                scope,
                count: n,
                latency_ms: p,
                slo_ms,
            })
        })
        .collect();
    out.sort_by(|a, b| b.load().total_cmp(&a.load()).then(b.count.cmp(&a.count)));
    out
}

/// Rows by key, for comparisons with a baseline.
pub fn by_key(rows: &[SloRow]) -> BTreeMap<String, &SloRow> {
    rows.iter().map(|r| (r.key(), r)).collect()
}

#[cfg(test)]
mod tests {
    use crate::metrics::prom::parse;
    use crate::metrics::slo::{read_slo_ms, rows};

    fn hist(labels: &str, fast: u64, slow: u64, slower: u64) -> String {
        let n = fast + slow + slower;
        let name = "apiserver_request_sli_duration_seconds";
        format!(
            "{name}_bucket{{{labels},le=\"0.1\"}} {fast}\n{name}_bucket{{{labels},le=\"2\"}} {}\n\
             {name}_bucket{{{labels},le=\"60\"}} {n}\n{name}_bucket{{{labels},le=\"+Inf\"}} {n}\n\
             {name}_count{{{labels}}} {n}\n",
            fast + slow
        )
    }

    #[test]
    fn rows_per_class_resource_and_scope_judged_against_their_bound() {
        let pods_list =
            "group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"LIST\"";
        let pods_get =
            "group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"GET\"";
        let jobs_post =
            "group=\"batch\",resource=\"jobs\",scope=\"resource\",subresource=\"\",verb=\"POST\"";
        let logs =
            "group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"log\",verb=\"GET\"";
        let watch =
            "group=\"\",resource=\"pods\",scope=\"cluster\",subresource=\"\",verb=\"WATCH\"";
        let before = parse(&[hist(pods_get, 10, 0, 0), hist(jobs_post, 5, 0, 0)].concat());
        let after = parse(
            &[
                hist(pods_list, 0, 100, 0),
                hist(pods_get, 110, 0, 0),
                hist(jobs_post, 5, 50, 0),
                hist(logs, 0, 0, 9),
                hist(watch, 0, 0, 9),
            ]
            .concat(),
        );
        let r = rows(&before, &after);
        let keys: Vec<String> = r.iter().map(|r| r.key()).collect();
        // The POSTs take 0.1–2 s: over the 1 s bound, worst first; the
        // cluster LIST's 0.1–2 s is well inside its 30 s; logs and
        // watches are not in the SLO.
        assert_eq!(
            keys,
            [
                "POST jobs.batch resource",
                "GET/LIST pods resource",
                "GET/LIST pods cluster",
            ]
        );
        assert_eq!(r[0].count, 50);
        assert!(r[0].breached() && r[0].latency_ms.p99 > 1000.0);
        assert_eq!(r[1].count, 100);
        assert!(!r[1].breached());
        assert_eq!(r[2].slo_ms, 30_000.0);
        assert!(
            !r[2].breached() && r[2].latency_ms.p99 > 1000.0,
            "{:?}",
            r[2]
        );
        assert_eq!(read_slo_ms("namespace"), 5_000.0);
    }
}
