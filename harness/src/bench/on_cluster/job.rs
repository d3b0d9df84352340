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
pub const RUN_ID_LABEL: &str = crate::cluster::run_id::RUN_ID_LABEL;
/// The Job's name.
pub const JOB: &str = "harness-rounds";
/// Where a pod's out dir is.
pub const OUT: &str = "/work/out";
/// Where the caller's input files (manifest folders, configs) are in a
/// pod: the ConfigMap [`INPUTS`], each file at its path under it.
pub const INPUTS_DIR: &str = "/inputs";
/// The ConfigMap that carries them.
pub const INPUTS: &str = "harness-inputs";
/// What one ConfigMap holds at most (the API server's limit on an
/// object, less room for its metadata).
pub const INPUTS_MAX_BYTES: usize = 1000 * 1024;
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
    /// The input files' paths under [`INPUTS_DIR`], in the order
    /// [`inputs`] was given them (none: no ConfigMap is mounted).
    pub inputs: Vec<String>,
}

/// The namespace of the run.
pub fn namespace(name: &str, run_id: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}},
    })
}

/// The ConfigMap of the caller's input files: `(path under INPUTS_DIR,
/// bytes)`, each under a key of its own (`f0`, `f1`, …: a key cannot hold
/// a '/'), as binary data so any file goes through unchanged.
pub fn inputs(namespace: &str, run_id: &str, files: &[(String, Vec<u8>)]) -> Value {
    let data: serde_json::Map<String, Value> = files
        .iter()
        .enumerate()
        .map(|(i, (_, bytes))| {
            let b64 =
                serde_json::to_value(k8s_openapi::ByteString(bytes.clone())).unwrap_or(Value::Null);
            (format!("f{i}"), b64)
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": INPUTS, "namespace": namespace, "labels": {RUN_ID_LABEL: run_id}},
        "binaryData": data,
    })
}

/// The Indexed Job.
pub fn job(p: &JobPlan<'_>) -> Value {
    let mut args = p.args.clone();
    args.extend(["--hold".to_string(), p.hold_s.to_string()]);
    let mut mounts = vec![
        json!({"name": "work", "mountPath": WORK}),
        json!({"name": "tmp", "mountPath": "/tmp"}),
    ];
    let mut volumes = vec![
        json!({"name": "work", "emptyDir": {}}),
        json!({"name": "tmp", "emptyDir": {}}),
    ];
    if !p.inputs.is_empty() {
        mounts.push(json!({"name": "inputs", "mountPath": INPUTS_DIR, "readOnly": true}));
        let items: Vec<Value> = p
            .inputs
            .iter()
            .enumerate()
            .map(|(i, path)| json!({"key": format!("f{i}"), "path": path}))
            .collect();
        volumes.push(json!({"name": "inputs", "configMap": {"name": INPUTS, "items": items}}));
    }
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
                        "volumeMounts": mounts,
                    }],
                    "volumes": volumes,
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
            inputs: Vec::new(),
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
    fn input_files_go_in_a_configmap_mounted_at_their_paths() {
        let files = vec![
            ("0/crds/a.yaml".to_string(), b"kind: A\n".to_vec()),
            ("1/config.yaml".to_string(), vec![0, 255]),
        ];
        let cm = inputs("ns", "r1", &files);
        assert_eq!(cm["binaryData"]["f0"], "a2luZDogQQo=");
        assert_eq!(cm["binaryData"]["f1"], "AP8=");
        let mut p = plan();
        p.inputs = files.into_iter().map(|(path, _)| path).collect();
        let j = job(&p);
        let pod = &j["spec"]["template"]["spec"];
        let items = &pod["volumes"][2]["configMap"]["items"];
        assert_eq!(items[1]["key"], "f1");
        assert_eq!(items[1]["path"], "1/config.yaml");
        assert_eq!(
            pod["containers"][0]["volumeMounts"][2]["mountPath"],
            INPUTS_DIR
        );
        // None given: nothing mounted.
        let j = job(&plan());
        assert_eq!(
            j["spec"]["template"]["spec"]["volumes"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_job_status_index_list_reads_back() {
        assert_eq!(indexes("1,3-5"), [1, 3, 4, 5]);
        assert_eq!(indexes(""), Vec::<u32>::new());
        assert_eq!(indexes("0"), [0]);
    }
}
