//! Who made the requests: audit events counted per client identity, verb
//! and resource, with the harness's own identities set apart.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::cluster::audit::AuditEvent;

/// Requests from the audit log, one per request (watches are seen twice,
/// at ResponseStarted and ResponseComplete: counted once by audit ID).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// "verb resource[/subresource]" → count, the harness's own excluded.
    pub by_request: BTreeMap<String, u64>,
    /// user → count, the harness's own excluded.
    pub by_client: BTreeMap<String, u64>,
    /// group → requests of its members, the harness's own excluded.
    #[serde(default)]
    pub by_group: BTreeMap<String, u64>,
    /// user → "verb resource" → count, the harness's own excluded.
    pub by_client_request: BTreeMap<String, BTreeMap<String, u64>>,
    /// created objects by resource, the harness's own excluded.
    pub created: BTreeMap<String, u64>,
    pub total: u64,
    /// Requests the harness itself made (watches, scrapes, setup).
    pub harness: u64,
    /// Requests for a resource (an objectRef), everyone's, the harness's
    /// too: what `apiserver_request_total` counts. Discovery, OpenAPI and
    /// other non-resource paths are audited but not counted there.
    #[serde(default)]
    pub resource_requests: u64,
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
/// the totals and counted apart. Windows stream the log into an
/// `Attributor` instead; this is its form for events in hand (tests).
#[cfg(test)]
pub fn attribute<S: AsRef<str>>(events: &[AuditEvent], harness_users: &[S]) -> Attribution {
    let mut a = Attributor::new(harness_users);
    events.iter().for_each(|e| a.add(e));
    a.finish()
}

/// `attribute` one event at a time (for a streamed audit log): keeps the
/// counts and the audit IDs seen, not the events.
#[derive(Debug, Default)]
pub struct Attributor {
    harness_users: Vec<String>,
    seen: HashSet<String>,
    a: Attribution,
}

impl Attributor {
    pub fn new<S: AsRef<str>>(harness_users: &[S]) -> Attributor {
        Attributor {
            harness_users: harness_users
                .iter()
                .map(|u| u.as_ref().to_string())
                .collect(),
            ..Default::default()
        }
    }

    pub fn add(&mut self, e: &AuditEvent) {
        let a = &mut self.a;
        if !e.audit_id.is_empty() && !self.seen.insert(e.audit_id.clone()) {
            return;
        }
        if e.object_ref
            .as_ref()
            .is_some_and(|o| !o.resource.is_empty())
        {
            a.resource_requests += 1;
        }
        if self.harness_users.contains(&e.user.username) {
            a.harness += 1;
            return;
        }
        let key = e.key();
        a.total += 1;
        *a.by_request.entry(key.clone()).or_default() += 1;
        *a.by_client.entry(e.user.username.clone()).or_default() += 1;
        for g in &e.user.groups {
            *a.by_group.entry(g.clone()).or_default() += 1;
        }
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

    pub fn finish(self) -> Attribution {
        self.a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::audit::{ObjectRef, ResponseStatus};

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
            object_ref: Some(ObjectRef {
                resource: resource.into(),
                subresource: sub.into(),
                ..Default::default()
            }),
            response_status: Some(ResponseStatus { code }),
            ..AuditEvent::of(id, stage, verb, user)
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
