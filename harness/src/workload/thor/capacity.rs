//! What Thor pods take from the nodes, and how much room the nodes have.
//!
//! HPCC's values give each Thor container `managerResources` and
//! `workerResources`; the chart's `hpcc.addResources`
//! (helm/hpcc/templates/_helpers.tpl) puts `cpu` into `requests` and
//! everything else into `limits` (the API server then defaults the memory
//! request to the limit). A worker pod with numWorkersPerPod > 1 carries
//! one worker container each, so it requests N × workerResources.
//!
//! A scenario's `capacity: {instances: X}` gives the nodes room for X
//! whole instances' CPU (spread evenly over `cluster.nodes`), which is how
//! contention is set up: X below maxGraphs means instances compete.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::k8s::names;

/// One container's resources, as HPCC's values give them.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    pub cpu: Option<String>,
    pub memory: Option<String>,
}

/// Room for this many whole Thor instances' CPU.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    pub instances: f64,
}

/// A CPU quantity in millicores: "2", "500m", "1.5".
pub fn cpu_milli(q: &str) -> Result<u64, String> {
    let bad = || format!("{q:?} is not a CPU quantity (e.g. 1, 500m, 1.5)");
    let (number, scale) = match q.strip_suffix('m') {
        Some(n) => (n, 1.0),
        None => (q, 1000.0),
    };
    let v: f64 = number.parse().map_err(|_| bad())?;
    if !v.is_finite() || v < 0.0 || number.starts_with(['+', '-']) {
        return Err(bad());
    }
    Ok((v * scale).round() as u64)
}

/// The resource block `hpcc.addResources` renders for `r`: cpu as a
/// request, the rest as limits; None when nothing is given.
pub fn container_resources(r: &Resources) -> Option<Value> {
    let mut out = serde_json::Map::new();
    if let Some(cpu) = &r.cpu {
        out.insert("requests".into(), json!({ "cpu": cpu }));
    }
    if let Some(memory) = &r.memory {
        out.insert("limits".into(), json!({ "memory": memory }));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// What one instance's pods take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThorResources {
    pub manager: Resources,
    pub worker: Resources,
}

impl ThorResources {
    /// Set the resources of every Thor container in the rendered objects
    /// `docs` (Jobs and JobSets): `thormanager-job-*` containers get the
    /// manager's, `thorworker-job-*` the workers'. Sidecars are left as
    /// they are.
    pub fn apply(&self, docs: &mut [Value]) {
        let manager = container_resources(&self.manager);
        let worker = container_resources(&self.worker);
        if manager.is_none() && worker.is_none() {
            return;
        }
        for d in docs.iter_mut() {
            for_each_container(d, &mut |c| {
                let name = c["name"].as_str().unwrap_or_default();
                let r = if name.starts_with("thormanager-job-") {
                    &manager
                } else if name.starts_with("thorworker-job-") {
                    &worker
                } else {
                    return;
                };
                if let Some(r) = r {
                    c["resources"] = r.clone();
                }
            });
        }
    }

    /// Whether both the manager and the workers request CPU.
    pub fn has_cpu(&self) -> bool {
        self.manager.cpu.is_some() && self.worker.cpu.is_some()
    }
}

/// CPU requested by every pod the rendered objects `docs` make, in
/// millicores: each pod template's containers (sidecars too: the chart's
/// postrun sidecar requests its own) × the pods of its Job (parallelism)
/// × the replicated Job's replicas.
pub fn pods_cpu_milli(docs: &[Value]) -> u64 {
    let mut total = 0;
    for d in docs {
        let jobs: Vec<(&Value, u64)> = match d["kind"].as_str() {
            Some("Job") => vec![(&d["spec"], 1)],
            Some("JobSet") => d["spec"]["replicatedJobs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|rj| {
                    (
                        &rj["template"]["spec"],
                        rj["replicas"].as_u64().unwrap_or(1),
                    )
                })
                .collect(),
            _ => vec![],
        };
        for (job, replicas) in jobs {
            let pods = job["parallelism"].as_u64().unwrap_or(1) * replicas;
            let per_pod: u64 = job["template"]["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["resources"]["requests"]["cpu"].as_str())
                .filter_map(|q| cpu_milli(q).ok())
                .sum();
            total += pods * per_pod;
        }
    }
    total
}

/// Every container of a Job's or a JobSet's pod templates.
fn for_each_container(doc: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    for t in crate::workload::thor::template::pod_templates_mut(doc) {
        if let Some(cs) = t["spec"]["containers"].as_array_mut() {
            cs.iter_mut().for_each(&mut *f);
        }
    }
}

/// Each node's CPU, in millicores, for room for `capacity` instances of
/// `instance_milli` on `nodes` nodes.
pub fn node_cpu_milli(capacity: &Capacity, instance_milli: u64, nodes: u32) -> u64 {
    let total = (capacity.instances * instance_milli as f64).floor() as u64;
    total / u64::from(nodes.max(1))
}

/// Problems with the resources and the capacity, as (field path, message).
pub fn problems(
    manager: Option<&Resources>,
    worker: Option<&Resources>,
    capacity: Option<&Capacity>,
    node_cpu_given: bool,
) -> Vec<(Vec<&'static str>, String)> {
    let mut out = Vec::new();
    for (at, r) in [("managerResources", manager), ("workerResources", worker)] {
        let Some(r) = r else { continue };
        if let Some(cpu) = &r.cpu
            && let Err(e) = cpu_milli(cpu)
        {
            out.push((vec!["thor", at, "cpu"], e));
        }
        if let Some(m) = &r.memory
            && let Err(e) = names::quantity(m)
        {
            out.push((vec!["thor", at, "memory"], e));
        }
    }
    match (capacity, node_cpu_given) {
        (Some(_), true) => out.push((
            vec!["cluster", "nodeCpu"],
            "capacity sets the nodes' CPU: give one of capacity and cluster.nodeCpu".into(),
        )),
        (None, false) => out.push((
            vec!["cluster", "nodeCpu"],
            "missing: give cluster.nodeCpu, or capacity with the Thor pods' CPU".into(),
        )),
        _ => {}
    }
    if let Some(c) = capacity {
        if !(c.instances.is_finite() && c.instances > 0.0 && c.instances <= 10_000.0) {
            out.push((
                vec!["capacity", "instances"],
                format!("{} is out of range (0, 10000]", c.instances),
            ));
        }
        let has_cpu = |r: Option<&Resources>| r.and_then(|r| r.cpu.as_ref()).is_some();
        if !has_cpu(manager) || !has_cpu(worker) {
            out.push((
                vec!["capacity"],
                "room is counted in CPU: give thor.managerResources.cpu and thor.workerResources.cpu"
                    .into(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(cpu: &str, memory: Option<&str>) -> Resources {
        Resources {
            cpu: Some(cpu.into()),
            memory: memory.map(str::to_string),
        }
    }

    #[test]
    fn cpu_quantities_read_as_millicores() {
        assert_eq!(cpu_milli("2"), Ok(2000));
        assert_eq!(cpu_milli("500m"), Ok(500));
        assert_eq!(cpu_milli("1.5"), Ok(1500));
        assert!(cpu_milli("banana").is_err());
        assert!(cpu_milli("-1").is_err());
    }

    #[test]
    fn cpu_is_requested_and_memory_limited_as_the_chart_does() {
        let r = container_resources(&res("1", Some("2G"))).unwrap();
        assert_eq!(
            r,
            json!({"requests": {"cpu": "1"}, "limits": {"memory": "2G"}})
        );
        assert_eq!(container_resources(&Resources::default()), None);
    }

    #[test]
    fn manager_and_worker_containers_get_their_own_and_sidecars_none() {
        let t = ThorResources {
            manager: res("1", None),
            worker: res("4", None),
        };
        let mut docs = vec![json!({"kind": "JobSet", "spec": {"replicatedJobs": [
            {"template": {"spec": {"template": {"spec": {"containers": [
                {"name": "thormanager-job-x"}, {"name": "postrun"}]}}}}},
            {"template": {"spec": {"template": {"spec": {"containers": [
                {"name": "thorworker-job-x-1"}, {"name": "thorworker-job-x-2"}]}}}}}
        ]}})];
        t.apply(&mut docs);
        let rjs = &docs[0]["spec"]["replicatedJobs"];
        let cs = |i: usize| &rjs[i]["template"]["spec"]["template"]["spec"]["containers"];
        assert_eq!(cs(0)[0]["resources"]["requests"]["cpu"], "1");
        assert!(cs(0)[1].get("resources").is_none());
        assert_eq!(cs(1)[1]["resources"]["requests"]["cpu"], "4");
        // One manager pod (1 CPU) and one worker pod of two containers.
        assert_eq!(pods_cpu_milli(&docs), 9000);
    }

    #[test]
    fn room_for_one_and_a_half_instances_is_split_over_the_nodes() {
        let c = Capacity { instances: 1.5 };
        assert_eq!(node_cpu_milli(&c, 3000, 1), 4500);
        assert_eq!(node_cpu_milli(&c, 3000, 3), 1500);
    }

    #[test]
    fn capacity_needs_cpus_and_replaces_node_cpu() {
        let c = Capacity { instances: 1.0 };
        let r = res("1", None);
        assert!(problems(Some(&r), Some(&r), Some(&c), false).is_empty());
        assert_eq!(problems(Some(&r), Some(&r), Some(&c), true).len(), 1);
        assert_eq!(problems(None, Some(&r), Some(&c), false).len(), 1);
        assert_eq!(problems(None, None, None, false).len(), 1);
        assert!(problems(None, None, None, true).is_empty());
    }
}
