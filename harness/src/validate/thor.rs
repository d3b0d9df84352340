//! Thor templates: rendered over a matrix of numWorkers × numWorkersPerPod
//! × maxGraphs in each mode, each rendering decoded and checked against
//! the invariants of its mode; the Thor agent's RBAC checked against what
//! its driver uses; and the static model of what an instance creates.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::k8s::names;
use crate::schema::Finding;
use crate::schema::k8s;
use crate::schema::typed::Ctx;
use crate::workload::thor::{self, Mode, Template, ThorParams};
use crate::yaml::{self, Seg};

/// numWorkers values rendered (1..1024, the powers of two and awkward ones).
pub const WORKERS: &[u32] = &[
    1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024,
];
pub const PER_POD: &[u32] = &[1, 2, 4, 8];
pub const MAX_GRAPHS: &[u32] = &[1, 2, 4, 8];
/// A deployment pod's suffix is "<10 chars>-<5 chars>".
pub const AGENT_POD_SUFFIX: &str = "6d9f7c8b5d-x2v9k";
pub const THOR_NAME: &str = "thor";

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

pub fn params(workers: u32, per_pod: u32, instance: u32, thor_name: &str) -> ThorParams {
    ThorParams {
        thor_name: thor_name.to_string(),
        job_name: format!("{thor_name}-{AGENT_POD_SUFFIX}-{instance}"),
        num_workers: workers,
        num_workers_per_pod: per_pod,
        job_version: "10.8.0".into(),
        pod_runtime: "5s".into(),
        namespace: "thor".into(),
    }
}

#[derive(Debug, Default)]
pub struct ThorReport {
    pub findings: Vec<Finding>,
    pub renderings: usize,
    pub documents: usize,
}

fn template_root(t: &Template) -> Result<yaml::Node, Finding> {
    let docs = yaml::parse(t.text).map_err(|e| Finding {
        file: t.path.into(),
        line: e.pos.line,
        column: e.pos.column,
        path: "(document)".into(),
        message: e.message,
    })?;
    // Findings point into the first document with the same index as the
    // rendered one; keep them all.
    Ok(yaml::Node::Seq(
        docs.into_iter().map(|d| d.root).collect(),
        yaml::Pos { line: 1, column: 1 },
    ))
}

fn containers(pod_spec: &Value) -> Vec<&str> {
    pod_spec["containers"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default()
}

/// Invariants of one rendered instance of `mode`.
fn check_rendering(
    mode: Mode,
    p: &ThorParams,
    t: &Template,
    docs: &[Value],
    root: &yaml::Node,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let worker_pods = u64::from(p.num_workers / p.num_workers_per_pod);
    let label = format!(
        "numWorkers={} numWorkersPerPod={} job {:?}",
        p.num_workers, p.num_workers_per_pod, p.job_name
    );
    for (i, doc) in docs.iter().enumerate() {
        let ctx = Ctx {
            file: t.path,
            root,
            base: vec![Seg::Index(i)],
        };
        let mut f = k8s::check_document(&ctx, doc);
        for x in &mut f {
            x.message = format!("{} [{label}]", x.message);
        }
        out.extend(f);
        let fail = |path: &[Seg], msg: String| {
            let mut x = ctx.finding(path, msg);
            x.message = format!("{} [{label}]", x.message);
            x
        };
        let kind = doc["kind"].as_str().unwrap_or_default();
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        match (mode, kind) {
            (Mode::Baseline, "Job") if name.starts_with("thorworker-") => {
                let spec = &doc["spec"];
                if spec["parallelism"].as_u64() != Some(worker_pods) {
                    out.push(fail(&[key("spec"), key("parallelism")], format!("worker Job parallelism is {}, numWorkers/numWorkersPerPod is {worker_pods}", spec["parallelism"])));
                }
                if !spec["completions"].is_null() || !spec["completionMode"].is_null() {
                    out.push(fail(
                        &[key("spec")],
                        "HPCC's worker Job has no completions and is NonIndexed".into(),
                    ));
                }
                if spec["backoffLimit"] != 0 || spec["ttlSecondsAfterFinished"] != 100 {
                    out.push(fail(
                        &[key("spec")],
                        "worker Job needs backoffLimit 0 and ttlSecondsAfterFinished 100".into(),
                    ));
                }
                let cs = containers(&spec["template"]["spec"]);
                if cs.len() as u32 != p.num_workers_per_pod + 1 {
                    out.push(fail(&[key("spec"), key("template"), key("spec"), key("containers")], format!("a worker pod has {} containers, expected numWorkersPerPod + sidecar = {}", cs.len(), p.num_workers_per_pod + 1)));
                }
            }
            (Mode::Baseline, "Job") => {
                let cs = containers(&doc["spec"]["template"]["spec"]);
                if cs != ["manager", "postrun"] {
                    out.push(fail(
                        &[key("spec"), key("template"), key("spec"), key("containers")],
                        format!(
                            "the manager pod has containers {cs:?}, expected manager + postrun"
                        ),
                    ));
                }
            }
            (Mode::JobsetGang, "Workload" | "PodGroup") => {
                let policy = if kind == "Workload" {
                    &doc["spec"]["podGroupTemplates"][0]["schedulingPolicy"]
                } else {
                    &doc["spec"]["schedulingPolicy"]
                };
                if policy["gang"]["minCount"].as_u64() != Some(1 + worker_pods) {
                    out.push(fail(
                        &[key("spec")],
                        format!(
                            "gang minCount is {}, the instance has 1 + {worker_pods} pods",
                            policy["gang"]["minCount"]
                        ),
                    ));
                }
                if kind == "PodGroup" {
                    let group = name.to_string();
                    let js = docs.iter().find(|d| d["kind"] == "JobSet");
                    let grouped = js.is_some_and(|js| {
                        js["spec"]["replicatedJobs"].as_array().into_iter().flatten().all(|rj| {
                            rj["template"]["spec"]["template"]["spec"]["schedulingGroup"]["podGroupName"] == group.as_str()
                        })
                    });
                    if !grouped {
                        out.push(fail(&[key("metadata"), key("name")], format!("every pod template of the JobSet must name PodGroup {group:?} in schedulingGroup.podGroupName")));
                    }
                }
            }
            (Mode::Jobset | Mode::JobsetGang, "JobSet") => {
                let rjs = doc["spec"]["replicatedJobs"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let names_: Vec<&str> = rjs.iter().filter_map(|r| r["name"].as_str()).collect();
                if names_ != ["manager", "workers"] {
                    out.push(fail(
                        &[key("spec"), key("replicatedJobs")],
                        format!("replicatedJobs are {names_:?}, expected manager and workers"),
                    ));
                    continue;
                }
                let w = &rjs[1]["template"]["spec"];
                let wp = [
                    key("spec"),
                    key("replicatedJobs"),
                    Seg::Index(1),
                    key("template"),
                    key("spec"),
                ];
                if w["completionMode"] != "Indexed" {
                    out.push(fail(&wp, "the workers Job must be Indexed".into()));
                }
                if w["parallelism"].as_u64() != Some(worker_pods)
                    || w["completions"].as_u64() != Some(worker_pods)
                {
                    out.push(fail(&wp, format!("workers parallelism {} and completions {} must both be numWorkers/numWorkersPerPod = {worker_pods}", w["parallelism"], w["completions"])));
                }
                let cs = containers(&w["template"]["spec"]);
                if cs.len() as u32 != p.num_workers_per_pod + 1 {
                    out.push(fail(
                        &wp,
                        format!(
                            "a worker pod has {} containers, expected {}",
                            cs.len(),
                            p.num_workers_per_pod + 1
                        ),
                    ));
                }
                let reads_index = w["template"]["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("worker")))
                    .all(|c| c.to_string().contains("JOB_COMPLETION_INDEX"));
                if !reads_index {
                    out.push(fail(
                        &wp,
                        "every worker container must read its rank from JOB_COMPLETION_INDEX"
                            .into(),
                    ));
                }
                let m = &rjs[0]["template"]["spec"];
                if m["parallelism"].as_u64().unwrap_or(1) != 1
                    || rjs[0]["replicas"].as_u64().unwrap_or(1) != 1
                {
                    out.push(fail(
                        &[key("spec"), key("replicatedJobs"), Seg::Index(0)],
                        "the manager is exactly one pod".into(),
                    ));
                }
                let sp = &doc["spec"]["successPolicy"];
                if sp["operator"] != "Any"
                    || sp["targetReplicatedJobs"] != serde_json::json!(["manager"])
                {
                    out.push(fail(&[key("spec"), key("successPolicy")], "the JobSet must succeed when the manager succeeds (operator Any, targets [manager])".into()));
                }
                // Indexed pods get hostname <job>-<index>: a DNS label.
                let job = format!("{name}-workers-0");
                let host = format!("{job}-{}", worker_pods.saturating_sub(1));
                if let Err(e) = names::dns1123_label(&host) {
                    out.push(fail(
                        &[key("metadata"), key("name")],
                        format!("worker pod hostname {host:?} would be invalid: {e}"),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// The Role of `mode` must grant exactly what the driver uses.
pub fn check_rbac(mode: Mode) -> Vec<Finding> {
    check_rbac_template(mode, &thor::rbac(mode))
}

pub fn check_rbac_template(mode: Mode, t: &Template) -> Vec<Finding> {
    let t = *t;
    let root = match template_root(&t) {
        Ok(r) => r,
        Err(f) => return vec![f],
    };
    let p = params(2, 1, 1, THOR_NAME);
    let docs = match thor::render(&t, &p) {
        Ok(d) => d,
        Err(e) => {
            return vec![Finding {
                file: t.path.into(),
                line: 1,
                column: 1,
                path: "(document)".into(),
                message: format!("{e:#}"),
            }];
        }
    };
    let mut out = Vec::new();
    let mut granted = BTreeSet::new();
    let mut role_at = None;
    for (i, doc) in docs.iter().enumerate() {
        let ctx = Ctx {
            file: t.path,
            root: &root,
            base: vec![Seg::Index(i)],
        };
        out.extend(k8s::check_document(&ctx, doc));
        if doc["kind"] != "Role" {
            continue;
        }
        role_at = Some(i);
        for rule in doc["rules"].as_array().into_iter().flatten() {
            for g in rule["apiGroups"].as_array().into_iter().flatten() {
                for r in rule["resources"].as_array().into_iter().flatten() {
                    for v in rule["verbs"].as_array().into_iter().flatten() {
                        granted.insert((
                            g.as_str().unwrap_or("?").to_string(),
                            r.as_str().unwrap_or("?").to_string(),
                            v.as_str().unwrap_or("?").to_string(),
                        ));
                    }
                }
            }
        }
    }
    let Some(i) = role_at else {
        return vec![Finding {
            file: t.path.into(),
            line: 1,
            column: 1,
            path: "(document)".into(),
            message: format!("no Role for {} mode", mode.name()),
        }];
    };
    let used: BTreeSet<(String, String, String)> = thor::api_usage(mode)
        .iter()
        .flat_map(|u| {
            u.verbs
                .iter()
                .map(move |v| (u.group.to_string(), u.resource.to_string(), v.to_string()))
        })
        .collect();
    let ctx = Ctx {
        file: t.path,
        root: &root,
        base: vec![Seg::Index(i)],
    };
    let show = |g: &str, r: &str| {
        if g.is_empty() {
            r.to_string()
        } else {
            format!("{r}.{g}")
        }
    };
    for (g, r, v) in used.difference(&granted) {
        out.push(ctx.finding(
            &[key("rules")],
            format!(
                "the {} driver uses {v} on {} but the Role does not grant it",
                mode.name(),
                show(g, r)
            ),
        ));
    }
    for (g, r, v) in granted.difference(&used) {
        out.push(ctx.finding(
            &[key("rules")],
            format!(
                "the Role grants {v} on {}, which the {} driver never uses",
                show(g, r),
                mode.name()
            ),
        ));
    }
    out
}

/// Render every template of every mode over the matrix and check it.
pub fn check_templates() -> ThorReport {
    let mut all: Vec<(Mode, Template)> = [Mode::Baseline, Mode::Jobset]
        .into_iter()
        .flat_map(|m| thor::templates(m).into_iter().map(move |t| (m, t)))
        .collect();
    for minor in thor::template::GANG_MINORS {
        all.extend(
            thor::templates_for(Mode::JobsetGang, *minor)
                .into_iter()
                .map(|t| (Mode::JobsetGang, t)),
        );
    }
    let mut report = check_template_set(&all);
    for mode in Mode::ALL {
        report.findings.extend(check_rbac(mode));
    }
    report
}

/// Render and check the given templates over the matrix.
pub fn check_template_set(set: &[(Mode, Template)]) -> ThorReport {
    let mut report = ThorReport::default();
    for &(mode, t) in set {
        {
            let root = match template_root(&t) {
                Ok(r) => r,
                Err(f) => {
                    report.findings.push(f);
                    continue;
                }
            };
            let mut seen = BTreeSet::new();
            for &w in WORKERS {
                for &pp in PER_POD.iter().filter(|&&pp| w % pp == 0) {
                    for &g in MAX_GRAPHS {
                        let p = params(w, pp, g, THOR_NAME);
                        match thor::render(&t, &p) {
                            Ok(docs) => {
                                report.renderings += 1;
                                report.documents += docs.len();
                                for f in check_rendering(mode, &p, &t, &docs, &root) {
                                    // The same problem at every size is one finding.
                                    let dedup = (
                                        f.line,
                                        f.column,
                                        f.message
                                            .split(" [")
                                            .next()
                                            .unwrap_or_default()
                                            .to_string(),
                                    );
                                    if seen.insert(dedup) {
                                        report.findings.push(f);
                                    }
                                }
                            }
                            Err(e) => report.findings.push(Finding {
                                file: t.path.into(),
                                line: 1,
                                column: 1,
                                path: "(document)".into(),
                                message: format!("{e:#}"),
                            }),
                        }
                    }
                }
            }
        }
    }
    report
}

/// The longest Thor cluster name whose instances still render valid names
/// in `mode` (at numWorkers 1024, instance 8).
pub fn longest_thor_name(mode: Mode) -> usize {
    (1..=63usize)
        .take_while(|&n| {
            let p = params(1024, 1, 8, &"t".repeat(n));
            thor::templates(mode).iter().all(|t| {
                thor::render(t, &p).is_ok_and(|docs| {
                    docs.iter().all(|d| {
                        let root = yaml::Node::Null(yaml::Pos::default());
                        let ctx = Ctx {
                            file: t.path,
                            root: &root,
                            base: vec![],
                        };
                        let kind = d["kind"].as_str().unwrap_or_default();
                        let mut f = k8s::check_metadata(&ctx, d, kind);
                        if let Ok(js) =
                            serde_json::from_value::<crate::schema::models::JobSet>(d.clone())
                        {
                            f.extend(k8s::check_jobset(&ctx, &js));
                            let host =
                                format!("{}-workers-0-1023", js.metadata.name.unwrap_or_default());
                            if names::dns1123_label(&host).is_err() {
                                return false;
                            }
                        }
                        f.is_empty()
                    })
                })
            })
        })
        .last()
        .unwrap_or(0)
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StaticRow {
    pub mode: &'static str,
    pub num_workers: u32,
    pub client_objects: u32,
    pub controller_objects: u32,
    pub pods: u32,
    pub containers: u32,
}

/// Objects, pods and containers per Thor instance, by mode and size
/// (numWorkersPerPod 1, HPCC's default), computed from the templates.
pub fn static_model() -> Vec<StaticRow> {
    let mut rows = Vec::new();
    for &w in &[1u32, 2, 8, 32, 128, 512, 1024] {
        for mode in Mode::ALL {
            if let Ok(s) = thor::template::shape(mode, &params(w, 1, 1, THOR_NAME)) {
                rows.push(StaticRow {
                    mode: mode.name(),
                    num_workers: w,
                    client_objects: s.client_objects.values().sum(),
                    controller_objects: s.controller_objects.values().sum(),
                    pods: s.pods,
                    containers: s.containers,
                });
            }
        }
    }
    rows
}
