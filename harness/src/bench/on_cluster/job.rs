//! The Indexed Job that runs a run set's rounds on a cluster: one index
//! per shard (here a round), `parallelism` of them at once, each a pod
//! that runs its shard with the local provider inside it (processes on
//! its own loopback: no privileges, no Docker), unprivileged, with an
//! emptyDir for its state and out dir. A pod that fails is retried once
//! (`backoffLimitPerIndex`), one ended by a disruption (eviction,
//! preemption: the `DisruptionTarget` condition) without spending that
//! retry (`podFailurePolicy`); an index that fails for good is a lost
//! round, said by the merge. Everything carries the run's id.

use serde_json::{Value, json};

use crate::bench::on_cluster::image::{HARNESS, WORK};

/// The label every object of the run carries (the existing provider's).
pub const RUN_ID_LABEL: &str = crate::cluster::existing::labels::RUN_ID_LABEL;
/// The Job's name.
pub const JOB: &str = "harness-rounds";
/// Where a pod's out dir is.
pub const OUT: &str = "/work/out";
/// The user a round runs as: none of the node's root budget of inotify
/// instances (`fs.inotify.max_user_instances` counts per user).
pub const RUN_AS: i64 = 10_001;

/// A pod's requests and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Size {
    pub cpu_request: String,
    pub memory_request: String,
    pub memory_limit: String,
}

/// What the Job runs.
pub struct JobPlan<'a> {
    pub namespace: &'a str,
    pub run_id: &'a str,
    pub image: &'a str,
    /// The harness's arguments for a shard (the shard given as
    /// `index/N`: K from the pod's `JOB_COMPLETION_INDEX`).
    pub args: Vec<String>,
    pub shards: u32,
    pub parallel: u32,
    pub size: Size,
    /// How long a pod may hold its out dir for the caller.
    pub hold_s: u64,
}

/// The namespace of the run.
pub fn namespace(name: &str, run_id: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}},
    })
}

/// The Indexed Job.
pub fn job(p: &JobPlan<'_>) -> Value {
    let mut args = p.args.clone();
    args.extend(["--hold".to_string(), p.hold_s.to_string()]);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": JOB,
            "namespace": p.namespace,
            "labels": {RUN_ID_LABEL: p.run_id},
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": p.shards,
            "parallelism": p.parallel.min(p.shards),
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": p.shards,
            "podFailurePolicy": {
                "rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                ],
            },
            "template": {
                "metadata": {"labels": {RUN_ID_LABEL: p.run_id}},
                "spec": {
                    "restartPolicy": "Never",
                    // A pod holding its out dir ends at once when its
                    // namespace goes (Ctrl-C, the end of the run set).
                    "terminationGracePeriodSeconds": 5,
                    "enableServiceLinks": false,
                    "automountServiceAccountToken": false,
                    "securityContext": {
                        "runAsUser": RUN_AS,
                        "runAsGroup": RUN_AS,
                        "runAsNonRoot": true,
                        "fsGroup": RUN_AS,
                    },
                    "containers": [{
                        "name": "round",
                        "image": p.image,
                        "imagePullPolicy": "IfNotPresent",
                        "command": [HARNESS],
                        "args": args,
                        "workingDir": WORK,
                        "resources": {
                            "requests": {"cpu": p.size.cpu_request, "memory": p.size.memory_request},
                            "limits": {"memory": p.size.memory_limit},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": [
                            {"name": "work", "mountPath": WORK},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }],
                    "volumes": [
                        {"name": "work", "emptyDir": {}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    })
}

/// The indexes a Job's status lists ("1,3-5" → [1, 3, 4, 5]).
pub fn indexes(list: &str) -> Vec<u32> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| match p.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse().unwrap_or(0), b.trim().parse().unwrap_or(0));
                (a..=b).collect::<Vec<u32>>()
            }
            None => p.trim().parse().into_iter().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> JobPlan<'static> {
        JobPlan {
            namespace: "harness-r1-rounds",
            run_id: "r1",
            image: "localhost/harness-rounds:abc",
            args: vec![
                "bench".into(),
                "thor".into(),
                "--shard".into(),
                "index/4".into(),
            ],
            shards: 4,
            parallel: 8,
            size: Size {
                cpu_request: "1".into(),
                memory_request: "3Gi".into(),
                memory_limit: "6Gi".into(),
            },
            hold_s: 600,
        }
    }

    #[test]
    fn an_indexed_job_of_one_pod_per_shard_unprivileged_retried_once() {
        let j = job(&plan());
        let spec = &j["spec"];
        assert_eq!(spec["completionMode"], "Indexed");
        assert_eq!(spec["completions"], 4);
        assert_eq!(spec["parallelism"], 4, "no more at once than shards");
        assert_eq!(spec["backoffLimitPerIndex"], 1);
        assert_eq!(
            spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["type"],
            "DisruptionTarget"
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
        let c = &pod["containers"][0];
        assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
        assert_eq!(c["args"][3], "index/4");
        assert_eq!(c["args"][5], "600", "{c}");
        assert_eq!(j["metadata"]["labels"][RUN_ID_LABEL], "r1");
    }

    #[test]
    fn a_job_status_index_list_reads_back() {
        assert_eq!(indexes("1,3-5"), [1, 3, 4, 5]);
        assert_eq!(indexes(""), Vec::<u32>::new());
        assert_eq!(indexes("0"), [0]);
    }
}
