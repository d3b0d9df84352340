//! The ways a Thor instance can be run: HPCC's own (baseline: a manager
//! Job that creates a worker Job), the proof of concept's JobSet, the
//! JobSet with native gang scheduling (Workload/PodGroup), and the JobSet
//! queued by Kueue (admitted whole against a ClusterQueue's quota).

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Baseline,
    Jobset,
    JobsetGang,
    JobsetKueue,
}

/// The label that puts a JobSet in a Kueue LocalQueue.
pub const KUEUE_QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The LocalQueue jobset-kueue instances go to (in the run's namespace).
pub const KUEUE_LOCAL_QUEUE: &str = "thor";

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Baseline,
        Mode::Jobset,
        Mode::JobsetGang,
        Mode::JobsetKueue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Baseline => "baseline",
            Mode::Jobset => "jobset",
            Mode::JobsetGang => "jobset-gang",
            Mode::JobsetKueue => "jobset-kueue",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Needs Kueue on the cluster.
    pub fn needs_kueue(self) -> bool {
        self == Mode::JobsetKueue
    }

    /// Put an instance's JobSet in the Kueue LocalQueue (jobset-kueue
    /// only): Kueue's webhook suspends it until the ClusterQueue admits it.
    pub fn queue(self, docs: &mut [serde_json::Value]) {
        if !self.needs_kueue() {
            return;
        }
        for d in docs.iter_mut().filter(|d| d["kind"] == "JobSet") {
            d["metadata"]["labels"][KUEUE_QUEUE_LABEL] = KUEUE_LOCAL_QUEUE.into();
        }
    }
}

/// What a platform team sets up once for jobset-kueue, in `namespace`: a
/// ResourceFlavor, a ClusterQueue whose CPU quota is the nodes' CPU
/// (`cpu_milli` in all; the room `capacity` counts) and a LocalQueue.
/// Memory is covered without limit: Kueue admits only workloads whose
/// every requested resource is covered, and CPU is what is scarce here.
pub fn kueue_objects(namespace: &str, cpu_milli: u64) -> Vec<serde_json::Value> {
    let api = crate::workload::gang::trial::KUEUE_API_VERSION;
    let queue = format!("{KUEUE_LOCAL_QUEUE}-{namespace}");
    vec![
        serde_json::json!({
            "apiVersion": api, "kind": "ResourceFlavor",
            "metadata": {"name": queue},
        }),
        serde_json::json!({
            "apiVersion": api, "kind": "ClusterQueue",
            "metadata": {"name": queue},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [{
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": queue, "resources": [
                        {"name": "cpu", "nominalQuota": format!("{cpu_milli}m")},
                        {"name": "memory", "nominalQuota": "1Ei"},
                    ]}],
                }],
            },
        }),
        serde_json::json!({
            "apiVersion": api, "kind": "LocalQueue",
            "metadata": {"name": KUEUE_LOCAL_QUEUE, "namespace": namespace},
            "spec": {"clusterQueue": queue},
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_jobset_kueue_puts_its_jobset_in_the_queue() {
        let docs = vec![
            json!({"kind": "NetworkPolicy", "metadata": {"name": "np"}}),
            json!({"kind": "JobSet", "metadata": {"name": "js"}}),
        ];
        let mut queued = docs.clone();
        Mode::JobsetKueue.queue(&mut queued);
        assert_eq!(
            queued[1]["metadata"]["labels"][KUEUE_QUEUE_LABEL],
            KUEUE_LOCAL_QUEUE
        );
        assert!(queued[0]["metadata"].get("labels").is_none());
        let mut plain = docs.clone();
        Mode::Jobset.queue(&mut plain);
        assert_eq!(plain, docs);
    }

    #[test]
    fn the_cluster_queue_holds_the_nodes_cpu_and_the_local_queue_points_at_it() {
        let objs = kueue_objects("ns1", 3015);
        let cq = &objs[1];
        assert_eq!(
            cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"],
            "3015m"
        );
        assert_eq!(objs[2]["spec"]["clusterQueue"], cq["metadata"]["name"]);
        assert_eq!(objs[2]["metadata"]["namespace"], "ns1");
    }
}
