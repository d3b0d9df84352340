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
    /// client (and "group:NAME") → watches counted above that began
    /// before the window: only their ResponseComplete is in it (client-go
    /// reflectors end a watch after 5–10 min and start another, so a
    /// controller's dozens of watches end in any window). The API
    /// server's priority and fairness counted each when it began, so
    /// `apf::agreement` leaves them out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub watches_begun_before: BTreeMap<String, u64>,
}

/// Whether an attribution key ("verb resource[/subresource]") is a write:
/// create, update, patch, delete or deletecollection.
pub fn is_write_request(key: &str) -> bool {
    matches!(
        key.split(' ').next(),
        Some("create" | "update" | "patch" | "delete" | "deletecollection")
    )
}

/// Clients by their requests, the most first (then by name): how every
/// table and message lists them.
pub fn largest_first(by_client: &BTreeMap<String, u64>) -> Vec<(&str, u64)> {
    let mut v: Vec<(&str, u64)> = by_client.iter().map(|(c, n)| (c.as_str(), *n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v
}

/// A client identity as `measure` names it: the authenticated user and
/// the product of its user agent ("kubectl/v1.37.1 (linux/amd64) …" →
/// "kubectl"), so a load tool's own traffic is told from the controllers'
/// even when both authenticate alike: "admin (kubectl)",
/// "system:serviceaccount:kube-system:job-controller
/// (kube-controller-manager)". No user agent: the user alone.
pub fn client_key(user: &str, user_agent: &str) -> String {
    let product = user_agent.split(['/', ' ']).next().unwrap_or("").trim();
    // client-go names a program by its file: the harness's cached
    // binaries carry their version ("kube-scheduler-1.37.1").
    let product = match product.rsplit_once('-') {
        Some((name, v))
            if !name.is_empty()
                && v.trim_start_matches('v')
                    .starts_with(|c: char| c.is_ascii_digit())
                && v.trim_start_matches('v')
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '.') =>
        {
            name
        }
        _ => product,
    };
    if product.is_empty() {
        user.to_string()
    } else {
        format!("{user} ({product})")
    }
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
    /// Name clients by user and user agent (`client_key`), not by user.
    by_agent: bool,
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

    /// Clients named by user and user agent (`client_key`).
    pub fn by_agent(mut self) -> Attributor {
        self.by_agent = true;
        self
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
        let client = match self.by_agent {
            true => client_key(&e.user.username, &e.user_agent),
            false => e.user.username.clone(),
        };
        a.total += 1;
        *a.by_request.entry(key.clone()).or_default() += 1;
        *a.by_client.entry(client.clone()).or_default() += 1;
        for g in &e.user.groups {
            *a.by_group.entry(g.clone()).or_default() += 1;
        }
        // A watch's first event here is its end: it began before.
        if e.verb == "watch" && e.stage == "ResponseComplete" {
            let labels = e.user.groups.iter().map(|g| format!("group:{g}"));
            for label in std::iter::once(client.clone()).chain(labels) {
                *a.watches_begun_before.entry(label).or_default() += 1;
            }
        }
        let code = e.response_status.as_ref().map_or(0, |s| s.code);
        if code >= 400 && code != 404 && code != 409 {
            *a.failed
                .entry(client.clone())
                .or_default()
                .entry(format!("{key} {code}"))
                .or_default() += 1;
        }
        *a.by_client_request
            .entry(client)
            .or_default()
            .entry(key)
            .or_default() += 1;
        // Server-side apply creates with a PATCH answered 201.
        if (e.verb == "create" || (e.verb == "patch" && code == 201))
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

    #[test]
    fn a_watch_whose_start_is_not_in_the_window_began_before_it() {
        let node = |id: &str, stage: &str| {
            let mut e = ev(id, stage, "system:node:n1", "watch", "pods", "", 200);
            e.user.groups = vec!["system:nodes".into()];
            e
        };
        let events = vec![
            // Began before: only its end is here.
            node("1", "ResponseComplete"),
            // Began here, and ended here too.
            node("2", "ResponseStarted"),
            node("2", "ResponseComplete"),
            ev("3", "ResponseComplete", "kcm", "watch", "leases", "", 200),
            ev("4", "ResponseComplete", "kcm", "update", "leases", "", 200),
        ];
        let a = attribute(&events, &["admin"]);
        assert_eq!(a.by_client["system:node:n1"], 2);
        assert_eq!(a.by_client["kcm"], 2);
        assert_eq!(a.watches_begun_before["system:node:n1"], 1);
        assert_eq!(a.watches_begun_before["group:system:nodes"], 1);
        assert_eq!(a.watches_begun_before["kcm"], 1);
        assert_eq!(a.watches_begun_before.len(), 3);
    }

    #[test]
    fn a_server_side_apply_that_creates_counts_as_created() {
        let events = vec![
            ev("1", "ResponseComplete", "w", "patch", "jobsets", "", 201),
            ev("2", "ResponseComplete", "w", "patch", "jobsets", "", 200),
            ev("3", "ResponseComplete", "w", "patch", "jobs", "status", 201),
        ];
        let a = attribute(&events, &["admin"]);
        assert_eq!(a.created.get("jobsets"), Some(&1));
        assert_eq!(a.created.get("jobs"), None);
    }

    #[test]
    fn clients_by_agent_are_user_and_product() {
        assert_eq!(
            client_key("admin", "kubectl/v1.37.1 (linux/amd64) kubernetes/abc"),
            "admin (kubectl)"
        );
        assert_eq!(
            client_key(
                "system:serviceaccount:kube-system:job-controller",
                "kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:job-controller"
            ),
            "system:serviceaccount:kube-system:job-controller (kube-controller-manager)"
        );
        assert_eq!(client_key("kwok-controller", ""), "kwok-controller");
        assert_eq!(
            client_key(
                "system:kube-scheduler",
                "kube-scheduler-1.37.1/v0.0.0 (linux/amd64)"
            ),
            "system:kube-scheduler (kube-scheduler)"
        );
        assert_eq!(client_key("k", "kwok-0.8.0/v0.0.0"), "k (kwok)");
        assert_eq!(client_key("x", "k8s-2x/1"), "x (k8s-2x)");
        assert_eq!(client_key("u", "Go-http-client/1.1"), "u (Go-http-client)");
        // One user, two tools: two clients; the harness still set apart.
        let mut kubectl = ev("1", "ResponseComplete", "w", "create", "jobs", "", 201);
        kubectl.user_agent = "kubectl/v1.37.1".into();
        let mut tool = ev("2", "ResponseComplete", "w", "list", "jobs", "", 200);
        tool.user_agent = "kube-burner/1.0".into();
        let mut mine = ev("3", "ResponseComplete", "admin", "list", "pods", "", 200);
        mine.user_agent = "harness".into();
        let mut a = Attributor::new(&["admin"]).by_agent();
        [kubectl, tool, mine].iter().for_each(|e| a.add(e));
        let a = a.finish();
        assert_eq!(a.by_client["w (kubectl)"], 1);
        assert_eq!(a.by_client["w (kube-burner)"], 1);
        assert_eq!(a.by_client_request["w (kubectl)"]["create jobs"], 1);
        assert_eq!((a.total, a.harness), (2, 1));
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
