//! `measure --apply DIR`: the folder's manifests applied as the
//! workload's identity — CRDs first (then waited for until Established),
//! namespaces next, configuration (queues, RBAC, ConfigMaps) before what
//! runs — then waited for, as the harness (its requests are counted
//! apart), until what they made has finished: Jobs and JobSets complete
//! or failed, Deployments and StatefulSets available, every pod of the
//! folder's namespaces Running or ended.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::Value;

use crate::error::bad_input;
use crate::poll::Poll;

/// Kinds applied after CRDs and namespaces but before what runs: what
/// workloads refer to.
const CONFIGURATION: &[&str] = &[
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
    "Secret",
    "PriorityClass",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "Cohort",
    "Topology",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Service",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
];

/// Every manifest under `dir` (`*.yaml`, `*.yml`, `*.json`, sorted by
/// path; `kind: List` unpacked), each with apiVersion, kind and
/// metadata.name; errors name the file.
pub fn load(dir: &Path) -> Result<Vec<Value>> {
    if !dir.is_dir() {
        return Err(bad_input(format!(
            "--apply {}: not a folder",
            dir.display()
        )));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("yaml" | "yml" | "json")
            ) {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut objs = Vec::new();
    for f in &files {
        let text = crate::input::read_flag("--apply", f)?;
        let origin = f.display().to_string();
        let docs =
            crate::yaml::documents(&text, &origin).map_err(|e| bad_input(format!("{e:#}")))?;
        for d in docs {
            let items = match d["kind"].as_str() {
                Some(k) if k.ends_with("List") && d["items"].is_array() => {
                    d["items"].as_array().cloned().unwrap_or_default()
                }
                _ => vec![d],
            };
            for o in items {
                for field in ["apiVersion", "kind"] {
                    if o[field].as_str().is_none_or(str::is_empty) {
                        return Err(bad_input(format!("{origin}: an object without {field}")));
                    }
                }
                if o["metadata"]["name"].as_str().is_none_or(str::is_empty) {
                    return Err(bad_input(format!(
                        "{origin}: a {} without metadata.name (generateName cannot be applied)",
                        o["kind"].as_str().unwrap_or("?")
                    )));
                }
                objs.push(o);
            }
        }
    }
    if objs.is_empty() {
        return Err(bad_input(format!(
            "--apply {}: no manifests (*.yaml, *.yml, *.json) in it",
            dir.display()
        )));
    }
    Ok(objs)
}

/// The phase an object is applied in: CRDs 0, namespaces 1,
/// configuration 2, the rest 3.
pub fn phase(obj: &Value) -> u8 {
    match obj["kind"].as_str().unwrap_or("") {
        "CustomResourceDefinition" => 0,
        "Namespace" => 1,
        k if CONFIGURATION.contains(&k) => 2,
        _ => 3,
    }
}

/// `objs` in apply order: by phase, the folder's order within one.
pub fn order(mut objs: Vec<Value>) -> Vec<Value> {
    objs.sort_by_key(phase);
    objs
}

/// Whether an object has finished, as far as `--apply` waits for it:
/// Some(true) done (Jobs and JobSets complete or failed, Deployments and
/// StatefulSets available, pods Running or ended), Some(false) not yet,
/// None not a kind that is waited for by itself.
pub fn finished(obj: &Value) -> Option<bool> {
    let cond = |types: &[&str]| {
        obj["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| types.contains(&c["type"].as_str().unwrap_or("")) && c["status"] == "True")
        })
    };
    let replicas = || obj["spec"]["replicas"].as_u64().unwrap_or(1);
    let group = obj["apiVersion"]
        .as_str()
        .unwrap_or("")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    match (group, obj["kind"].as_str().unwrap_or("")) {
        ("batch", "Job") => Some(cond(&["Complete", "Failed"])),
        ("jobset.x-k8s.io", "JobSet") => Some(cond(&["Completed", "Failed"])),
        ("apps", "Deployment") => Some(
            cond(&["Available"])
                && obj["status"]["availableReplicas"].as_u64().unwrap_or(0) >= replicas()
                && obj["status"]["updatedReplicas"].as_u64().unwrap_or(0) >= replicas(),
        ),
        ("apps", "StatefulSet") => {
            Some(obj["status"]["readyReplicas"].as_u64().unwrap_or(0) >= replicas())
        }
        ("", "Pod") => Some(pod_settled(obj)),
        _ => None,
    }
}

/// How a finished object ended, for the report: "JobSet ns/name
/// Completed" (its True condition of those `finished` reads; "Ready"
/// for a StatefulSet, the phase for a pod).
pub fn final_state(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let ns = obj["metadata"]["namespace"].as_str();
    let name = obj["metadata"]["name"].as_str().unwrap_or("?");
    let what = match ns {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let state = obj["status"]["conditions"]
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .filter(|c| c["status"] == "True")
                .filter_map(|c| c["type"].as_str())
                .find(|t| ["Complete", "Completed", "Failed", "Available"].contains(t))
        })
        .or(obj["status"]["phase"].as_str())
        .unwrap_or(if kind == "StatefulSet" {
            "Ready"
        } else {
            "gone"
        });
    format!("{what} {state}")
}

/// Of the final states `wait_finished` returned, the Jobs and JobSets
/// that ended Failed ("Job ns/name", …).
pub fn failed_of(states: &[String]) -> Vec<String> {
    states
        .iter()
        .filter(|s| s.starts_with("Job ") || s.starts_with("JobSet "))
        .filter_map(|s| s.strip_suffix(" Failed"))
        .map(str::to_string)
        .collect()
}

/// A pod is settled when Running, Succeeded or Failed.
pub fn pod_settled(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Running" | "Succeeded" | "Failed")
    )
}

/// The API groups of `objs` ("" for the core group).
fn groups(objs: &[Value]) -> Vec<String> {
    let mut g: Vec<String> = objs
        .iter()
        .filter_map(|o| o["apiVersion"].as_str())
        .map(|av| av.rsplit_once('/').map_or("", |(g, _)| g).to_string())
        .collect();
    g.sort();
    g.dedup();
    g
}

/// Apply `objs` (in `order`) with `workload`'s client; after the CRDs,
/// wait (as `admin`) until each is Established.
pub async fn apply(workload: &kube::Client, admin: &kube::Client, objs: &[Value]) -> Result<()> {
    let mut phases: BTreeMap<u8, Vec<Value>> = BTreeMap::new();
    for o in objs {
        phases.entry(phase(o)).or_default().push(o.clone());
    }
    for (phase, batch) in phases {
        // A group whose CRD was just established is served a moment later:
        // the apply is retried (server-side apply is idempotent).
        Poll::new(
            format!("applying the phase-{phase} manifests"),
            Duration::from_secs(60),
        )
        .every(Duration::from_millis(500))
        .until_state(|| async {
            Ok(
                match crate::install::apply::apply_all(workload, &batch).await {
                    Ok(()) => Ok(()),
                    Err(e) if format!("{e:#}").contains("does not serve") => Err(format!("{e:#}")),
                    Err(e) => return Err(e),
                },
            )
        })
        .await?;
        if phase == 0 {
            established(admin, &batch).await?;
        }
    }
    Ok(())
}

async fn established(admin: &kube::Client, crds: &[Value]) -> Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        Poll::new(format!("CRD {name} Established"), Duration::from_secs(60))
            .every(Duration::from_millis(250))
            .until(|| async {
                let c = api.get(name).await?;
                let ok = c.status.and_then(|s| s.conditions).is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
                Ok(ok.then_some(()))
            })
            .await?;
    }
    Ok(())
}

/// Wait, as `admin`, until everything `objs` made has finished (see
/// `finished`) and every pod of their namespaces is settled; one LIST
/// per kind and namespace a second. A namespaced object that names no
/// namespace is in `default_ns`, the one the workload's client applied it
/// to (its kubeconfig's: `default` on fresh clusters, the run's on an
/// existing one). Returns what is still waited for when the timeout
/// passes as the error.
pub async fn wait_finished(
    admin: &kube::Client,
    objs: &[Value],
    default_ns: &str,
    timeout: Duration,
) -> Result<Vec<String>> {
    let wanted: Vec<String> = groups(objs);
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let discovery = Discovery::new(admin.clone())
        .filter(&wanted)
        .run()
        .await
        .context("API discovery")?;
    // (resource, namespace) → names to wait for.
    let mut watched: BTreeMap<(String, Option<String>), (ApiResource, Vec<String>)> =
        BTreeMap::new();
    let mut namespaces: Vec<String> = Vec::new();
    for o in objs.iter().filter(|o| finished(o).is_some()) {
        let av = o["apiVersion"].as_str().unwrap_or_default();
        let (g, v) = av.rsplit_once('/').unwrap_or(("", av));
        let gvk = kube::core::GroupVersionKind::gvk(g, v, o["kind"].as_str().unwrap_or_default());
        let Some((ar, caps)) = discovery.resolve_gvk(&gvk) else {
            continue;
        };
        let ns = match caps.scope {
            Scope::Namespaced => Some(
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or(default_ns)
                    .to_string(),
            ),
            Scope::Cluster => None,
        };
        let e = watched
            .entry((ar.plural.clone(), ns))
            .or_insert_with(|| (ar.clone(), Vec::new()));
        e.1.push(
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    for o in objs {
        let ns = match o["kind"].as_str() {
            Some("Namespace") => o["metadata"]["name"].as_str(),
            _ => o["metadata"]["namespace"].as_str(),
        };
        namespaces.push(ns.unwrap_or(default_ns).to_string());
    }
    namespaces.sort();
    namespaces.dedup();
    Poll::new("what --apply made to finish", timeout)
        .every(Duration::from_secs(1))
        .until_state(|| async {
            let mut pending: Vec<String> = Vec::new();
            let mut ended: Vec<String> = Vec::new();
            for ((plural, ns), (ar, names)) in &watched {
                let api: Api<DynamicObject> = match ns {
                    Some(ns) => Api::namespaced_with(admin.clone(), ns, ar),
                    None => Api::all_with(admin.clone(), ar),
                };
                let list = api.list(&ListParams::default()).await?;
                let by_name: BTreeMap<String, Value> = list
                    .items
                    .into_iter()
                    .filter_map(|o| Some((o.metadata.name.clone()?, typed(&o, ar).ok()?)))
                    .collect();
                for n in names {
                    // A Job gone already (ttlSecondsAfterFinished) is done.
                    match by_name.get(n) {
                        Some(o) if finished(o) == Some(false) => {
                            pending.push(format!("{plural}/{n}"))
                        }
                        Some(o) if ar.kind != "Pod" => ended.push(final_state(o)),
                        _ => {}
                    }
                }
            }
            for ns in &namespaces {
                let pods: Api<DynamicObject> = Api::namespaced_with(
                    admin.clone(),
                    ns,
                    &ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()),
                );
                for p in pods.list(&ListParams::default()).await?.items {
                    let v = serde_json::to_value(&p)?;
                    if !pod_settled(&v) {
                        pending.push(format!("pod {ns}/{}", p.metadata.name.unwrap_or_default()));
                    }
                }
            }
            Ok(match pending.is_empty() {
                true => Ok(ended),
                false => Err(format!("waiting for {}", pending.join(", "))),
            })
        })
        .await
}

/// A listed object as JSON with its apiVersion and kind set: a LIST's
/// items carry neither, and `finished` reads both (without them every
/// item read as "not a kind that is waited for", so a Job still
/// suspended in Kueue's queue counted as ended).
fn typed(o: &DynamicObject, ar: &ApiResource) -> Result<Value> {
    let mut v = serde_json::to_value(o)?;
    v["apiVersion"] = ar.api_version.clone().into();
    v["kind"] = ar.kind.clone().into();
    Ok(v)
}

/// What `wait_settled` lists: (group, version, kind, plural).
const SETTLING: &[(&str, &str, &str, &str)] = &[
    ("batch", "v1", "Job", "jobs"),
    ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
    ("apps", "v1", "Deployment", "deployments"),
    ("apps", "v1", "StatefulSet", "statefulsets"),
];

/// After a command: wait, as `admin`, until every Job and JobSet of the
/// cluster has finished, every Deployment and StatefulSet is available
/// and every pod is Running or ended (`finished`) — what the command
/// set going is inside the window. One LIST per kind a second (a kind
/// the cluster does not serve is skipped); pods are read from the
/// harness's pod watch, `unsettled_pods` (a LIST of thousands of pods a
/// second would cost more than the workload).
pub async fn wait_settled(
    admin: &kube::Client,
    unsettled_pods: impl Fn() -> Vec<String>,
    timeout: Duration,
) -> Result<Vec<String>> {
    Poll::new("the cluster to settle after the command", timeout)
        .every(Duration::from_secs(1))
        .until_state(|| async {
            let mut pending: Vec<String> = Vec::new();
            let mut ended: Vec<String> = Vec::new();
            for (group, version, kind, plural) in SETTLING {
                let ar = ApiResource {
                    group: group.to_string(),
                    version: version.to_string(),
                    api_version: match *group {
                        "" => version.to_string(),
                        g => format!("{g}/{version}"),
                    },
                    kind: kind.to_string(),
                    plural: plural.to_string(),
                };
                let api: Api<DynamicObject> = Api::all_with(admin.clone(), &ar);
                let list = match api.list(&ListParams::default()).await {
                    Ok(l) => l,
                    Err(kube::Error::Api(e)) if e.code == 404 => continue,
                    Err(e) => return Err(e.into()),
                };
                for o in list.items {
                    let v = typed(&o, &ar)?;
                    if finished(&v) == Some(false) {
                        pending.push(format!(
                            "{plural}/{}/{}",
                            o.metadata.namespace.unwrap_or_default(),
                            o.metadata.name.unwrap_or_default()
                        ));
                    } else {
                        ended.push(final_state(&v));
                    }
                }
            }
            pending.extend(unsettled_pods().into_iter().map(|p| format!("pod {p}")));
            Ok(match pending.is_empty() {
                true => Ok(ended),
                false => Err(format!("waiting for {}", pending.join(", "))),
            })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(api: &str, kind: &str, name: &str) -> Value {
        json!({"apiVersion": api, "kind": kind, "metadata": {"name": name}})
    }

    #[test]
    fn crds_and_namespaces_go_first_then_configuration() {
        let objs = vec![
            obj("batch/v1", "Job", "j"),
            obj("kueue.x-k8s.io/v1beta1", "LocalQueue", "lq"),
            obj("v1", "Namespace", "ns"),
            obj("jobset.x-k8s.io/v1alpha2", "JobSet", "js"),
            obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "c"),
            obj("kueue.x-k8s.io/v1beta1", "ClusterQueue", "cq"),
        ];
        let names: Vec<String> = order(objs)
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        // Stable within a phase: the folder's order.
        assert_eq!(names, ["c", "ns", "lq", "cq", "j", "js"]);
    }

    #[test]
    fn a_listed_job_without_its_type_is_typed_before_it_is_judged() {
        // What a LIST returns: items with neither apiVersion nor kind.
        let item: DynamicObject = serde_json::from_value(json!({
            "metadata": {"name": "queued", "namespace": "n"},
            "spec": {"suspend": true},
            "status": {}
        }))
        .unwrap();
        assert_eq!(finished(&serde_json::to_value(&item).unwrap()), None);
        let ar = ApiResource::erase::<k8s_openapi::api::batch::v1::Job>(&());
        let v = typed(&item, &ar).unwrap();
        assert_eq!(finished(&v), Some(false));
    }

    #[test]
    fn finished_conditions_per_kind() {
        let with = |mut o: Value, status: Value| {
            o["status"] = status;
            o
        };
        let cond = |t: &str, s: &str| json!({"conditions": [{"type": t, "status": s}]});
        let job = obj("batch/v1", "Job", "j");
        assert_eq!(finished(&job), Some(false));
        assert_eq!(
            finished(&with(job.clone(), cond("Complete", "True"))),
            Some(true)
        );
        assert_eq!(
            finished(&with(job.clone(), cond("Failed", "True"))),
            Some(true)
        );
        assert_eq!(
            finished(&with(job.clone(), cond("Complete", "False"))),
            Some(false)
        );
        // A JobSet says Completed, not Complete.
        let js = obj("jobset.x-k8s.io/v1alpha2", "JobSet", "s");
        assert_eq!(
            finished(&with(js.clone(), cond("Complete", "True"))),
            Some(false)
        );
        assert_eq!(finished(&with(js, cond("Completed", "True"))), Some(true));
        let mut d = obj("apps/v1", "Deployment", "d");
        d["spec"] = json!({"replicas": 2});
        let mut st = cond("Available", "True");
        st["availableReplicas"] = json!(1);
        st["updatedReplicas"] = json!(2);
        assert_eq!(finished(&with(d.clone(), st.clone())), Some(false));
        st["availableReplicas"] = json!(2);
        assert_eq!(finished(&with(d, st)), Some(true));
        let ss = obj("apps/v1", "StatefulSet", "s");
        assert_eq!(finished(&ss), Some(false));
        assert_eq!(finished(&with(ss, json!({"readyReplicas": 1}))), Some(true));
        let pod = obj("v1", "Pod", "p");
        assert_eq!(
            finished(&with(pod.clone(), json!({"phase": "Pending"}))),
            Some(false)
        );
        assert_eq!(
            finished(&with(pod, json!({"phase": "Running"}))),
            Some(true)
        );
        // Not waited for by itself (its pods are).
        assert_eq!(finished(&obj("apps/v1", "DaemonSet", "x")), None);
        assert_eq!(finished(&obj("example.com/v1", "Job", "x")), None);
        let mut js = with(
            obj("jobset.x-k8s.io/v1alpha2", "JobSet", "s"),
            cond("Completed", "True"),
        );
        js["metadata"]["namespace"] = "n".into();
        assert_eq!(final_state(&js), "JobSet n/s Completed");
        let mut failed = with(job, cond("Failed", "True"));
        failed["metadata"]["namespace"] = "n".into();
        let states = [
            final_state(&js),
            final_state(&failed),
            "JobSet n/t Failed".to_string(),
            "StatefulSet n/db Ready".to_string(),
        ];
        assert_eq!(failed_of(&states), ["Job n/j", "JobSet n/t"]);
    }

    #[test]
    fn folders_load_sorted_with_lists_unpacked_and_errors_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c1}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a.yaml"),
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n---\n# only a comment\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
        let objs = load(dir.path()).unwrap();
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Namespace", "ConfigMap"]);
        std::fs::write(
            dir.path().join("c.yaml"),
            "apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\n",
        )
        .unwrap();
        let e = load(dir.path()).unwrap_err();
        assert!(
            format!("{e:#}").contains("c.yaml") && format!("{e:#}").contains("generateName"),
            "{e:#}"
        );
        assert_eq!(crate::error::exit_code(&e), 2);
        let empty = tempfile::tempdir().unwrap();
        assert!(format!("{:#}", load(empty.path()).unwrap_err()).contains("no manifests"));
        assert!(load(&empty.path().join("missing")).is_err());
    }
}
