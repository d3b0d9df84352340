//! Requests per client without the audit log: the API server's priority
//! and fairness filter counts every request it dispatches by FlowSchema
//! (`apiserver_flowcontrol_dispatched_requests_total{flow_schema,
//! priority_level}`, k8s.io/apiserver pkg/util/flowcontrol/apf_filter.go,
//! `Handle` → `metrics.AddDispatch`, exempt requests included). When the
//! harness adds one FlowSchema per identity of interest
//! (cluster::existing::apf), the deltas of those schemas are that
//! identity's requests; what the other schemas dispatched is everyone
//! else's, by schema.
//!
//! Where APF and the audit log differ: requests rejected by the filter
//! (429) are not dispatched and so not counted, and long-running requests
//! other than watches (exec, attach, port-forward, proxy, log follow)
//! bypass the filter (pkg/server/filters/priority-and-fairness.go,
//! `ServeHTTP`), where the audit log has both; requests the authorizer
//! refuses (403) are dispatched first and counted in both. A watch is
//! counted by APF when it begins and is in a window's audit log while it
//! begins or ends, so the agreement leaves out the watches that began
//! before the window. A window's APF counts end at its closing snapshot,
//! its audit events at the log's end when read just after.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::cluster::apf_flows::{ApfFlows, EXEMPT_SCHEMA};
use crate::metrics::attribution::Attribution;
use crate::metrics::prom::{Sample, counter_delta};

/// The metric APF counts dispatched requests in.
pub const DISPATCHED: &str = "apiserver_flowcontrol_dispatched_requests_total";
/// The key "everyone else" is reported under in `by_client`: the schema
/// their requests were dispatched by.
pub const OTHER_PREFIX: &str = "flowschema:";

/// What APF counted between two snapshots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApfCounts {
    /// identity label → requests; everyone else as "flowschema:NAME".
    pub by_client: BTreeMap<String, u64>,
    /// Everyone's but the harness's.
    pub total: u64,
    pub harness: u64,
}

/// Per-schema deltas of the dispatched counter, summed over priority
/// levels (a schema may have been re-pointed; its count moves with it).
fn deltas(before: &[Sample], after: &[Sample]) -> BTreeMap<String, u64> {
    let schemas: BTreeSet<&str> = after
        .iter()
        .filter(|s| s.name == DISPATCHED)
        .filter_map(|s| s.labels.get("flow_schema").map(String::as_str))
        .collect();
    schemas
        .into_iter()
        .map(|fs| {
            let of = |s: &Sample| s.labels.get("flow_schema").is_some_and(|n| n == fs);
            (
                fs.to_string(),
                counter_delta(before, after, DISPATCHED, of) as u64,
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Requests per identity (and per schema for everyone else) between two
/// snapshots of the API server's metrics.
pub fn counts(before: &[Sample], after: &[Sample], flows: &ApfFlows) -> ApfCounts {
    let mut c = ApfCounts::default();
    for label in flows.by_schema.values() {
        if !flows.harness.contains(label) {
            c.by_client.entry(label.clone()).or_default();
        }
    }
    for (schema, n) in deltas(before, after) {
        if schema == EXEMPT_SCHEMA && flows.harness_exempt() {
            c.harness += n;
            continue;
        }
        let label = match flows.by_schema.get(&schema) {
            Some(l) if flows.harness.contains(l) => {
                c.harness += n;
                continue;
            }
            Some(l) => l.clone(),
            None => format!("{OTHER_PREFIX}{schema}"),
        };
        c.total += n;
        *c.by_client.entry(label).or_default() += n;
    }
    c
}

/// One identity's requests as APF and the audit log counted them in the
/// same window (both asked for): how far attribution without the audit
/// log is from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub apf: u64,
    /// The audit log's requests that began in the window.
    pub audit: u64,
}

impl Agreement {
    /// |apf − audit| / audit in per cent (0 when both are 0).
    pub fn off_pct(&self) -> f64 {
        match self.audit {
            0 if self.apf == 0 => 0.0,
            0 => 100.0,
            a => (self.apf as f64 - a as f64).abs() * 100.0 / a as f64,
        }
    }
}

/// For each identity APF counted, its audit figure beside it: the
/// requests that began in the window, as APF counts them (at dispatch) —
/// the audit's requests less its watches that began before
/// (`Attribution::watches_begun_before`). Group identities
/// ("group:NAME") sum the audit's users of that group.
pub fn agreement(apf: &ApfCounts, audit: &Attribution) -> BTreeMap<String, Agreement> {
    apf.by_client
        .iter()
        .filter(|(label, _)| !label.starts_with(OTHER_PREFIX))
        .map(|(label, n)| {
            let seen = match label.strip_prefix("group:") {
                Some(g) => audit.by_group.get(g).copied().unwrap_or(0),
                None => audit.by_client.get(label).copied().unwrap_or(0),
            };
            let before = audit.watches_begun_before.get(label).copied().unwrap_or(0);
            let agreement = Agreement {
                apf: *n,
                audit: seen.saturating_sub(before),
            };
            (label.clone(), agreement)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::prom::parse;

    fn metrics(lines: &[(&str, &str, u64)]) -> Vec<Sample> {
        let text: String = lines
            .iter()
            .map(|(fs, pl, n)| {
                format!("{DISPATCHED}{{flow_schema=\"{fs}\",priority_level=\"{pl}\"}} {n}\n")
            })
            .collect();
        parse(&text)
    }

    fn flows() -> ApfFlows {
        ApfFlows {
            by_schema: [
                ("0-harness-r-0-exempt", "admin"),
                (
                    "0-harness-r-1-service-accounts",
                    "system:serviceaccount:ns:thor",
                ),
                (
                    "0-harness-r-1-global-default",
                    "system:serviceaccount:ns:thor",
                ),
                ("0-harness-r-2-system-nodes", "group:system:nodes"),
            ]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
            harness: ["admin".to_string()].into(),
            exempt: BTreeSet::new(),
        }
    }

    #[test]
    fn each_identity_gets_its_schemas_deltas_and_the_rest_stay_by_schema() {
        let before = metrics(&[
            ("0-harness-r-0-exempt", "exempt", 3),
            ("0-harness-r-1-service-accounts", "workload-low", 0),
            ("service-accounts", "workload-low", 40),
            ("exempt", "exempt", 100),
        ]);
        let after = metrics(&[
            ("0-harness-r-0-exempt", "exempt", 13),
            ("0-harness-r-1-service-accounts", "workload-low", 25),
            ("0-harness-r-1-global-default", "global-default", 5),
            ("service-accounts", "workload-low", 47),
            ("exempt", "exempt", 100),
            ("kube-scheduler", "workload-high", 9),
        ]);
        let c = counts(&before, &after, &flows());
        assert_eq!(c.harness, 10);
        assert_eq!(c.by_client["system:serviceaccount:ns:thor"], 30);
        assert_eq!(c.by_client["flowschema:service-accounts"], 7);
        assert_eq!(c.by_client["flowschema:kube-scheduler"], 9);
        // An identity that made no request is there, at 0; unchanged
        // schemas and the harness are not.
        assert_eq!(c.by_client["group:system:nodes"], 0);
        assert!(!c.by_client.contains_key("flowschema:exempt"));
        assert!(!c.by_client.contains_key("admin"));
        assert_eq!(c.total, 46);
    }

    #[test]
    fn an_exempt_harness_takes_the_exempt_schema_with_it() {
        let mut f = flows();
        f.exempt = ["admin".to_string(), "kwok-controller".to_string()].into();
        let before = metrics(&[("exempt", "exempt", 100)]);
        let after = metrics(&[
            ("exempt", "exempt", 160),
            ("kube-scheduler", "workload-high", 9),
        ]);
        let c = counts(&before, &after, &f);
        assert_eq!((c.harness, c.total), (60, 9));
        assert!(!c.by_client.contains_key("flowschema:exempt"), "{c:?}");
        // Not exempt: that schema is everyone else's.
        let c = counts(&before, &after, &flows());
        assert_eq!((c.harness, c.total), (0, 69));
        assert_eq!(c.by_client["flowschema:exempt"], 60);
    }

    #[test]
    fn agreement_compares_users_and_sums_groups() {
        let c = counts(
            &metrics(&[]),
            &metrics(&[
                ("0-harness-r-1-service-accounts", "workload-low", 100),
                ("0-harness-r-2-system-nodes", "system", 20),
                ("x", "y", 1),
            ]),
            &flows(),
        );
        let map = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        let audit = Attribution {
            by_client: map(&[("system:serviceaccount:ns:thor", 104)]),
            by_group: map(&[("system:nodes", 26)]),
            // Six node watches ended in the window; APF counted them
            // when they began, before it.
            watches_begun_before: map(&[("group:system:nodes", 6), ("kwok", 3)]),
            ..Attribution::default()
        };
        let a = agreement(&c, &audit);
        assert_eq!(a.len(), 2, "{a:?}");
        let thor = &a["system:serviceaccount:ns:thor"];
        assert!((thor.off_pct() - 3.846).abs() < 0.01, "{thor:?}");
        assert_eq!(a["group:system:nodes"], Agreement { apf: 20, audit: 20 });
        assert_eq!(Agreement { apf: 1, audit: 0 }.off_pct(), 100.0);
    }
}
