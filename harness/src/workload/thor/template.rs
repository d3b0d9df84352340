//! Rendering Thor templates: placeholders substituted, the `worker`
//! container repeated numWorkersPerPod times, numeric placeholders turned
//! into numbers. And the shape of what a rendered instance creates.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::yaml;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Baseline,
    Jobset,
    JobsetGang,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Baseline, Mode::Jobset, Mode::JobsetGang];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Baseline => "baseline",
            Mode::Jobset => "jobset",
            Mode::JobsetGang => "jobset-gang",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Who creates a template's objects in HPCC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creator {
    /// thoragent, before the instance runs.
    ThorAgent,
    /// The Thor manager, once its pod runs.
    ThorManager,
}

/// One of our template files, embedded at build time.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    /// Path relative to the repository root.
    pub path: &'static str,
    pub text: &'static str,
    pub created_by: Creator,
}

macro_rules! tpl {
    ($path:literal, $creator:expr) => {
        Template {
            path: concat!("manifests/hpcc/", $path),
            text: include_str!(concat!("../../../../manifests/hpcc/", $path)),
            created_by: $creator,
        }
    };
}

/// The Kubernetes minors with a gang template (the Workload/PodGroup API
/// differs per release).
pub const GANG_MINORS: &[u32] = &[36, 37];

/// The templates of a mode, in the order HPCC applies them. Only
/// jobset-gang depends on the Kubernetes minor (37 for "1.37"); it has no
/// template for minors outside GANG_MINORS.
pub fn templates_for(mode: Mode, minor: u32) -> Vec<Template> {
    match mode {
        Mode::Baseline => vec![
            tpl!(
                "baseline/thormanager-networkpolicy.yaml",
                Creator::ThorAgent
            ),
            tpl!("baseline/thormanager-job.yaml", Creator::ThorAgent),
            tpl!(
                "baseline/thorworker-networkpolicy.yaml",
                Creator::ThorManager
            ),
            tpl!("baseline/thorworker-job.yaml", Creator::ThorManager),
        ],
        Mode::Jobset => vec![tpl!("jobset/thor-jobset.yaml", Creator::ThorAgent)],
        Mode::JobsetGang => match minor {
            36 => vec![tpl!(
                "jobset-gang/thor-jobset-gang-1.36.yaml",
                Creator::ThorAgent
            )],
            37 => vec![tpl!(
                "jobset-gang/thor-jobset-gang-1.37.yaml",
                Creator::ThorAgent
            )],
            _ => vec![],
        },
    }
}

/// The templates of a mode for the default Kubernetes release.
pub fn templates(mode: Mode) -> Vec<Template> {
    templates_for(
        mode,
        crate::k8s::K8sRelease::default_release().minor_number(),
    )
}

/// The Thor agent identity's Role and RoleBinding for a mode.
pub fn rbac(mode: Mode) -> Template {
    match mode {
        Mode::Baseline => tpl!("rbac/baseline.yaml", Creator::ThorAgent),
        Mode::Jobset => tpl!("rbac/jobset.yaml", Creator::ThorAgent),
        Mode::JobsetGang => tpl!("rbac/jobset-gang.yaml", Creator::ThorAgent),
    }
}

/// What one Thor instance is rendered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThorParams {
    pub thor_name: String,
    /// `<thor>-<agent pod suffix>-<instance#>`
    pub job_name: String,
    pub num_workers: u32,
    pub num_workers_per_pod: u32,
    pub job_version: String,
    /// How long kwok keeps the pods Running, e.g. "30s".
    pub pod_runtime: String,
    pub namespace: String,
}

impl ThorParams {
    pub fn worker_pods(&self) -> Result<u32> {
        if self.num_workers == 0 || self.num_workers_per_pod == 0 {
            bail!("numWorkers and numWorkersPerPod must be at least 1");
        }
        if !self.num_workers.is_multiple_of(self.num_workers_per_pod) {
            bail!(
                "numWorkersPerPod {} does not divide numWorkers {}",
                self.num_workers_per_pod,
                self.num_workers
            );
        }
        Ok(self.num_workers / self.num_workers_per_pod)
    }

    fn values(&self) -> Result<Vec<(&'static str, String)>> {
        Ok(vec![
            ("_HPCC_JOBNAME_", self.job_name.clone()),
            ("_HPCC_THOR_NAME_", self.thor_name.clone()),
            ("_HPCC_NUM_WORKERS_", self.num_workers.to_string()),
            ("_HPCC_NUM_WORKER_PODS_", self.worker_pods()?.to_string()),
            ("_HPCC_NUM_PODS_", (1 + self.worker_pods()?).to_string()),
            ("_HPCC_JOB_VERSION_", self.job_version.clone()),
            ("_HARNESS_POD_RUNTIME_", self.pod_runtime.clone()),
            ("_HARNESS_NAMESPACE_", self.namespace.clone()),
        ])
    }
}

/// Placeholders whose whole-string occurrences become JSON numbers.
const NUMERIC: &[&str] = &[
    "_HPCC_NUM_WORKERS_",
    "_HPCC_NUM_WORKER_PODS_",
    "_HPCC_NUM_PODS_",
];

fn substitute(v: &mut Value, values: &[(&str, String)]) {
    match v {
        Value::String(s) => {
            if let Some((_, val)) = values.iter().find(|(k, _)| s == k && NUMERIC.contains(k))
                && let Ok(n) = val.parse::<u64>()
            {
                *v = Value::Number(n.into());
                return;
            }
            let mut out = s.clone();
            for (k, val) in values {
                out = out.replace(k, val);
            }
            *s = out;
        }
        Value::Array(items) => items.iter_mut().for_each(|i| substitute(i, values)),
        Value::Object(map) => map.values_mut().for_each(|i| substitute(i, values)),
        _ => {}
    }
}

/// Repeat every container named `worker` as worker-1..N, each with its own
/// port (HPCC: --slaveport=20100+100*(n-1)).
fn expand_workers(v: &mut Value, per_pod: u32) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(containers)) = map.get_mut("containers") {
                let mut out = Vec::new();
                for c in containers.drain(..) {
                    if c["name"] == "worker" {
                        for n in 1..=per_pod {
                            let mut w = c.clone();
                            w["name"] = Value::String(format!("worker-{n}"));
                            let port = (20100 + 100 * (n - 1)).to_string();
                            substitute(&mut w, &[("_HPCC_WORKER_PORT_", port)]);
                            out.push(w);
                        }
                    } else {
                        out.push(c);
                    }
                }
                *containers = out;
            }
            map.values_mut().for_each(|i| expand_workers(i, per_pod));
        }
        Value::Array(items) => items.iter_mut().for_each(|i| expand_workers(i, per_pod)),
        _ => {}
    }
}

/// Render a template into its documents (JSON objects ready to apply).
pub fn render(t: &Template, p: &ThorParams) -> Result<Vec<Value>> {
    let docs = yaml::parse(t.text).map_err(|e| {
        anyhow::anyhow!("{}:{}:{}: {}", t.path, e.pos.line, e.pos.column, e.message)
    })?;
    let values = p
        .values()
        .with_context(|| format!("rendering {}", t.path))?;
    let mut out = Vec::new();
    for d in docs {
        if let Some(problem) = d.problems.first() {
            bail!(
                "{}:{}:{}: {}",
                t.path,
                problem.pos.line,
                problem.pos.column,
                problem.message
            );
        }
        let mut v = d.root.to_json();
        if v.is_null() {
            continue;
        }
        expand_workers(&mut v, p.num_workers_per_pod);
        substitute(&mut v, &values);
        out.push(v);
    }
    Ok(out)
}

/// What one instance puts in the cluster, on paper.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    /// Objects the Thor identity creates, by kind.
    pub client_objects: BTreeMap<String, u32>,
    /// Objects controllers create from them (Jobs, Services), by kind.
    pub controller_objects: BTreeMap<String, u32>,
    pub pods: u32,
    pub containers: u32,
}

impl Shape {
    pub fn total_objects(&self) -> u32 {
        self.client_objects.values().sum::<u32>()
            + self.controller_objects.values().sum::<u32>()
            + self.pods
    }
}

fn count_job(spec: &Value) -> (u32, u32) {
    let parallelism = spec["parallelism"].as_u64().unwrap_or(1) as u32;
    let completions = spec["completions"].as_u64().map(|c| c as u32);
    // Pods created over the Job's life: completions when set, else the
    // parallelism (a NonIndexed Job without completions ends when one
    // pod succeeds and the rest stop).
    let pods = completions.unwrap_or(parallelism);
    let containers = spec["template"]["spec"]["containers"]
        .as_array()
        .map_or(0, |c| c.len()) as u32;
    (pods, pods * containers)
}

/// The shape of one rendered instance of `mode` (default release).
pub fn shape(mode: Mode, p: &ThorParams) -> Result<Shape> {
    shape_for(
        mode,
        crate::k8s::K8sRelease::default_release().minor_number(),
        p,
    )
}

/// The shape of one rendered instance of `mode` on Kubernetes 1.`minor`.
pub fn shape_for(mode: Mode, minor: u32, p: &ThorParams) -> Result<Shape> {
    let mut s = Shape::default();
    let ts = templates_for(mode, minor);
    if ts.is_empty() {
        bail!(
            "{} mode has no template for Kubernetes 1.{minor}",
            mode.name()
        );
    }
    for t in ts {
        for doc in render(&t, p)? {
            let kind = doc["kind"].as_str().unwrap_or("?").to_string();
            *s.client_objects.entry(kind.clone()).or_default() += 1;
            match kind.as_str() {
                "Job" => {
                    let (pods, containers) = count_job(&doc["spec"]);
                    s.pods += pods;
                    s.containers += containers;
                }
                "JobSet" => {
                    for rj in doc["spec"]["replicatedJobs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        let replicas = rj["replicas"].as_u64().unwrap_or(1) as u32;
                        *s.controller_objects.entry("Job".into()).or_default() += replicas;
                        let (pods, containers) = count_job(&rj["template"]["spec"]);
                        s.pods += replicas * pods;
                        s.containers += replicas * containers;
                    }
                    // JobSet makes a headless Service for pod DNS names
                    // unless enableDNSHostnames is false.
                    if doc["spec"]["network"]["enableDNSHostnames"] != false {
                        *s.controller_objects.entry("Service".into()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn params(workers: u32, per_pod: u32) -> ThorParams {
        ThorParams {
            thor_name: "thor".into(),
            job_name: "thor-6d9f7c8b5d-x2v9k-1".into(),
            num_workers: workers,
            num_workers_per_pod: per_pod,
            job_version: "10.8.0".into(),
            pod_runtime: "30s".into(),
            namespace: "thor-test".into(),
        }
    }

    #[test]
    fn baseline_renders_hpccs_shape() {
        let p = params(8, 2);
        let docs: Vec<Value> = templates(Mode::Baseline)
            .iter()
            .flat_map(|t| render(t, &p).unwrap())
            .collect();
        assert_eq!(docs.len(), 4);
        let worker_job = &docs[3];
        assert_eq!(
            worker_job["metadata"]["name"],
            "thorworker-job-thor-6d9f7c8b5d-x2v9k-1"
        );
        assert_eq!(worker_job["spec"]["parallelism"], 4);
        assert!(worker_job["spec"]["completions"].is_null());
        assert_eq!(worker_job["spec"]["backoffLimit"], 0);
        assert_eq!(worker_job["spec"]["ttlSecondsAfterFinished"], 100);
        let containers = worker_job["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        let names: Vec<&str> = containers
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["worker-1", "worker-2", "postrun"]);
        assert_eq!(containers[1]["args"][2], "--slaveport=20200");
        let s = shape(Mode::Baseline, &p).unwrap();
        assert_eq!(s.pods, 1 + 4);
        assert_eq!(s.containers, 2 + 4 * 3);
        assert_eq!(s.client_objects["Job"], 2);
        assert_eq!(s.client_objects["NetworkPolicy"], 2);
    }

    #[test]
    fn jobset_renders_indexed_workers() {
        let p = params(4, 1);
        let docs = render(&templates(Mode::Jobset)[0], &p).unwrap();
        assert_eq!(docs.len(), 1);
        let workers = &docs[0]["spec"]["replicatedJobs"][1]["template"]["spec"];
        assert_eq!(workers["completionMode"], "Indexed");
        assert_eq!(workers["parallelism"], 4);
        assert_eq!(workers["completions"], 4);
        let s = shape(Mode::Jobset, &p).unwrap();
        assert_eq!((s.pods, s.containers), (5, 10));
        assert_eq!(s.client_objects["JobSet"], 1);
        assert_eq!(s.controller_objects["Job"], 2);
    }

    #[test]
    fn gang_templates_group_every_pod() {
        let p = params(4, 2);
        for minor in GANG_MINORS {
            let docs = render(&templates_for(Mode::JobsetGang, *minor)[0], &p).unwrap();
            let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
            assert_eq!(kinds, ["Workload", "PodGroup", "JobSet"]);
            assert_eq!(docs[1]["spec"]["schedulingPolicy"]["gang"]["minCount"], 3);
            let s = shape_for(Mode::JobsetGang, *minor, &p).unwrap();
            assert_eq!(s.pods, 3);
            assert_eq!(s.client_objects.values().sum::<u32>(), 3);
        }
        assert!(shape_for(Mode::JobsetGang, 35, &p).is_err());
    }

    #[test]
    fn workers_per_pod_must_divide() {
        assert!(shape(Mode::Baseline, &params(10, 3)).is_err());
        assert!(shape(Mode::Baseline, &params(0, 1)).is_err());
    }
}
