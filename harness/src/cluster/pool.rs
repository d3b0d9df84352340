//! Node pools a workload adds for itself — a gang trial's nodes, labelled
//! and tainted so only its pods land there — and the kwok annotations that
//! say how long a pod runs on a fake node and whether it fails. Providers
//! whose nodes are kwok's create pools; others refuse.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint};

use crate::cluster::spec::NodeSpec;

/// Label on every node a pool adds, whatever the pool: what keeps a
/// cluster's DaemonSets off them where the harness runs kwok in a kind
/// cluster (install/kwok.rs).
pub const POOL_NODE_LABEL: &str = "harness.kwok/pool-node";
/// How long a Job-owned pod runs on kwok (both set to the same duration).
pub const POD_COMPLETE_DELAY: &str = "pod-complete.stage.kwok.x-k8s.io/delay";
pub const POD_COMPLETE_JITTER: &str = "pod-complete.stage.kwok.x-k8s.io/jitter-delay";

/// Pod annotation: the main containers exit with this code (≠ 0: the pod
/// fails) after the pod's run time; both kubelet models read it.
pub const EXIT_CODE: &str = "harness.kwok/exit-code";
/// Pod annotation: only these completion indexes ("0,2") fail.
pub const FAIL_INDEXES: &str = "harness.kwok/fail-indexes";
/// kwok's own pod-complete Stage's weight annotation.
pub const POD_COMPLETE_WEIGHT: &str = "pod-complete.stage.kwok.x-k8s.io/weight";

/// The annotations that make a Job's pods fail with `code` (for
/// `indexes` only, when given) on either kubelet model.
pub fn fail_annotations(code: u8, indexes: &[u32]) -> BTreeMap<String, String> {
    let mut a = BTreeMap::from([
        (EXIT_CODE.to_string(), code.to_string()),
        // kwok-minimal: kwok's pod-complete must not win the draw.
        (POD_COMPLETE_WEIGHT.to_string(), "0".to_string()),
    ]);
    if !indexes.is_empty() {
        let list: Vec<String> = indexes.iter().map(u32::to_string).collect();
        a.insert(FAIL_INDEXES.to_string(), list.join(","));
    }
    a
}

/// Nodes `<prefix>-<first>` … of one capacity, labelled `key=value` and
/// tainted `key=value:NoSchedule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePool {
    pub prefix: String,
    /// Index of the first node (a pool can grow).
    pub first: usize,
    pub count: usize,
    pub cpu: String,
    pub memory: String,
    pub pods: u32,
    pub key: String,
    pub value: String,
    /// More labels for each node (the cluster's run labels).
    pub labels: BTreeMap<String, String>,
}

impl NodePool {
    pub fn names(&self) -> Vec<String> {
        (self.first..self.first + self.count)
            .map(|i| format!("{}-{i}", self.prefix))
            .collect()
    }

    /// Give a fake node (made for `NodeSpec`-sized capacity) this pool's
    /// name, label and taint.
    pub fn dress(&self, mut node: Node, name: &str) -> Node {
        node.metadata.name = Some(name.to_string());
        let labels = node.metadata.labels.get_or_insert_default();
        // Not the provider's own node label: its capacity reconciler owns
        // those nodes.
        labels.remove("type");
        labels.insert("kubernetes.io/hostname".into(), name.to_string());
        labels.insert(self.key.clone(), self.value.clone());
        labels.insert(POOL_NODE_LABEL.into(), "true".into());
        labels.extend(self.labels.clone());
        node.spec.get_or_insert_default().taints = Some(vec![Taint {
            key: self.key.clone(),
            value: Some(self.value.clone()),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]);
        node
    }

    pub fn spec(&self) -> NodeSpec {
        NodeSpec {
            count: self.count,
            cpu: self.cpu.clone(),
            memory: self.memory.clone(),
            pods: self.pods,
        }
    }

    /// The label selector of the pool's nodes.
    pub fn selector(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(self.key.clone(), self.value.clone())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_node_is_named_labelled_and_tainted() {
        let pool = NodePool {
            prefix: "t1".into(),
            first: 2,
            count: 2,
            cpu: "64".into(),
            memory: "256Gi".into(),
            pods: 8,
            key: "harness.gang/pool".into(),
            value: "t1".into(),
            labels: BTreeMap::from([("run".to_string(), "r1".to_string())]),
        };
        assert_eq!(pool.names(), ["t1-2", "t1-3"]);
        let plain = Node {
            metadata: kube::api::ObjectMeta {
                labels: Some(BTreeMap::from([("type".to_string(), "kwok".to_string())])),
                ..Default::default()
            },
            ..Default::default()
        };
        let n = pool.dress(plain, "t1-2");
        let labels = n.metadata.labels.unwrap();
        assert_eq!(labels["harness.gang/pool"], "t1");
        assert_eq!(labels[POOL_NODE_LABEL], "true");
        assert_eq!(labels["run"], "r1");
        assert!(!labels.contains_key("type"));
        let t = &n.spec.unwrap().taints.unwrap()[0];
        assert_eq!(
            (t.key.as_str(), t.effect.as_str()),
            ("harness.gang/pool", "NoSchedule")
        );
        assert_eq!(pool.spec().pods, 8);
    }
}
