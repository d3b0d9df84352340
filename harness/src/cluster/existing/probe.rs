//! What a cluster the harness did not start offers, found out before
//! anything is created: its version, what the credentials may do
//! (SelfSubjectAccessReview for every access a run needs, `get /metrics`),
//! which APIs it serves (JobSet, the gang APIs, Kueue), its nodes (kwok's
//! fake ones or real), a default StorageClass, other workloads, and
//! whether etcd's metrics and the audit log can be read. A run names what
//! it needs (`Needs`); `missing` says which of those the cluster lacks and
//! how to provide each.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams, PostParams};
use serde::{Deserialize, Serialize};

use crate::cluster::client::client_get;
use crate::cluster::existing::cluster::ExistingCluster;
use crate::cluster::provider::Cluster;

use crate::cluster::existing::labels::KWOK_NODE_ANNOTATION;

/// The label of each API server's identity lease (kube-system).
const APISERVER_IDENTITY: &str = "apiserver.kubernetes.io/identity=kube-apiserver";

/// One access a run needs: a verb on a resource (namespaced ones are
/// checked in the run's namespace) or on a non-resource path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Access {
    pub verb: String,
    /// "" for the core group.
    pub group: String,
    /// "pods", "pods/status", or a path such as "/metrics".
    pub resource: String,
    pub namespaced: bool,
}

impl Access {
    pub fn new(verb: &str, group: &str, resource: &str, namespaced: bool) -> Access {
        Access {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespaced,
        }
    }

    /// "create batch/jobs in the run's namespace", "get /metrics".
    pub fn label(&self) -> String {
        let what = match (self.resource.starts_with('/'), self.group.as_str()) {
            (true, _) => self.resource.clone(),
            (false, "") => self.resource.clone(),
            (false, g) => format!("{g}/{}", self.resource),
        };
        let scope = match (self.resource.starts_with('/'), self.namespaced) {
            (true, _) => "",
            (false, true) => " in the run's namespace",
            (false, false) => " cluster-wide",
        };
        format!("{} {what}{scope}", self.verb)
    }
}

/// What a run needs of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    pub access: Vec<Access>,
    pub jobset: bool,
    pub gang_apis: bool,
    /// kwok fake nodes (the harness ends pods as a kubelet would).
    pub kwok_nodes: bool,
    /// Real nodes (Thor's pods run real containers: `--real-node`).
    pub real_nodes: bool,
    pub default_storage_class: bool,
    pub audit_log: bool,
    /// Requests per client by APF FlowSchemas (cluster::existing::apf).
    pub apf: bool,
}

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    pub server_version: String,
    pub user: String,
    /// Access label → allowed.
    pub access: BTreeMap<String, bool>,
    /// API versions served: jobset.x-k8s.io, scheduling.k8s.io versions
    /// with Workload or PodGroup resources, kueue.x-k8s.io.
    pub jobset_versions: Vec<String>,
    pub gang_versions: Vec<String>,
    pub kueue_versions: Vec<String>,
    pub nodes: u32,
    pub kwok_nodes: u32,
    /// Sum of the nodes' allocatable pods.
    pub allocatable_pods: u64,
    pub default_storage_class: Option<String>,
    /// Pods in namespaces other than kube-* and the harness's: the
    /// cluster runs real workloads.
    pub other_pods: u32,
    /// None: not asked for (no --etcd-metrics-url / --audit-log).
    pub etcd_metrics: Option<bool>,
    pub audit_log: Option<bool>,
    /// Where requests per client come from: "audit" or "apf".
    #[serde(default)]
    pub attribution: String,
    /// API server instances (their identity leases in kube-system; 0 when
    /// they cannot be listed). Metrics come from whichever one answers.
    #[serde(default)]
    pub apiservers: u32,
}

impl Capabilities {
    /// The set a result is comparable by: what was measurable, not counts
    /// that change between runs (nodes, other pods).
    pub fn comparable(&self) -> String {
        format!(
            "jobset {:?}, gang {:?}, kueue {:?}, kwok {}, etcd metrics {}, audit log {}, attribution {}",
            self.jobset_versions,
            self.gang_versions,
            self.kueue_versions,
            self.kwok_nodes > 0,
            self.etcd_metrics == Some(true),
            self.audit_log == Some(true),
            match self.attribution.as_str() {
                "" => "audit",
                a => a,
            }
        )
    }
}

/// One thing missing and how to provide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub what: String,
    pub fix: String,
}

async fn allowed(client: &kube::Client, a: &Access, namespace: &str) -> Result<bool> {
    let mut spec = SelfSubjectAccessReviewSpec::default();
    if a.resource.starts_with('/') {
        spec.non_resource_attributes = Some(NonResourceAttributes {
            path: Some(a.resource.clone()),
            verb: Some(a.verb.clone()),
        });
    } else {
        let (resource, sub) = match a.resource.split_once('/') {
            Some((r, s)) => (r.to_string(), Some(s.to_string())),
            None => (a.resource.clone(), None),
        };
        spec.resource_attributes = Some(ResourceAttributes {
            namespace: a.namespaced.then(|| namespace.to_string()),
            verb: Some(a.verb.clone()),
            group: Some(a.group.clone()),
            resource: Some(resource),
            subresource: sub,
            ..Default::default()
        });
    }
    let review = SelfSubjectAccessReview {
        spec,
        ..Default::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let r = api.create(&PostParams::default(), &review).await?;
    Ok(r.status.is_some_and(|s| s.allowed))
}

/// The versions an API group serves (none when it is not served).
pub async fn group_versions(client: &kube::Client, group: &str) -> Vec<String> {
    let Ok(body) = client_get(client, &format!("/apis/{group}")).await else {
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter_map(|x| x["version"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// scheduling.k8s.io versions that serve Workload or PodGroup.
pub async fn gang_versions(client: &kube::Client) -> Vec<String> {
    let mut out = Vec::new();
    for v in group_versions(client, "scheduling.k8s.io").await {
        let Ok(body) = client_get(client, &format!("/apis/scheduling.k8s.io/{v}")).await else {
            continue;
        };
        let list: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let gang = list["resources"].as_array().is_some_and(|rs| {
            rs.iter()
                .any(|r| matches!(r["name"].as_str(), Some("workloads" | "podgroups")))
        });
        if gang {
            out.push(v);
        }
    }
    out
}

/// Probe `cluster` for what `needs` asks (access checked in `namespace`,
/// which need not exist yet) and what any run would like to know.
pub async fn probe(
    cluster: &ExistingCluster,
    needs: &Needs,
    namespace: &str,
) -> Result<Capabilities> {
    let client = cluster.client().await?;
    let version = client.apiserver_version().await?;
    let mut access = BTreeMap::new();
    for a in &needs.access {
        access.insert(a.label(), allowed(&client, a, namespace).await?);
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let (mut n, mut kwok, mut pods) = (0, 0, 0u64);
    if let Ok(list) = nodes.list(&ListParams::default()).await {
        for node in &list.items {
            n += 1;
            let ann = node.metadata.annotations.as_ref();
            if ann.is_some_and(|a| a.contains_key(KWOK_NODE_ANNOTATION)) {
                kwok += 1;
            }
            pods += node
                .status
                .as_ref()
                .and_then(|s| s.allocatable.as_ref())
                .and_then(|a| a.get("pods"))
                .and_then(|q| q.0.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    let classes: Api<StorageClass> = Api::all(client.clone());
    let default_storage_class = classes
        .list(&ListParams::default())
        .await
        .ok()
        .and_then(|l| {
            l.items.into_iter().find(|c| {
                c.metadata.annotations.as_ref().is_some_and(|a| {
                    a.get("storageclass.kubernetes.io/is-default-class")
                        .is_some_and(|v| v == "true")
                })
            })
        })
        .and_then(|c| c.metadata.name);
    let all_pods: Api<Pod> = Api::all(client.clone());
    let other_pods = all_pods
        .list_metadata(&ListParams::default().limit(500))
        .await
        .map(|l| {
            l.items
                .iter()
                .filter(|p| {
                    let ns = p.metadata.namespace.as_deref().unwrap_or_default();
                    !ns.starts_with("kube-") && !ns.starts_with("harness-")
                })
                .count() as u32
        })
        .unwrap_or(0);
    let etcd_metrics = match cluster.measures_etcd() {
        true => Some(cluster.etcd_metrics().await.is_ok()),
        false => None,
    };
    // Reading the log's end opens it: readable, and its tail is events.
    let audit_log = cluster.audit_log().map(|_| cluster.audit_end().is_ok());
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let apiservers = leases
        .list_metadata(&ListParams::default().labels(APISERVER_IDENTITY))
        .await
        .map_or(0, |l| l.items.len() as u32);
    Ok(Capabilities {
        server_version: version.git_version,
        user: cluster.user.clone(),
        access,
        jobset_versions: group_versions(&client, "jobset.x-k8s.io").await,
        gang_versions: gang_versions(&client).await,
        kueue_versions: group_versions(&client, "kueue.x-k8s.io").await,
        nodes: n,
        kwok_nodes: kwok,
        allocatable_pods: pods,
        default_storage_class,
        other_pods,
        etcd_metrics,
        audit_log,
        attribution: match (needs.apf, needs.audit_log) {
            (true, _) => "apf",
            (false, true) => "audit",
            (false, false) => "client",
        }
        .into(),
        apiservers,
    })
}

/// What `needs` asks that `caps` lacks, each with how to provide it.
/// Probe `cluster` for `needs` (access checked in `namespace`), print the
/// table to stderr, and refuse (exit 3, naming each missing piece and its
/// fix) when anything is missing — before the run creates anything.
pub async fn probe_and_require(
    cluster: &ExistingCluster,
    needs: &Needs,
    namespace: &str,
) -> Result<Capabilities> {
    let caps = probe(cluster, needs, namespace).await?;
    eprintln!(
        "harness: cluster {} as {}:\n{}",
        cluster.opts.kubeconfig.display(),
        caps.user,
        table(&caps, needs)
    );
    let missing = missing(&caps, needs);
    if missing.is_empty() {
        return Ok(caps);
    }
    let list = |f: fn(&Missing) -> &str| {
        missing
            .iter()
            .map(|m| format!("  - {}", f(m)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Err(crate::error::env_missing(
        format!(
            "the cluster lacks what this run needs (nothing was created):\n{}",
            list(|m| &m.what)
        ),
        format!("\n{}", list(|m| &m.fix)),
    ))
}

pub fn missing(caps: &Capabilities, needs: &Needs) -> Vec<Missing> {
    let mut out = Vec::new();
    let denied: Vec<&String> = caps
        .access
        .iter()
        .filter(|(_, ok)| !**ok)
        .map(|(k, _)| k)
        .collect();
    if !denied.is_empty() {
        out.push(Missing {
            what: format!(
                "{} may not: {}",
                caps.user,
                denied
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            fix: "use credentials bound to a ClusterRole granting these (e.g. cluster-admin on a test cluster)".into(),
        });
    }
    let mut need = |cond: bool, what: &str, fix: &str| {
        if cond {
            out.push(Missing {
                what: what.into(),
                fix: fix.into(),
            });
        }
    };
    need(
        needs.jobset && caps.jobset_versions.is_empty(),
        "the JobSet API (jobset.x-k8s.io) is not served",
        "install the JobSet controller and its CRD (kubernetes-sigs/jobset releases), or run the baseline mode only (--modes baseline)",
    );
    need(
        needs.gang_apis && caps.gang_versions.is_empty(),
        "no gang-scheduling API (scheduling.k8s.io Workload/PodGroup) is served",
        "enable the release's gang feature gates and runtime-config on the API server and scheduler (`harness up --gang` shows them), or leave out jobset-gang",
    );
    need(
        needs.kwok_nodes && caps.kwok_nodes == 0,
        "no kwok fake nodes (nodes annotated kwok.x-k8s.io/node): the harness ends Thor's pods as a kubelet would, which only kwok's nodes let it do",
        "run kwok against the cluster with fake nodes, or run on the cluster's real nodes (--real-node)",
    );
    need(
        needs.real_nodes && caps.nodes <= caps.kwok_nodes,
        "no real nodes (every node is one of kwok's): Thor's containers would have nowhere to run",
        "join a node that runs a kubelet, or run on kwok's fake nodes (without --real-node)",
    );
    need(
        needs.default_storage_class && caps.default_storage_class.is_none(),
        "no default StorageClass: HPCC's storage claims would stay Pending",
        "mark one StorageClass default (annotation storageclass.kubernetes.io/is-default-class=true)",
    );
    need(
        needs.audit_log && caps.audit_log != Some(true),
        "the API server's audit log is not readable from here: requests per client come from it",
        "pass --audit-log PATH (a self-managed cluster's log at Metadata level, as manifests/audit-policy.yaml)",
    );
    need(
        needs.apf && caps.apiservers > 1,
        &format!(
            "the cluster runs {} API servers and /metrics answers from one of them: per-FlowSchema counts would miss the others' requests",
            caps.apiservers
        ),
        "use --attribution audit with the servers' audit logs, or a cluster with one API server",
    );
    need(
        caps.etcd_metrics == Some(false),
        "--etcd-metrics-url was given but does not answer",
        "check the URL and --etcd-cert/--etcd-key/--etcd-ca, or leave it out (etcd figures are then not measured)",
    );
    out
}

/// The probe as a table: what was found, and whether this run needs it.
pub fn table(caps: &Capabilities, needs: &Needs) -> String {
    let mut s = String::new();
    let yes = |b: bool| if b { "yes" } else { "NO" };
    let versions = |v: &[String]| match v.is_empty() {
        true => "not served".to_string(),
        false => v.join(", "),
    };
    let _ = writeln!(
        s,
        "| capability | found | this run needs it |\n|---|---|---|"
    );
    let mut row = |what: &str, found: String, needed: bool| {
        let _ = writeln!(
            s,
            "| {what} | {found} | {} |",
            if needed { "yes" } else { "—" }
        );
    };
    row("server version", caps.server_version.clone(), false);
    row("credentials", caps.user.clone(), true);
    for (label, ok) in &caps.access {
        row(&format!("may {label}"), yes(*ok).into(), true);
    }
    row("JobSet API", versions(&caps.jobset_versions), needs.jobset);
    row("gang APIs", versions(&caps.gang_versions), needs.gang_apis);
    row("Kueue API", versions(&caps.kueue_versions), false);
    row(
        "nodes (kwok fake)",
        format!(
            "{} ({}), {} pods allocatable",
            caps.nodes, caps.kwok_nodes, caps.allocatable_pods
        ),
        needs.kwok_nodes || needs.real_nodes,
    );
    row(
        "default StorageClass",
        caps.default_storage_class
            .clone()
            .unwrap_or_else(|| "none".into()),
        needs.default_storage_class,
    );
    row(
        "pods of other workloads",
        caps.other_pods.to_string(),
        false,
    );
    let asked = |v: Option<bool>, how: &str| match v {
        None => format!("not asked ({how})"),
        Some(b) => yes(b).to_string(),
    };
    row(
        "etcd metrics",
        asked(caps.etcd_metrics, "--etcd-metrics-url"),
        false,
    );
    row(
        "audit log readable",
        asked(caps.audit_log, "--audit-log"),
        needs.audit_log,
    );
    row(
        "API servers (identity leases)",
        match caps.apiservers {
            0 => "unknown".into(),
            n => n.to_string(),
        },
        needs.apf,
    );
    row(
        "requests per client from",
        match (needs.apf, needs.audit_log) {
            (true, _) => "APF FlowSchema counts (--attribution apf)".into(),
            (false, true) => "the audit log".into(),
            (false, false) => "HPCC's kubectl, client-side (--attribution client)".into(),
        },
        true,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Capabilities {
        Capabilities {
            server_version: "v1.37.1".into(),
            user: "alice".into(),
            access: [
                ("create namespaces cluster-wide".to_string(), true),
                ("get /metrics".to_string(), false),
            ]
            .into(),
            jobset_versions: vec!["v1alpha2".into()],
            kwok_nodes: 3,
            nodes: 3,
            default_storage_class: Some("standard".into()),
            audit_log: Some(true),
            ..Default::default()
        }
    }

    #[test]
    fn access_labels_say_verb_group_resource_and_scope() {
        assert_eq!(
            Access::new("create", "batch", "jobs", true).label(),
            "create batch/jobs in the run's namespace"
        );
        assert_eq!(
            Access::new("patch", "", "pods/status", true).label(),
            "patch pods/status in the run's namespace"
        );
        assert_eq!(
            Access::new("create", "", "namespaces", false).label(),
            "create namespaces cluster-wide"
        );
        assert_eq!(
            Access::new("get", "", "/metrics", false).label(),
            "get /metrics"
        );
    }

    #[test]
    fn missing_names_each_lack_and_its_fix() {
        let needs = Needs {
            jobset: true,
            gang_apis: true,
            kwok_nodes: true,
            default_storage_class: true,
            audit_log: true,
            ..Default::default()
        };
        let m = missing(&caps(), &needs);
        let whats: Vec<&str> = m.iter().map(|x| x.what.as_str()).collect();
        assert_eq!(m.len(), 2, "{whats:?}");
        assert!(
            whats[0].contains("alice may not: get /metrics"),
            "{whats:?}"
        );
        assert!(whats[1].contains("gang-scheduling API"), "{whats:?}");
        assert!(m.iter().all(|x| !x.fix.is_empty()));
        let mut bare = caps();
        bare.access.clear();
        bare.kwok_nodes = 0;
        bare.default_storage_class = None;
        bare.audit_log = None;
        bare.jobset_versions.clear();
        bare.etcd_metrics = Some(false);
        assert_eq!(missing(&bare, &needs).len(), 6);
        assert!(
            missing(&bare, &Needs::default()).len() == 1,
            "etcd asked for and dead"
        );
    }

    #[test]
    fn a_real_node_run_needs_a_node_that_is_not_kwoks() {
        let needs = Needs {
            real_nodes: true,
            ..Default::default()
        };
        let mut c = caps();
        c.nodes = 3;
        c.kwok_nodes = 3;
        let no_real = |c: &Capabilities| {
            missing(c, &needs)
                .iter()
                .filter(|m| m.what.contains("no real nodes"))
                .count()
        };
        assert_eq!(no_real(&c), 1);
        c.nodes = 4;
        assert_eq!(no_real(&c), 0);
    }

    #[test]
    fn the_table_marks_what_this_run_needs() {
        let t = table(
            &caps(),
            &Needs {
                audit_log: true,
                ..Default::default()
            },
        );
        assert!(t.contains("| may get /metrics | NO | yes |"), "{t}");
        assert!(t.contains("| audit log readable | yes | yes |"), "{t}");
        assert!(
            t.contains("| etcd metrics | not asked (--etcd-metrics-url) | — |"),
            "{t}"
        );
        assert!(t.contains("| gang APIs | not served | — |"), "{t}");
    }

    #[test]
    fn comparable_sets_ignore_counts_that_change() {
        let a = caps();
        let mut b = caps();
        b.nodes = 40;
        b.other_pods = 7;
        assert_eq!(a.comparable(), b.comparable());
        b.audit_log = Some(false);
        assert_ne!(a.comparable(), b.comparable());
    }
}
