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

use crate::cluster::client::client_get;
use crate::cluster::existing::cluster::ExistingCluster;
pub use crate::cluster::needs::{Access, Capabilities, Needs, run_access};
use crate::cluster::provider::Cluster;

use crate::cluster::existing::labels::KWOK_NODE_ANNOTATION;

/// The label of each API server's identity lease (kube-system).
const APISERVER_IDENTITY: &str = "apiserver.kubernetes.io/identity=kube-apiserver";

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
