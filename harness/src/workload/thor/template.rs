//! Rendering Thor templates: placeholders substituted (numeric and boolean
//! ones into JSON numbers and booleans), the worker container repeated
//! numWorkersPerPod times, job templates embedded in the setup ConfigMaps
//! (what an instance creates, counted: shape.rs).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::yaml;

pub use crate::workload::thor::mode::Mode;

/// Who creates a template's objects in HPCC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creator {
    /// thoragent, before the instance runs.
    ThorAgent,
    /// The Thor manager, once its pod runs.
    ThorManager,
    /// eclccserver, once per workunit it compiles.
    EclccServer,
    /// The harness as admin, once per scenario before measuring (what the
    /// chart installs).
    Harness,
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
    ($creator:ident, $path:literal) => {
        Template {
            path: concat!("manifests/hpcc/", $path),
            text: include_str!(concat!("../../../../manifests/hpcc/", $path)),
            created_by: Creator::$creator,
        }
    };
}

/// The Kubernetes minors with a gang template (the Workload/PodGroup API
/// differs per release).
pub const GANG_MINORS: &[u32] = &[36, 37];

/// The templates of one Thor instance in `mode`, in the order HPCC applies
/// them (each NetworkPolicy before what it lets talk). Only jobset-gang
/// depends on the Kubernetes minor (37 for "1.37"); it has no template for
/// minors outside GANG_MINORS.
pub fn templates_for(mode: Mode, minor: u32) -> Vec<Template> {
    let instance = match (mode, minor) {
        (Mode::Baseline, _) => {
            return vec![
                tpl!(ThorAgent, "baseline/thormanager-networkpolicy.yaml"),
                tpl!(ThorAgent, "baseline/thormanager-job.yaml"),
                tpl!(ThorManager, "baseline/thorworker-networkpolicy.yaml"),
                tpl!(ThorManager, "baseline/thorworker-job.yaml"),
            ];
        }
        (Mode::Jobset | Mode::JobsetKueue, _) => tpl!(ThorAgent, "jobset/thor-jobset.yaml"),
        (_, 36) => tpl!(ThorAgent, "jobset-gang/thor-jobset-gang-1.36.yaml"),
        (_, 37) => tpl!(ThorAgent, "jobset-gang/thor-jobset-gang-1.37.yaml"),
        _ => return vec![],
    };
    vec![
        tpl!(ThorAgent, "jobset/thormanager-networkpolicy.yaml"),
        tpl!(ThorAgent, "jobset/thorworker-networkpolicy.yaml"),
        instance,
    ]
}

pub(crate) fn default_minor() -> u32 {
    crate::k8s::K8sRelease::default_release().minor_number()
}

/// The templates of a mode for the default Kubernetes release.
pub fn templates(mode: Mode) -> Vec<Template> {
    templates_for(mode, default_minor())
}

/// What the scenario creates once in the namespace before measuring, as
/// the chart would have: policies, service accounts, the two ConfigMaps,
/// the storage planes' claims (Helm's install order).
pub fn setup() -> Vec<Template> {
    vec![
        tpl!(Harness, "setup/networkpolicies.yaml"),
        tpl!(Harness, "setup/serviceaccounts.yaml"),
        tpl!(Harness, "setup/thor-configmap.yaml"),
        tpl!(Harness, "setup/myeclccserver-configmap.yaml"),
        tpl!(Harness, "setup/pvcs.yaml"),
    ]
}

/// eclccserver's compile Job; render it with `job_name` =
/// `eclcc-myeclccserver-<eclccserver pod suffix>-<k>`.
pub fn compile_job() -> Template {
    tpl!(EclccServer, "compile/compile-job.yaml")
}

/// The Thor agent identity's Role and RoleBinding for a mode.
pub fn rbac(mode: Mode) -> Template {
    match mode {
        Mode::Baseline => tpl!(ThorAgent, "rbac/baseline.yaml"),
        Mode::Jobset | Mode::JobsetKueue => tpl!(ThorAgent, "rbac/jobset.yaml"),
        Mode::JobsetGang => tpl!(ThorAgent, "rbac/jobset-gang.yaml"),
    }
}

/// The eclccserver identity's Role and RoleBinding.
pub fn eclccserver_rbac() -> Template {
    tpl!(EclccServer, "rbac/eclccserver.yaml")
}

/// The user name of the eclccserver identity (a client certificate).
pub const ECLCCSERVER_USER: &str = "eclccserver";

/// Exactly what the eclccserver identity's driver does, as (API group,
/// resource, verbs): `kubectl replace --force` of the compile Job, its
/// status polls and deletion, and the pod list while it waits.
pub const ECLCCSERVER_API_USE: &[(&str, &str, &[&str])] =
    &[("batch", "jobs", JOB_VERBS), ("", "pods", &["get", "list"])];
const JOB_VERBS: &[&str] = &["get", "list", "watch", "create", "delete"];

/// Templates whose text the setup ConfigMaps embed (`_HARNESS_EMBED_:<path
/// under manifests/hpcc/>`), as the chart's ConfigMaps hold its job specs.
fn embeddable() -> Vec<Template> {
    let mut ts = templates_for(Mode::Baseline, 0);
    ts.push(compile_job());
    ts
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
    /// JobSet modes: `network.enableDNSHostnames` (`_HARNESS_DNS_HOSTNAMES_`).
    /// With it the workers reach the manager by its headless-Service name;
    /// without it (the proof of concept) they get its address explicitly.
    pub dns_hostnames: bool,
}

/// The port the Thor manager listens on (HPCC's THOR_BASE_PORT); workers
/// get `--master=<address>:<port>`.
pub const THOR_MASTER_PORT: u32 = 20000;
/// The manager pod IP written into the workers' `--master=` when no DNS
/// name is used (HPCC passes the real one; its length is what counts here).
pub const MANAGER_IP: &str = "10.244.1.10";

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

    /// The `--master=` value workers get (`_HPCC_MASTER_`): with DNS
    /// hostnames the JobSet's name for the manager pod, else MANAGER_IP.
    pub fn master(&self) -> String {
        let host = if self.dns_hostnames {
            format!("{0}-manager-0-0.{0}", self.job_name)
        } else {
            MANAGER_IP.to_string()
        };
        format!("{host}:{THOR_MASTER_PORT}")
    }

    fn values(&self) -> Result<Vec<(&'static str, String)>> {
        Ok(vec![
            ("_HPCC_JOBNAME_", self.job_name.clone()),
            ("_HPCC_THOR_NAME_", self.thor_name.clone()),
            ("_HPCC_NUM_WORKERS_", self.num_workers.to_string()),
            ("_HPCC_NUM_WORKER_PODS_", self.worker_pods()?.to_string()),
            ("_HPCC_NUM_PODS_", (1 + self.worker_pods()?).to_string()),
            ("_HPCC_JOB_VERSION_", self.job_version.clone()),
            ("_HPCC_MASTER_", self.master()),
            ("_HARNESS_POD_RUNTIME_", self.pod_runtime.clone()),
            ("_HARNESS_NAMESPACE_", self.namespace.clone()),
            ("_HARNESS_DNS_HOSTNAMES_", self.dns_hostnames.to_string()),
        ])
    }
}

/// Placeholders whose whole-string occurrences become JSON numbers.
const NUMERIC: &[&str] = &[
    "_HPCC_NUM_WORKERS_",
    "_HPCC_NUM_WORKER_PODS_",
    "_HPCC_NUM_PODS_",
];
/// Placeholders whose whole-string occurrences become JSON booleans.
const BOOLEAN: &[&str] = &["_HARNESS_DNS_HOSTNAMES_"];

/// `s` with every placeholder replaced, if it holds one (all start `_H`).
fn replace_all(s: &str, values: &[(&str, String)]) -> Option<String> {
    let fold = |out: String, (k, val): &(&str, String)| out.replace(k, val);
    s.contains("_H")
        .then(|| values.iter().fold(s.to_string(), fold))
}

/// Substitute placeholders in every string and mapping key.
fn substitute(v: &mut Value, values: &[(&str, String)]) {
    match v {
        Value::String(s) => {
            if let Some((k, val)) = values.iter().find(|(k, _)| s == k) {
                if NUMERIC.contains(k)
                    && let Ok(n) = val.parse::<u64>()
                {
                    *v = Value::Number(n.into());
                    return;
                }
                if BOOLEAN.contains(k)
                    && let Ok(b) = val.parse::<bool>()
                {
                    *v = Value::Bool(b);
                    return;
                }
            }
            if let Some(out) = replace_all(s, values) {
                *s = out;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| substitute(i, values)),
        Value::Object(map) => {
            map.values_mut().for_each(|i| substitute(i, values));
            if map.keys().any(|k| k.contains("_H")) {
                for (k, item) in std::mem::take(map) {
                    map.insert(replace_all(&k, values).unwrap_or(k), item);
                }
            }
        }
        _ => {}
    }
}

/// Marks the worker container: its name holds this placeholder.
pub const WORKER_N: &str = "_HPCC_WORKER_N_";

fn names_worker(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.contains(WORKER_N))
}

/// `items` once per worker container n = 1..=per_pod, with WORKER_N = n
/// and its port (HPCC: --slaveport=20100+100*(n-1)).
fn per_worker(items: &[Value], per_pod: u32) -> Vec<Value> {
    let mut out = Vec::new();
    for n in 1..=per_pod {
        let port = (20100 + 100 * (n - 1)).to_string();
        let mut v = Value::Array(items.to_vec());
        substitute(
            &mut v,
            &[(WORKER_N, n.to_string()), ("_HPCC_WORKER_PORT_", port)],
        );
        out.extend(v.as_array().cloned().unwrap_or_default());
    }
    out
}

/// Repeat the worker container (its name holds WORKER_N) per worker. In
/// the other containers (postrun), a command or args list is repeated per
/// worker from its first item naming WORKER_N on (HPCC's sidecar takes
/// `<container> <process>` pairs).
fn expand_workers(v: &mut Value, per_pod: u32) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(containers)) = map.get_mut("containers") {
                let mut out = Vec::new();
                for mut c in containers.drain(..) {
                    if names_worker(&c["name"]) {
                        out.extend(per_worker(&[c], per_pod));
                        continue;
                    }
                    for field in ["command", "args"] {
                        if let Some(Value::Array(items)) = c.get_mut(field)
                            && let Some(i) = items.iter().position(names_worker)
                        {
                            let tail = items.split_off(i);
                            items.extend(per_worker(&tail, per_pod));
                        }
                    }
                    out.push(c);
                }
                *containers = out;
            }
            map.values_mut().for_each(|i| expand_workers(i, per_pod));
        }
        Value::Array(items) => items.iter_mut().for_each(|i| expand_workers(i, per_pod)),
        _ => {}
    }
}

/// Replace `_HARNESS_EMBED_:<path>` strings with that template's text
/// without its comment lines, placeholders left in (as HPCC's ConfigMaps
/// hold its job specs).
fn embed(v: &mut Value) {
    match v {
        Value::String(s) => {
            let Some(rel) = s.strip_prefix("_HARNESS_EMBED_:") else {
                return;
            };
            let path = format!("manifests/hpcc/{rel}");
            if let Some(t) = embeddable().into_iter().find(|t| t.path == path) {
                let lines = t.text.lines().filter(|l| !l.trim_start().starts_with('#'));
                *s = lines.collect::<Vec<_>>().join("\n");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(embed),
        Value::Object(map) => map.values_mut().for_each(embed),
        _ => {}
    }
}

/// A template's non-empty documents as JSON, parsed once per template
/// text (the validator renders each thousands of times).
fn parsed(t: &Template) -> Result<Vec<Value>> {
    type Cache = HashMap<(usize, usize), Result<Vec<Value>, String>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let at = |pos: yaml::Pos, msg: &str| format!("{}:{}:{}: {msg}", t.path, pos.line, pos.column);
    let parse = || {
        let docs = yaml::parse(t.text).map_err(|e| at(e.pos, &e.message))?;
        let problem = docs.iter().find_map(|d| d.problems.first());
        if let Some(e) = problem {
            return Err(at(e.pos, &e.message));
        }
        let docs = docs.into_iter().map(|d| d.root.to_json());
        Ok(docs.filter(|v| !v.is_null()).collect())
    };
    let mut cache = CACHE.get_or_init(Default::default).lock();
    let cache = cache
        .as_mut()
        .map_err(|_| anyhow::anyhow!("template cache poisoned"))?;
    let key = (t.text.as_ptr() as usize, t.text.len());
    cache
        .entry(key)
        .or_insert_with(parse)
        .clone()
        .map_err(anyhow::Error::msg)
}

/// Render a template into its documents (JSON objects ready to apply).
pub fn render(t: &Template, p: &ThorParams) -> Result<Vec<Value>> {
    let values = p
        .values()
        .with_context(|| format!("rendering {}", t.path))?;
    let mut docs = parsed(t)?;
    for v in &mut docs {
        expand_workers(v, p.num_workers_per_pod);
        substitute(v, &values);
        embed(v);
    }
    Ok(docs)
}

/// The pod templates of a rendered Job or JobSet, to edit in place.
pub fn pod_templates_mut(doc: &mut Value) -> Vec<&mut Value> {
    match doc["kind"].as_str() {
        Some("Job") => vec![&mut doc["spec"]["template"]],
        Some("JobSet") => match doc["spec"]["replicatedJobs"].as_array_mut() {
            Some(rjs) => rjs
                .iter_mut()
                .map(|rj| &mut rj["template"]["spec"]["template"])
                .collect(),
            None => vec![],
        },
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "thor-6d9f7c8b5d-x2v9k-1";

    pub fn params(workers: u32, per_pod: u32) -> ThorParams {
        ThorParams {
            thor_name: "thor".into(),
            job_name: JOB.into(),
            num_workers: workers,
            num_workers_per_pod: per_pod,
            job_version: "10.8.0".into(),
            pod_runtime: "30s".into(),
            namespace: "thor-test".into(),
            dns_hostnames: false,
        }
    }

    fn all(ts: &[Template], p: &ThorParams) -> Vec<Value> {
        ts.iter().flat_map(|t| render(t, p).unwrap()).collect()
    }

    #[test]
    fn baseline_repeats_the_worker_container() {
        let p = params(8, 2);
        let docs = all(&templates(Mode::Baseline), &p);
        let job = &docs[3];
        let cs = &job["spec"]["template"]["spec"]["containers"];
        let w = |n: u32| Value::from(format!("thorworker-job-{JOB}-{n}"));
        let names: Vec<&Value> = cs.as_array().unwrap().iter().map(|c| &c["name"]).collect();
        assert_eq!(names, [&w(1), &w(2), &"postrun".into()]);
        let args = cs[1]["args"][0].as_str().unwrap();
        assert!(
            args.contains(&format!("-c {} ", w(2).as_str().unwrap())),
            "{args}"
        );
        assert!(args.ends_with("\"--master=10.244.1.10:20000\" --slaveport=20200"));
        assert_eq!(cs[1]["volumeMounts"][0]["subPath"], w(2));
        // The sidecar watches both workers: <container> <process> pairs.
        let watch = cs[2]["command"].as_array().unwrap();
        assert_eq!(
            watch[4..],
            [w(1), "thorslave_lcr".into(), w(2), "thorslave_lcr".into()]
        );
    }

    #[test]
    fn jobset_dns_hostnames_decide_the_master_address() {
        for dns in [false, true] {
            let p = ThorParams {
                dns_hostnames: dns,
                ..params(4, 1)
            };
            let js = &all(&templates(Mode::Jobset), &p)[2];
            assert_eq!(js["spec"]["network"]["enableDNSHostnames"], dns);
            let workers = &js["spec"]["replicatedJobs"][1]["template"]["spec"];
            assert_eq!(
                (&workers["parallelism"], &workers["completions"]),
                (&4.into(), &4.into())
            );
            let args = workers["template"]["spec"]["containers"][0]["args"][0].to_string();
            let host = if dns {
                format!("{JOB}-manager-0-0.{JOB}")
            } else {
                MANAGER_IP.into()
            };
            assert!(args.contains(&format!("--master={host}:20000")), "{args}");
        }
    }

    #[test]
    fn gang_templates_group_every_pod() {
        let p = params(4, 2);
        for minor in GANG_MINORS {
            let docs = all(&templates_for(Mode::JobsetGang, *minor), &p);
            assert_eq!(
                (&docs[2]["kind"], &docs[4]["kind"]),
                (&"Workload".into(), &"JobSet".into())
            );
            assert_eq!(docs[3]["spec"]["schedulingPolicy"]["gang"]["minCount"], 3);
        }
    }

    #[test]
    fn setup_configmaps_embed_the_job_templates() {
        let docs = all(&setup(), &params(2, 1));
        let cm = docs.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
        let data: Vec<(&String, &str)> = cm["data"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k, v.as_str().unwrap()))
            .collect();
        assert!(data[0].0 == "thor.yaml" && data[0].1.contains("numWorkers: 2\n"));
        let (key, job) = data[1];
        assert_eq!(key, "thormanager-job.yaml");
        assert!(
            job.starts_with("apiVersion: batch/v1\n") && !job.contains('#'),
            "{job}"
        );
        assert!(job.contains("name: thormanager-job-_HPCC_JOBNAME_"));
        // The chart's default render holds 14,335 bytes of data.
        let size: usize = data.iter().map(|(_, v)| v.len()).sum();
        assert!((11_000..18_000).contains(&size), "{size}");
    }

    #[test]
    fn workers_per_pod_must_divide() {
        for t in templates(Mode::Baseline) {
            assert!(render(&t, &params(10, 3)).is_err());
            assert!(render(&t, &params(0, 1)).is_err());
        }
    }
}
