//! `--attribution apf`: requests per identity where the audit log is out
//! of reach. For each identity of interest and each FlowSchema that would
//! match its requests, the harness adds a copy restricted to that identity
//! (same rules, same priority level, same distinguisher), placed just
//! before the original: same matching precedence and a name that sorts
//! first (schemas are ordered by precedence, then name:
//! k8s.io/apiserver pkg/util/apihelpers `FlowSchemaSequence.Less`). So each
//! request of the identity lands on the priority level it used before —
//! nothing about how the server treats it changes — and is counted under
//! the copy's name (metrics::apf). The copies carry the run id and are
//! removed with the run.
//!
//! The one schema that cannot be copied is the mandatory `exempt` one:
//! only it may have precedence 1 (pkg/apis/flowcontrol/validation
//! `ValidateFlowSchemaSpec`), so it takes every request of system:masters
//! members before any copy could; such identities are listed as not told
//! apart (`ApfFlows::exempt`).
//!
//! Which rules match an identity follows `matchesSubject`
//! (pkg/util/flowcontrol/rule.go): a User subject by name or `*`, a Group
//! by one of the identity's groups or `*`, a ServiceAccount by namespace
//! and name (or `*`). A user's groups cannot be asked of the server for
//! anyone but oneself (SelfSubjectReview), so identities name theirs.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::flowcontrol::v1::{
    FlowSchema, GroupSubject, PolicyRulesWithSubjects, ServiceAccountSubject, Subject, UserSubject,
};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

// Re-exported: the plan carries the flows, and callers (bench/) name them
// here; the type itself is provider-neutral (cluster::apf_flows).
pub use crate::cluster::apf_flows::{ApfFlows, EXEMPT_SCHEMA};
use crate::cluster::existing::labels::RUN_ID_LABEL;
pub use crate::cluster::needs::Attribution;
use crate::error::{bad_input, env_missing};
use crate::poll::Poll;

/// One identity whose requests are counted apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// What figures are keyed by: the username as the audit log spells
    /// it, or "group:NAME".
    pub label: String,
    kind: Kind,
    /// The groups its requests carry (for matching Group subjects).
    groups: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
}

const AUTHENTICATED: &str = "system:authenticated";

impl Identity {
    /// A user with the groups it is known to carry (system:authenticated
    /// is added).
    pub fn user(name: &str, groups: &[&str]) -> Identity {
        let mut g: Vec<String> = groups.iter().map(|s| s.to_string()).collect();
        if !g.iter().any(|x| x == AUTHENTICATED) {
            g.push(AUTHENTICATED.into());
        }
        Identity {
            label: name.into(),
            kind: Kind::User(name.into()),
            groups: g,
        }
    }

    /// A ServiceAccount, with the groups the token authenticator gives it.
    pub fn service_account(namespace: &str, name: &str) -> Identity {
        Identity {
            label: format!("system:serviceaccount:{namespace}:{name}"),
            kind: Kind::ServiceAccount {
                namespace: namespace.into(),
                name: name.into(),
            },
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED.into(),
            ],
        }
    }

    /// Every member of a group (the kubelets: system:nodes).
    pub fn group(name: &str) -> Identity {
        Identity {
            label: format!("group:{name}"),
            kind: Kind::Group(name.into()),
            groups: vec![name.into(), AUTHENTICATED.into()],
        }
    }

    /// `user:NAME[;groups=G1,G2]`, `sa:NAMESPACE/NAME` or `group:NAME`
    /// (`--apf-identity`).
    pub fn parse(spec: &str) -> Result<Identity> {
        let bad = |why: &str| {
            bad_input(format!(
                "--apf-identity {spec:?}: {why} (user:NAME[;groups=G1,G2], sa:NAMESPACE/NAME or group:NAME)"
            ))
        };
        let (kind, rest) = spec.split_once(':').ok_or_else(|| bad("no kind"))?;
        if rest.is_empty() {
            return Err(bad("no name"));
        }
        match kind {
            "user" => {
                let (name, groups) = match rest.split_once(";groups=") {
                    Some((n, g)) => (n, g.split(',').filter(|g| !g.is_empty()).collect()),
                    None => (rest, Vec::new()),
                };
                Ok(Identity::user(name, &groups))
            }
            "sa" => match rest.split_once('/') {
                Some((ns, name)) if !ns.is_empty() && !name.is_empty() => {
                    Ok(Identity::service_account(ns, name))
                }
                _ => Err(bad("a ServiceAccount is NAMESPACE/NAME")),
            },
            "group" => Ok(Identity::group(rest)),
            _ => Err(bad(&format!("unknown kind {kind:?}"))),
        }
    }

    /// The subject a copy of a schema matches this identity by.
    fn subject(&self) -> Subject {
        match &self.kind {
            Kind::User(n) => Subject {
                kind: "User".into(),
                user: Some(UserSubject { name: n.clone() }),
                ..Default::default()
            },
            Kind::ServiceAccount { namespace, name } => Subject {
                kind: "ServiceAccount".into(),
                service_account: Some(ServiceAccountSubject {
                    namespace: namespace.clone(),
                    name: name.clone(),
                }),
                ..Default::default()
            },
            Kind::Group(g) => Subject {
                kind: "Group".into(),
                group: Some(GroupSubject { name: g.clone() }),
                ..Default::default()
            },
        }
    }

    /// Whether every request of this identity matches `s`.
    fn covered_by(&self, s: &Subject) -> bool {
        let user = match &self.kind {
            Kind::User(n) => Some(n.clone()),
            Kind::ServiceAccount { .. } => Some(self.label.clone()),
            Kind::Group(_) => None,
        };
        match s.kind.as_str() {
            "User" => s
                .user
                .as_ref()
                .is_some_and(|u| u.name == "*" || Some(&u.name) == user.as_ref()),
            "Group" => s
                .group
                .as_ref()
                .is_some_and(|g| g.name == "*" || self.groups.contains(&g.name)),
            "ServiceAccount" => match (&self.kind, &s.service_account) {
                (Kind::ServiceAccount { namespace, name }, Some(sa)) => {
                    sa.namespace == *namespace && (sa.name == "*" || sa.name == *name)
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `s` may match some of this identity's requests without
    /// covering all of them: for a group, a member named by user, as a
    /// ServiceAccount, or through another group it may also be in. (A
    /// user's or ServiceAccount's groups are taken as declared.)
    fn partly_by(&self, s: &Subject) -> bool {
        matches!(self.kind, Kind::Group(_))
            && !self.covered_by(s)
            && match s.kind.as_str() {
                "User" => s.user.as_ref().is_some_and(|u| u.name != "*"),
                "ServiceAccount" | "Group" => true,
                _ => false,
            }
    }
}

/// The identities a run follows with APF: the harness's own credentials
/// (`user` with `groups`; a ServiceAccount's token is followed as that
/// account), the run's own identities, the controllers a batch run drives
/// (the job controller, the garbage collector, the controller manager,
/// the scheduler, the JobSet controller as its release installs it: config/
/// default of kubernetes-sigs/jobset, namespace jobset-system, name prefix
/// jobset-, ServiceAccount controller-manager), the kubelets as a group,
/// and any `--apf-identity` not already among them. The harness's comes
/// first.
pub fn followed(
    user: &str,
    groups: &[String],
    run: Vec<Identity>,
    extra: &[Identity],
) -> Vec<Identity> {
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let harness = match user
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, name)) => Identity::service_account(ns, name),
        None => Identity::user(user, &groups),
    };
    let mut ids = vec![harness];
    ids.extend(run);
    ids.extend([
        Identity::service_account("kube-system", "job-controller"),
        Identity::service_account("kube-system", "generic-garbage-collector"),
        Identity::user("system:kube-controller-manager", &[]),
        Identity::user("system:kube-scheduler", &[]),
        Identity::service_account("jobset-system", "jobset-controller-manager"),
        Identity::group("system:nodes"),
    ]);
    for e in extra {
        if !ids.iter().any(|i| i.label == e.label) {
            ids.push(e.clone());
        }
    }
    ids
}

/// The schemas to add and what they count.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub schemas: Vec<FlowSchema>,
    pub flows: ApfFlows,
}

/// The copy of `original` named `name`: its rules whose subjects cover the
/// identity, with the identity as their only subject; None when no rule
/// does.
fn copy_for(original: &FlowSchema, id: &Identity, name: &str, run_id: &str) -> Option<FlowSchema> {
    let spec = &original.spec;
    let rules: Vec<PolicyRulesWithSubjects> = spec
        .rules
        .iter()
        .flatten()
        .filter(|r| r.subjects.iter().any(|s| id.covered_by(s)))
        .map(|r| PolicyRulesWithSubjects {
            subjects: vec![id.subject()],
            ..r.clone()
        })
        .collect();
    if rules.is_empty() {
        return None;
    }
    let mut spec = spec.clone();
    spec.rules = Some(rules);
    Some(FlowSchema {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([
                (RUN_ID_LABEL.to_string(), run_id.to_string()),
                ("app.kubernetes.io/managed-by".into(), "harness".into()),
            ])),
            annotations: Some(BTreeMap::from([(
                "harness.batch.dev/counts".to_string(),
                id.label.clone(),
            )])),
            ..Default::default()
        },
        spec,
        status: None,
    })
}

/// A copy's name: sorts before any schema whose name starts with a
/// letter, and says whose and of what it is. Identities that overlap (a
/// group and one of its members) are counted under the one listed
/// first.
fn copy_name(run_id: &str, idx: usize, original: &str) -> String {
    // Zero-padded: copies of one schema sort in the identities' order.
    let mut n = format!("0-harness-{run_id}-{idx:03}-{original}");
    n.truncate(253);
    n.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

fn precedence(fs: &FlowSchema) -> i32 {
    fs.spec.matching_precedence.unwrap_or(1000)
}

fn name(fs: &FlowSchema) -> &str {
    fs.metadata.name.as_deref().unwrap_or_default()
}

/// The copies for `identities` of the cluster's `existing` schemas.
/// Another run's copies (they carry its run id) refuse the plan (exit 3):
/// two runs' copies of one schema for one identity split its requests. Copies of
/// one precedence keep their originals' order among themselves; a schema
/// of that precedence sorting between a copy and its original matters
/// only if it could take some of the identity's requests without being
/// copied, and then the plan is refused: that could move the identity to
/// another priority level.
pub fn plan(
    existing: &[FlowSchema],
    identities: &[Identity],
    harness: &[String],
    run_id: &str,
) -> Result<Plan> {
    let run_of = |fs: &FlowSchema| {
        fs.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(RUN_ID_LABEL).cloned())
    };
    let mut others: Vec<String> = existing
        .iter()
        .filter_map(run_of)
        .filter(|r| r != run_id)
        .collect();
    others.sort();
    others.dedup();
    if !others.is_empty() {
        return Err(env_missing(
            format!(
                "another harness run ({}) counts requests by FlowSchema on this cluster: the first run's copies would take the shared identities' requests (the scheduler's, the controllers')",
                others.join(", ")
            ),
            format!(
                "wait for it to end, or if it is gone remove what it left: `kubectl delete flowschema -l {RUN_ID_LABEL}={}`",
                others[0]
            ),
        ));
    }
    let originals: Vec<&FlowSchema> = existing.iter().filter(|fs| run_of(fs).is_none()).collect();
    let mut plan = Plan::default();
    for (i, id) in identities.iter().enumerate() {
        if harness.contains(&id.label) {
            plan.flows.harness.insert(id.label.clone());
        }
        let exempt = originals.iter().any(|o| {
            precedence(o) == 1
                && o.spec
                    .rules
                    .iter()
                    .flatten()
                    .any(|r| r.subjects.iter().any(|s| id.covered_by(s)))
        });
        if exempt {
            plan.flows.exempt.insert(id.label.clone());
            continue;
        }
        for orig in &originals {
            let n = copy_name(run_id, i, name(orig));
            if let Some(copy) = copy_for(orig, id, &n, run_id) {
                plan.flows.by_schema.insert(n.clone(), id.label.clone());
                plan.schemas.push(copy);
                let p = precedence(orig);
                if name(orig) <= n.as_str() {
                    bail!(
                        "counting {} by FlowSchema: no copy can sort before {} (its name sorts before {n}); use the audit log (--audit-log) instead",
                        id.label,
                        name(orig)
                    );
                }
                // A rule left uncopied (it does not cover the identity)
                // that may take some of its requests must not sort after
                // the copy: checked rule by rule.
                let between: Vec<&str> = originals
                    .iter()
                    .filter(|o| precedence(o) == p && name(o) > n.as_str() && name(o) < name(orig))
                    .filter(|o| {
                        o.spec.rules.iter().flatten().any(|r| {
                            !r.subjects.iter().any(|s| id.covered_by(s))
                                && r.subjects.iter().any(|s| id.partly_by(s))
                        })
                    })
                    .map(|o| name(o))
                    .collect();
                if !between.is_empty() {
                    bail!(
                        "counting {} by FlowSchema would change its flow: a copy of {} (precedence {p}) would sort after {}; use the audit log (--audit-log) instead",
                        id.label,
                        name(orig),
                        between.join(", ")
                    );
                }
            }
        }
    }
    Ok(plan)
}

/// Add the plan's schemas and wait until the API server's priority and
/// fairness controller has taken each in (it writes their `Dangling`
/// condition when it digests them).
pub async fn install(client: &kube::Client, plan: &Plan) -> Result<()> {
    let api: Api<FlowSchema> = Api::all(client.clone());
    for fs in &plan.schemas {
        api.create(&PostParams::default(), fs)
            .await
            .with_context(|| format!("creating FlowSchema {}", name(fs)))?;
    }
    let run = plan.schemas.first().and_then(|fs| {
        fs.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(RUN_ID_LABEL).cloned())
    });
    let Some(run) = run else { return Ok(()) };
    let sel = ListParams::default().labels(&format!("{RUN_ID_LABEL}={run}"));
    let want = plan.schemas.len();
    Poll::new(
        "the API server took in the harness's FlowSchemas",
        Duration::from_secs(60),
    )
    .every(Duration::from_millis(200))
    .until_state(|| async {
        let list = api.list(&sel).await?;
        let digested = list
            .items
            .iter()
            .filter(|fs| {
                fs.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Dangling"))
            })
            .count();
        Ok(match digested >= want {
            true => Ok(()),
            false => Err(format!("{digested} of {want} digested")),
        })
    })
    .await
}

/// The cluster's FlowSchemas.
pub async fn list(client: &kube::Client) -> Result<Vec<FlowSchema>> {
    Ok(Api::<FlowSchema>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("listing FlowSchemas")?
        .items)
}

/// Delete the schemas carrying the run id, last in matching order first;
/// a server that does not let the credentials list them has none of the
/// run's (creating them needs more).
pub async fn remove(client: &kube::Client, run_id: &str) -> Result<Vec<String>> {
    let api: Api<FlowSchema> = Api::all(client.clone());
    let sel = ListParams::default().labels(&format!("{RUN_ID_LABEL}={run_id}"));
    let mut copies: Vec<FlowSchema> = match api.list(&sel).await {
        Ok(l) => l.items,
        Err(kube::Error::Api(e)) if e.code == 403 || e.code == 404 => return Ok(Vec::new()),
        Err(e) => return Err(e).context("listing the run's FlowSchemas"),
    };
    // Last in matching order first: the copies left at any moment (and if
    // a deletion fails) still sort before their originals as before, so no
    // request moves to another priority level while they go.
    copies.sort_by(|a, b| (precedence(b), name(b)).cmp(&(precedence(a), name(a))));
    let names: Vec<String> = copies.iter().map(|c| name(c).to_string()).collect();
    for n in &names {
        match api.delete(n, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e).with_context(|| format!("deleting FlowSchema {n}")),
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A schema as the test writes it: (precedence, priority level, rules
    /// as [(subjects, resource rules, non-resource rules)]).
    fn fs(name: &str, precedence: i32, pl: &str, rules: serde_json::Value) -> FlowSchema {
        serde_json::from_value(json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": name},
            "spec": {
                "matchingPrecedence": precedence,
                "priorityLevelConfiguration": {"name": pl},
                "distinguisherMethod": {"type": "ByUser"},
                "rules": rules,
            },
        }))
        .unwrap()
    }

    fn everything(subjects: serde_json::Value) -> serde_json::Value {
        json!([{
            "subjects": subjects,
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }])
    }

    fn user(n: &str) -> serde_json::Value {
        json!({"kind": "User", "user": {"name": n}})
    }
    fn group(n: &str) -> serde_json::Value {
        json!({"kind": "Group", "group": {"name": n}})
    }

    /// A cluster's schemas, shaped as a stock API server's (precedences and
    /// subjects as a 1.37 API server has them).
    fn cluster() -> Vec<FlowSchema> {
        vec![
            fs(
                "exempt",
                1,
                "exempt",
                everything(json!([group("system:masters")])),
            ),
            fs(
                "system-leader-election",
                100,
                "leader-election",
                json!([{
                    "subjects": [user("system:kube-scheduler"), {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}],
                    "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]}],
                }]),
            ),
            fs(
                "system-nodes",
                500,
                "system",
                everything(json!([group("system:nodes")])),
            ),
            fs(
                "kube-controller-manager",
                800,
                "workload-high",
                everything(json!([user("system:kube-controller-manager")])),
            ),
            fs(
                "kube-scheduler",
                800,
                "workload-high",
                everything(json!([user("system:kube-scheduler")])),
            ),
            fs(
                "kube-system-service-accounts",
                900,
                "workload-high",
                everything(
                    json!([{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}]),
                ),
            ),
            fs(
                "service-accounts",
                9000,
                "workload-low",
                everything(json!([group("system:serviceaccounts")])),
            ),
            fs(
                "global-default",
                9900,
                "global-default",
                everything(json!([
                    group("system:authenticated"),
                    group("system:unauthenticated")
                ])),
            ),
        ]
    }

    /// A request as the filter sees it (rule.go `matchesFlowSchema`): who,
    /// and a verb on a resource (namespace "" = cluster scope) or a path.
    struct Req<'a> {
        user: &'a str,
        groups: &'a [&'a str],
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        namespace: &'a str,
    }

    fn any_or(list: Option<&Vec<String>>, v: &str) -> bool {
        list.is_some_and(|l| l.iter().any(|x| x == "*" || x == v))
    }

    fn subject_matches(s: &Subject, r: &Req) -> bool {
        match s.kind.as_str() {
            "User" => s
                .user
                .as_ref()
                .is_some_and(|u| u.name == "*" || u.name == r.user),
            "Group" => s
                .group
                .as_ref()
                .is_some_and(|g| g.name == "*" || r.groups.contains(&g.name.as_str())),
            "ServiceAccount" => s.service_account.as_ref().is_some_and(|sa| {
                let prefix = format!("system:serviceaccount:{}:", sa.namespace);
                r.user
                    .strip_prefix(&prefix)
                    .is_some_and(|n| sa.name == "*" || n == sa.name)
            }),
            _ => false,
        }
    }

    fn matches(fs: &FlowSchema, r: &Req) -> bool {
        fs.spec.rules.iter().flatten().any(|rule| {
            rule.subjects.iter().any(|s| subject_matches(s, r))
                && if r.resource.starts_with('/') {
                    rule.non_resource_rules.iter().flatten().any(|n| {
                        any_or(Some(&n.verbs), r.verb)
                            && any_or(Some(&n.non_resource_urls), r.resource)
                    })
                } else {
                    rule.resource_rules.iter().flatten().any(|rr| {
                        any_or(Some(&rr.verbs), r.verb)
                            && any_or(Some(&rr.api_groups), r.group)
                            && any_or(Some(&rr.resources), r.resource)
                            && match r.namespace {
                                "" => rr.cluster_scope == Some(true),
                                ns => any_or(rr.namespaces.as_ref(), ns),
                            }
                    })
                }
        })
    }

    /// The schema a request lands on: the first by precedence, then name.
    fn first<'a>(schemas: &'a [FlowSchema], r: &Req) -> &'a FlowSchema {
        let mut sorted: Vec<&FlowSchema> = schemas.iter().collect();
        sorted.sort_by(|a, b| (precedence(a), name(a)).cmp(&(precedence(b), name(b))));
        sorted
            .into_iter()
            .find(|fs| matches(fs, r))
            .expect("catch-all")
    }

    fn level(fs: &FlowSchema) -> &str {
        &fs.spec.priority_level_configuration.name
    }

    fn identities() -> Vec<Identity> {
        vec![
            Identity::user("admin", &["system:masters"]),
            Identity::service_account("ns1", "thor"),
            Identity::service_account("kube-system", "job-controller"),
            Identity::user("system:kube-scheduler", &[]),
            Identity::group("system:nodes"),
        ]
    }

    #[test]
    fn copies_keep_every_request_on_its_priority_level_and_count_it_for_its_identity() {
        let schemas = cluster();
        let p = plan(&schemas, &identities(), &["admin".to_string()], "r1").unwrap();
        let mut with: Vec<FlowSchema> = schemas.clone();
        with.extend(p.schemas.iter().cloned());
        let nodes = ["system:nodes", "system:authenticated"];
        let sa = [
            "system:serviceaccounts",
            "system:serviceaccounts:ns1",
            "system:authenticated",
        ];
        let ks = [
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated",
        ];
        let cases = [
            // system:masters: the exempt schema takes it before any copy.
            ("admin", &["system:masters", "system:authenticated"][..], ""),
            (
                "system:serviceaccount:ns1:thor",
                &sa[..],
                "system:serviceaccount:ns1:thor",
            ),
            (
                "system:serviceaccount:kube-system:job-controller",
                &ks[..],
                "system:serviceaccount:kube-system:job-controller",
            ),
            (
                "system:kube-scheduler",
                &["system:authenticated"][..],
                "system:kube-scheduler",
            ),
            ("system:node:n1", &nodes[..], "group:system:nodes"),
            // Not followed: lands where it did, on no copy.
            (
                "system:kube-controller-manager",
                &["system:authenticated"][..],
                "",
            ),
            ("system:serviceaccount:kube-system:other", &ks[..], ""),
        ];
        let requests = [
            ("get", "coordination.k8s.io", "leases", "kube-system"),
            ("list", "", "pods", ""),
            ("create", "batch", "jobs", "ns1"),
            ("get", "", "/api", ""),
        ];
        for (who, groups, label) in cases {
            for (verb, group, resource, namespace) in requests {
                let r = Req {
                    user: who,
                    groups,
                    verb,
                    group,
                    resource,
                    namespace,
                };
                let (before, after) = (first(&schemas, &r), first(&with, &r));
                assert_eq!(
                    level(before),
                    level(after),
                    "{who} {verb} {resource}: {} → {}",
                    name(before),
                    name(after)
                );
                assert_eq!(
                    p.flows
                        .by_schema
                        .get(name(after))
                        .map(String::as_str)
                        .unwrap_or(""),
                    label,
                    "{who} {verb} {resource} landed on {}",
                    name(after)
                );
            }
        }
        // The scheduler's leases go to leader-election, through its copy.
        let lease = Req {
            user: "system:kube-scheduler",
            groups: &["system:authenticated"],
            verb: "update",
            group: "coordination.k8s.io",
            resource: "leases",
            namespace: "kube-system",
        };
        assert_eq!(level(first(&with, &lease)), "leader-election");
        assert!(p.flows.harness.contains("admin") && p.flows.harness.len() == 1);
        assert_eq!(p.flows.exempt.iter().collect::<Vec<_>>(), ["admin"]);
        // Nothing is ever placed at precedence 1 (the server refuses it).
        assert!(p.schemas.iter().all(|fs| precedence(fs) > 1));
        // Every copy carries the run id.
        assert!(
            p.schemas
                .iter()
                .all(|fs| fs.metadata.labels.as_ref().unwrap()[RUN_ID_LABEL] == "r1")
        );
        // A second run's plan, with the first's copies in place, is refused
        // (exit 3) and says how to remove a leftover; the same run's is not.
        let e = plan(&with, &identities(), &[], "r2").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 3);
        assert!(format!("{e:#}").contains("run-id=r1"), "{e:#}");
        // Only the rules that cover the identity, with it as the only subject.
        let sched = p
            .schemas
            .iter()
            .find(|fs| name(fs) == "0-harness-r1-003-system-leader-election")
            .unwrap();
        let rules = sched.spec.rules.as_ref().unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].subjects.len(), 1);
        assert_eq!(
            rules[0].subjects[0].user.as_ref().unwrap().name,
            "system:kube-scheduler"
        );
    }

    #[test]
    fn a_schema_that_could_take_part_of_a_group_between_copy_and_original_is_refused() {
        let mut schemas = cluster();
        // Same precedence as system-nodes, sorting between its copy and it,
        // naming one node: the copy would take that node's requests.
        schemas.push(fs(
            "node-special",
            500,
            "exempt",
            everything(json!([user("system:node:n9")])),
        ));
        let e = plan(&schemas, &[Identity::group("system:nodes")], &[], "r1").unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("node-special") && msg.contains("system-nodes"),
            "{msg}"
        );
        // Checked rule by rule: a schema that covers the group in one rule
        // and names one member in another is in the way too.
        let mut schemas = cluster();
        let mut two = fs(
            "node-special",
            500,
            "exempt",
            everything(json!([group("system:nodes")])),
        );
        let mut partial = two.spec.rules.as_ref().unwrap()[0].clone();
        partial.subjects = vec![serde_json::from_value(user("system:node:n9")).unwrap()];
        two.spec.rules.as_mut().unwrap().push(partial);
        schemas.push(two);
        assert!(plan(&schemas, &[Identity::group("system:nodes")], &[], "r1").is_err());
        // An original whose name sorts before any copy is refused.
        let mut schemas = cluster();
        schemas.push(fs(
            "0-a",
            700,
            "exempt",
            everything(json!([group("system:authenticated")])),
        ));
        let e = plan(&schemas, &[Identity::user("u", &[])], &[], "r1").unwrap_err();
        assert!(format!("{e:#}").contains("0-a"), "{e:#}");
        let schemas = {
            let mut s = cluster();
            s.push(fs(
                "node-special",
                500,
                "exempt",
                everything(json!([user("system:node:n9")])),
            ));
            s
        };
        // For one user the same schema is not in the way: it does not match it.
        assert!(
            plan(
                &schemas,
                &[Identity::user("system:kube-scheduler", &[])],
                &[],
                "r1"
            )
            .is_ok()
        );
    }

    #[test]
    fn identities_parse_from_the_flag_and_bad_ones_say_the_form() {
        assert_eq!(
            Identity::parse("user:kwok-controller;groups=system:masters").unwrap(),
            Identity::user("kwok-controller", &["system:masters"])
        );
        assert_eq!(
            Identity::parse("user:system:kube-scheduler").unwrap().label,
            "system:kube-scheduler"
        );
        assert_eq!(
            Identity::parse("sa:jobset-system/jobset-controller-manager")
                .unwrap()
                .label,
            "system:serviceaccount:jobset-system:jobset-controller-manager"
        );
        assert_eq!(
            Identity::parse("group:system:nodes").unwrap().label,
            "group:system:nodes"
        );
        for bad in ["kwok", "user:", "sa:noslash", "sa:/x", "robot:r2"] {
            let e = format!("{:#}", Identity::parse(bad).unwrap_err());
            assert!(
                e.contains("--apf-identity") && e.contains("sa:NAMESPACE/NAME"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn copy_names_sort_first_stay_valid_and_say_whose() {
        let n = copy_name("r1", 3, "kube-scheduler");
        assert_eq!(n, "0-harness-r1-003-kube-scheduler");
        // Identity 10's copy sorts after identity 2's.
        assert!(copy_name("r1", 2, "x") < copy_name("r1", 10, "x"));
        assert!(n.as_str() < "catch-all" && n.as_str() < "exempt");
        let long = copy_name("r1", 3, &format!("{}-x", "a".repeat(250)));
        assert!(
            long.len() <= 253 && long.ends_with(|c: char| c.is_ascii_alphanumeric()),
            "{long}"
        );
    }
}
