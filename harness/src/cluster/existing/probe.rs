//! What a cluster the harness did not start offers, found out before
//! anything is created: its version, what the credentials may do
//! (SelfSubjectAccessReview for every access a run needs, `get /metrics`),
//! which APIs it serves (JobSet, the gang APIs, Kueue), its nodes (kwok's
//! fake ones or real), a default StorageClass, other workloads, and
//! whether etcd's metrics and the audit log can be read. A run names what
//! it needs (`Needs`); cluster::existing::lacks says which of those the
//! cluster lacks and how to provide each.

use std::collections::BTreeMap;

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

/// What the harness itself does on any run on an existing cluster: the
/// run's namespaces, ServiceAccounts with tokens and RoleBindings in
/// them, the pod watch, `/metrics`, and with `apf` the FlowSchemas that
/// follow identities. Runs add what their workloads need.
pub fn run_access(apf: bool) -> Vec<Access> {
    let mut access: Vec<Access> = vec![
        Access::new("create", "", "namespaces", false),
        Access::new("delete", "", "namespaces", false),
        Access::new("list", "", "namespaces", false),
        Access::new("get", "", "/metrics", false),
    ];
    for (verb, group, resource) in [
        ("create", "", "serviceaccounts"),
        ("create", "", "serviceaccounts/token"),
        ("create", "rbac.authorization.k8s.io", "rolebindings"),
        ("list", "", "pods"),
        ("watch", "", "pods"),
    ] {
        access.push(Access::new(verb, group, resource, true));
    }
    if apf {
        for verb in ["create", "list", "delete"] {
            access.push(Access::new(
                verb,
                "flowcontrol.apiserver.k8s.io",
                "flowschemas",
                false,
            ));
        }
    }
    access
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

/// Whether `client` may do `a` (in `namespace` when namespaced): a
/// SelfSubjectAccessReview.
pub async fn allowed(client: &kube::Client, a: &Access, namespace: &str) -> Result<bool> {
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

/// Capabilities for tests: a small kwok cluster that may not read
/// /metrics.
#[cfg(test)]
pub(crate) fn sample() -> Capabilities {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn comparable_sets_ignore_counts_that_change() {
        let a = sample();
        let mut b = sample();
        b.nodes = 40;
        b.other_pods = 7;
        assert_eq!(a.comparable(), b.comparable());
        b.audit_log = Some(false);
        assert_ne!(a.comparable(), b.comparable());
    }
}
