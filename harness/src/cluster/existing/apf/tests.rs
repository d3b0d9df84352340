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
                    any_or(Some(&n.verbs), r.verb) && any_or(Some(&n.non_resource_urls), r.resource)
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
