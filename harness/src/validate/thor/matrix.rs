//! The template matrix: every instance template rendered over
//! numWorkers × numWorkersPerPod × maxGraphs (JobSet modes with and
//! without DNS hostnames), each rendering checked against the chart's
//! shapes and its mode's rules, each instance as a whole; then the setup,
//! compile and RBAC templates (`check_templates`); and the longest Thor
//! name whose instances still render valid names.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::k8s::names;
use crate::schema::Finding;
use crate::schema::k8s;
use crate::schema::typed::Ctx;
use crate::validate::thor::setup::{check_eclccserver_rbac, check_rbac, check_setup};
use crate::validate::thor::shape::{THOR_NAME, ThorReport, params};
use crate::validate::thor::shape::{
    at, check_pod_basics, ctx, expect, leftover, names_of, pod_templates, selects, str_of,
    template_root, thor_labels, thor_pod, whole_file,
};
use crate::workload::thor::template as tpl;
use crate::workload::thor::{self, Mode, Template, ThorParams};
use crate::yaml;

/// numWorkers values rendered (1..1024, the powers of two and awkward ones).
pub const WORKERS: &[u32] = &[
    1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 100, 128, 256, 500, 512, 1000, 1024,
];
pub const PER_POD: &[u32] = &[1, 2, 4, 8];
/// The instance number rendered into the agent's Job name
/// (`<thor>-<agent>-<n>`, n up to maxGraphs). Only the longest of the
/// chart's maxGraphs values we run (1, 2, 4, 8) is rendered: n appears in
/// names and name-derived labels alone, never in a count, a selector's
/// shape or a resource, and every n of one digit gives names of one
/// length and one character class — so each check (typed decoding, the
/// chart's shapes, parallelism and minCount from numWorkers, DNS-1123 and
/// length limits, an instance's policies selecting its pods) reaches the
/// same verdict for 1, 2 and 4 as for 8. Rendering all four cost 4× the
/// time for no check more (validate 0.9 s → within 0.3 s, release).
/// [`longest_thor_name`] checks the longest names on its own.
pub const INSTANCE: u32 = 8;

/// Invariants of one rendered instance template of `mode`; `deep`: also
/// its shape (each document decoded with its typed model, each pod
/// template against the chart's), needed once per numWorkersPerPod and
/// DNS choice: the other sizes change values, not shapes.
fn check_rendering(
    mode: Mode,
    p: &ThorParams,
    t: &Template,
    docs: &[Value],
    root: &yaml::Node,
    deep: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let worker_pods = u64::from(p.num_workers / p.num_workers_per_pod);
    let (w, pp, job, dns) = (
        p.num_workers,
        p.num_workers_per_pod,
        &p.job_name,
        p.dns_hostnames,
    );
    let label = format!("numWorkers={w} numWorkersPerPod={pp} job {job:?} dnsHostnames={dns}");
    for (i, doc) in docs.iter().enumerate() {
        let ctx = ctx(t, root, i);
        let mut f = match deep {
            true => k8s::check_document(&ctx, doc),
            false => k8s::check_metadata(&ctx, doc, str_of(&doc["kind"])),
        };
        let (kind, spec) = (str_of(&doc["kind"]), &doc["spec"]);
        let name = str_of(&doc["metadata"]["name"]);
        if deep {
            f.extend(check_pods(&ctx, p, doc, kind));
        }
        let mut fail = |path: &str, msg: String| f.push(ctx.finding(&at(path), msg));
        if let Some(s) = leftover(doc) {
            fail("", format!("a placeholder is left after rendering: {s:?}"));
        }
        let job_ok = spec["backoffLimit"] == 0 && spec["ttlSecondsAfterFinished"] == 100;
        if kind == "Job" && !(doc["metadata"]["labels"].is_null() && job_ok) {
            fail(
                "spec",
                "HPCC's Jobs carry no labels, backoffLimit 0, ttlSecondsAfterFinished 100".into(),
            );
        }
        match (mode, kind) {
            (Mode::Baseline, "Job") if name.starts_with("thorworker-") => {
                let par = &spec["parallelism"];
                if par.as_u64() != Some(worker_pods) {
                    fail(
                        "spec.parallelism",
                        format!(
                            "worker Job parallelism is {par}, numWorkers/numWorkersPerPod is {worker_pods}"
                        ),
                    );
                }
                if !spec["completions"].is_null() || !spec["completionMode"].is_null() {
                    fail(
                        "spec",
                        "HPCC's worker Job has no completions and is NonIndexed".into(),
                    );
                }
            }
            (Mode::JobsetGang, "Workload" | "PodGroup") => {
                let policy = match kind {
                    "Workload" => &spec["podGroupTemplates"][0]["schedulingPolicy"],
                    _ => &spec["schedulingPolicy"],
                };
                let min = &policy["gang"]["minCount"];
                if min.as_u64() != Some(1 + worker_pods) {
                    fail(
                        "spec",
                        format!("gang minCount is {min}, the instance has 1 + {worker_pods} pods"),
                    );
                }
                let grouped = |js: &Value| {
                    let group =
                        |pod: &Value| pod["spec"]["schedulingGroup"]["podGroupName"] == name;
                    pod_templates(js).iter().all(|(_, pod)| group(pod))
                };
                if kind == "PodGroup"
                    && !docs
                        .iter()
                        .find(|d| d["kind"] == "JobSet")
                        .is_some_and(grouped)
                {
                    fail(
                        "metadata.name",
                        format!(
                            "every pod template of the JobSet must name PodGroup {name:?} in schedulingGroup.podGroupName"
                        ),
                    );
                }
            }
            (Mode::Jobset | Mode::JobsetGang, "JobSet") => {
                check_jobset(p, doc, worker_pods, &mut fail)
            }
            _ => {}
        }
        for x in &mut f {
            x.message = format!("{} [{label}]", x.message);
        }
        out.extend(f);
    }
    out
}

/// Each pod template of `doc` (a `kind`): the basics every pod has, and
/// the chart's labels and Thor's pod spec for its component.
fn check_pods(ctx: &Ctx<'_>, p: &ThorParams, doc: &Value, kind: &str) -> Vec<Finding> {
    let mut f = Vec::new();
    for (path, pod) in pod_templates(doc) {
        f.extend(check_pod_basics(ctx, &path, pod));
        let component = str_of(&pod["metadata"]["labels"]["component"]);
        let labels = thor_labels(p, component);
        let mut problems = vec![];
        if !matches!(component, "thormanager" | "thorworker") || pod["metadata"]["labels"] != labels
        {
            problems.push((
                at("metadata.labels"),
                format!("carries the chart's 13 labels, {labels}"),
            ));
        }
        problems.extend(expect(
            pod,
            &thor_pod(p, component, kind == "JobSet"),
            &mut vec![],
        ));
        for (rel, msg) in problems.into_iter().take(1) {
            f.push(ctx.finding(
                &[path.clone(), rel].concat(),
                format!("the {component} pod {msg}"),
            ));
        }
    }
    f
}

fn check_jobset(
    p: &ThorParams,
    doc: &Value,
    worker_pods: u64,
    fail: &mut impl FnMut(&str, String),
) {
    let name = str_of(&doc["metadata"]["name"]);
    let rjs = &doc["spec"]["replicatedJobs"];
    let rj_names = names_of(rjs);
    if rj_names != ["manager", "workers"] {
        return fail(
            "spec.replicatedJobs",
            format!("replicatedJobs are {rj_names:?}, expected manager and workers"),
        );
    }
    let w = &rjs[1]["template"]["spec"];
    let wp = "spec.replicatedJobs.1.template.spec";
    if w["completionMode"] != "Indexed" {
        fail(wp, "the workers Job must be Indexed".into());
    }
    let (par, comp) = (&w["parallelism"], &w["completions"]);
    if par.as_u64() != Some(worker_pods) || comp.as_u64() != Some(worker_pods) {
        fail(
            wp,
            format!(
                "workers parallelism {par} and completions {comp} must both be numWorkers/numWorkersPerPod = {worker_pods}"
            ),
        );
    }
    let cs = w["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mains = || cs.iter().filter(|c| c["name"] != "postrun");
    if !mains().all(|c| c["args"].to_string().contains("$(JOB_COMPLETION_INDEX)")) {
        fail(
            wp,
            "every worker container must read its rank from JOB_COMPLETION_INDEX".into(),
        );
    }
    let master = format!("\"--master={}\"", p.master());
    let dns = &doc["spec"]["network"]["enableDNSHostnames"];
    if *dns != p.dns_hostnames || !mains().all(|c| str_of(&c["args"][0]).contains(&master)) {
        fail(
            "spec.network",
            format!("with enableDNSHostnames {dns}, every worker gets {master}"),
        );
    }
    let (m, replicas) = (&rjs[0]["template"]["spec"], &rjs[0]["replicas"]);
    if m["parallelism"].as_u64().unwrap_or(1) != 1 || replicas.as_u64().unwrap_or(1) != 1 {
        fail(
            "spec.replicatedJobs",
            "the manager is exactly one pod".into(),
        );
    }
    let sp = &doc["spec"]["successPolicy"];
    if sp["operator"] != "Any" || sp["targetReplicatedJobs"] != json!(["manager"]) {
        fail(
            "spec.successPolicy",
            "the JobSet must succeed when the manager succeeds (operator Any, targets [manager])"
                .into(),
        );
    }
    // Indexed pods get hostname <job>-<index>: a DNS label.
    let host = format!("{name}-workers-0-{}", worker_pods.saturating_sub(1));
    if let Err(e) = names::dns1123_label(&host) {
        fail(
            "metadata.name",
            format!("worker pod hostname {host:?} would be invalid: {e}"),
        );
    }
}

fn master_word(w: &str) -> &str {
    if w.starts_with("\"--master=") {
        "--master"
    } else {
        w
    }
}

/// A pod template as baseline's, to compare: the JobSet's additions
/// (schedulingGroup, the rank, the master's DNS name) taken out.
fn comparable(pod: &Value) -> Value {
    let mut pod = pod.clone();
    if let Some(s) = pod["spec"].as_object_mut() {
        s.remove("schedulingGroup");
    }
    for c in pod["spec"]["containers"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let Some(arg) = c["args"][0].as_str() else {
            continue;
        };
        let words = arg.split(' ').filter(|w| !w.starts_with("\"--rank="));
        let words: Vec<&str> = words.map(master_word).collect();
        c["args"] = json!([words.join(" ")]);
    }
    pod
}

/// A rendered document of an instance: its template, that template's
/// parsed root and the document's index.
type Doc<'a> = (Template, &'a yaml::Node, usize, Value);

/// The instance as a whole: each NetworkPolicy selects exactly its
/// component's pods and lets every pod of the instance in and out (the
/// setup's default-deny blocks all else), some policy selects every pod,
/// JobSet modes' policies are baseline's (`base`: baseline's documents at
/// the same parameters); `deep`: also JobSet pod templates are baseline's.
fn check_instance(base: &[Value], docs: &[Doc<'_>], deep: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    fn labels(pod: &Value) -> &Value {
        &pod["metadata"]["labels"]
    }
    let pods: Vec<&Value> = docs
        .iter()
        .flat_map(|d| pod_templates(&d.3))
        .map(|(_, p)| labels(p))
        .collect();
    let nps: Vec<&Value> = docs
        .iter()
        .map(|d| &d.3)
        .filter(|d| d["kind"] == "NetworkPolicy")
        .collect();
    for (t, root, i, doc) in docs {
        let ctx = ctx(t, root, *i);
        let mut fail = |path: &str, msg: String| out.push(ctx.finding(&at(path), msg));
        let (name, spec) = (str_of(&doc["metadata"]["name"]), &doc["spec"]);
        if doc["kind"] == "NetworkPolicy" {
            let component = name.split('-').next().unwrap_or_default();
            let mine = |l: &Value| l["component"] == component;
            if pods
                .iter()
                .any(|l| selects(&spec["podSelector"], l) != mine(l))
            {
                fail(
                    "spec.podSelector",
                    format!("{name} must select exactly the instance's {component} pods"),
                );
            }
            for (dir, side) in [("ingress", "from"), ("egress", "to")] {
                let rules = spec[dir].as_array().into_iter().flatten();
                let peers: Vec<&Value> = rules
                    .flat_map(|r| r[side].as_array().into_iter().flatten())
                    .collect();
                if !pods
                    .iter()
                    .all(|l| peers.iter().any(|s| selects(&s["podSelector"], l)))
                {
                    fail(
                        &format!("spec.{dir}"),
                        format!("{name}'s {dir} must cover every pod of the instance"),
                    );
                }
            }
            if base
                .iter()
                .any(|b| b["metadata"]["name"] == name && b["spec"] != *spec)
            {
                fail("spec", format!("{name} differs from baseline's"));
            }
        }
        for (path, pod) in pod_templates(doc) {
            let component = &labels(pod)["component"];
            let twin = |b: &&Value| &labels(b)["component"] == component;
            let mut twins = base
                .iter()
                .flat_map(pod_templates)
                .map(|(_, b)| b)
                .filter(twin);
            if deep && doc["kind"] == "JobSet" && twins.any(|b| comparable(b) != comparable(pod)) {
                let msg = format!("the {} pod template is not baseline's", str_of(component));
                out.push(ctx.finding(&path, msg));
            }
            let selected = |np: &&Value| selects(&np["spec"]["podSelector"], labels(pod));
            if !nps.iter().any(selected) {
                out.push(ctx.finding(&path, "no NetworkPolicy of the instance selects this pod: the chart's default-deny would cut it off"));
            }
        }
    }
    out
}

/// Render every template of every mode over the matrix and check it, then
/// the setup, compile and RBAC templates.
pub fn check_templates() -> ThorReport {
    let mut all: Vec<(Mode, Template)> = Vec::new();
    for (mode, minor) in [(Mode::Baseline, 37), (Mode::Jobset, 37)]
        .into_iter()
        .chain(tpl::GANG_MINORS.iter().map(|m| (Mode::JobsetGang, *m)))
    {
        all.extend(
            thor::templates_for(mode, minor)
                .into_iter()
                .map(|t| (mode, t)),
        );
    }
    let mut report = check_template_set(&all);
    let setup = check_setup();
    report.findings.extend(setup.findings);
    report.renderings += setup.renderings;
    report.documents += setup.documents;
    for mode in Mode::ALL {
        report.findings.extend(check_rbac(mode));
    }
    report
        .findings
        .extend(check_eclccserver_rbac(&tpl::eclccserver_rbac()));
    report
}

/// Render and check the given templates over the matrix, each rendering
/// on its own and each run of a mode's templates as one instance (a
/// template's second appearance starts the next). JobSet modes are
/// rendered with and without DNS hostnames.
pub fn check_template_set(set: &[(Mode, Template)]) -> ThorReport {
    let mut report = ThorReport::default();
    let mut roots = Vec::new();
    for (mode, t) in set {
        match template_root(t) {
            Ok(r) => roots.push((*mode, *t, r)),
            Err(f) => report.findings.push(f),
        }
    }
    let (mut seen, mut decoded, mut compared) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let mut keep = |report: &mut ThorReport, fs: Vec<Finding>| {
        // The same problem at every size is one finding.
        let first = |f: &Finding| f.message.split(" [").next().unwrap_or_default().to_string();
        let new = fs
            .into_iter()
            .filter(|f| seen.insert((f.file.clone(), f.line, f.column, first(f))));
        report.findings.extend(new);
    };
    let sizes = WORKERS
        .iter()
        .flat_map(|&w| PER_POD.iter().map(move |&pp| (w, pp)));
    let sizes = sizes.filter(|(w, pp)| w % pp == 0);
    for (w, pp) in sizes {
        // Baseline's documents, which the JobSet modes' must match.
        let p = params(w, pp, INSTANCE, THOR_NAME);
        let base = thor::templates(Mode::Baseline).into_iter();
        let base: Vec<Value> = base
            .filter_map(|t| thor::render(&t, &p).ok())
            .flatten()
            .collect();
        for dns in [false, true] {
            let p = ThorParams {
                dns_hostnames: dns,
                ..p.clone()
            };
            let mut instances: Vec<(Mode, Vec<Doc<'_>>)> = Vec::new();
            for (mode, t, root) in roots
                .iter()
                .filter(|(m, _, _)| !dns || *m != Mode::Baseline)
            {
                let docs = match thor::render(t, &p) {
                    Ok(docs) => docs,
                    Err(e) => {
                        keep(&mut report, vec![whole_file(t, format!("{e:#}"))]);
                        continue;
                    }
                };
                report.renderings += 1;
                report.documents += docs.len();
                let deep = decoded.insert((t.path, pp, dns));
                keep(
                    &mut report,
                    check_rendering(*mode, &p, t, &docs, root, deep),
                );
                // A template's second appearance starts the next instance.
                let fresh = |ds: &Vec<Doc<'_>>| !ds.iter().any(|d| d.0.path == t.path);
                if !instances
                    .last()
                    .is_some_and(|(m, ds)| m == mode && fresh(ds))
                {
                    instances.push((*mode, Vec::new()));
                }
                if let Some((_, ds)) = instances.last_mut() {
                    ds.extend(docs.into_iter().enumerate().map(|(i, d)| (*t, root, i, d)));
                }
            }
            for (mode, docs) in instances {
                let deep = compared.insert((mode, pp, dns));
                keep(&mut report, check_instance(&base, &docs, deep));
            }
        }
    }
    report
}

/// How many problems the names of a rendering have: object names and
/// labels, pod template labels, container names, JobSet pod hostnames.
fn name_problems(t: &Template, d: &Value) -> usize {
    let root = yaml::Node::Null(yaml::Pos::default());
    let ctx = Ctx {
        file: t.path,
        root: &root,
        base: vec![],
    };
    let mut n = k8s::check_metadata(&ctx, d, str_of(&d["kind"])).len();
    n += pod_templates(d)
        .iter()
        .map(|(path, pod)| check_pod_basics(&ctx, path, pod).len())
        .sum::<usize>();
    if let Ok(js) = serde_json::from_value::<crate::schema::models::JobSet>(d.clone()) {
        n += k8s::check_jobset(&ctx, &js).len();
        let host = format!("{}-workers-0-1023", js.metadata.name.unwrap_or_default());
        n += usize::from(names::dns1123_label(&host).is_err());
    }
    n
}

/// The longest Thor cluster name whose instances still render valid names
/// in `mode` (at numWorkers 1024, instance 8).
pub fn longest_thor_name(mode: Mode) -> usize {
    let valid = |n: usize| {
        let p = params(1024, 1, 8, &"t".repeat(n));
        let ok = |t: &Template| {
            thor::render(t, &p).is_ok_and(|ds| ds.iter().all(|d| name_problems(t, d) == 0))
        };
        thor::templates(mode).iter().all(ok)
    };
    (1..=63usize).take_while(|&n| valid(n)).last().unwrap_or(0)
}
