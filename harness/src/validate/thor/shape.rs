//! The shapes the Thor templates must have, as facts of the HPCC chart
//! (10.6.x, default values: `thormanager-job.yaml`, `thorworker-job.yaml`,
//! `compile-job.yaml`), and the JSON helpers the Thor checks share: field
//! paths, pattern matching, label selectors, the pod templates of a Job or
//! JobSet. A leaf of `validate::thor`.

use serde_json::{Value, json};

use crate::k8s::names;
use crate::schema::Finding;
use crate::schema::k8s;
use crate::schema::typed::Ctx;
use crate::workload::thor::{Template, ThorParams};
use crate::yaml::{self, Seg};

/// A deployment pod's suffix is "<10 chars>-<5 chars>".
pub const AGENT_POD_SUFFIX: &str = "6d9f7c8b5d-x2v9k";
pub const THOR_NAME: &str = "thor";

pub fn params(workers: u32, per_pod: u32, instance: u32, thor_name: &str) -> ThorParams {
    ThorParams {
        thor_name: thor_name.to_string(),
        job_name: format!("{thor_name}-{AGENT_POD_SUFFIX}-{instance}"),
        num_workers: workers,
        num_workers_per_pod: per_pod,
        job_version: "10.8.0".into(),
        pod_runtime: "5s".into(),
        namespace: "thor".into(),
        dns_hostnames: false,
    }
}

#[derive(Debug, Default)]
pub struct ThorReport {
    pub findings: Vec<Finding>,
    pub renderings: usize,
    pub documents: usize,
}

/// A field path from dotted text ("spec.replicatedJobs.1.template").
pub fn at(path: &str) -> Vec<Seg> {
    let seg = |s: &str| {
        s.parse()
            .map_or_else(|_| Seg::Key(s.to_string()), Seg::Index)
    };
    path.split('.').filter(|s| !s.is_empty()).map(seg).collect()
}

pub fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The `name`s of a list of objects.
pub fn names_of(list: &Value) -> Vec<&str> {
    let items = list.as_array().into_iter().flatten();
    items.map(|c| str_of(&c["name"])).collect()
}

pub fn whole_file(t: &Template, message: String) -> Finding {
    let (file, path) = (t.path.into(), "(document)".into());
    Finding {
        file,
        line: 1,
        column: 1,
        path,
        message,
    }
}

/// A template's documents as one sequence, so that findings point into
/// the document with the rendered one's index.
pub fn template_root(t: &Template) -> Result<yaml::Node, Finding> {
    let docs = yaml::parse(t.text).map_err(|e| Finding {
        line: e.pos.line,
        column: e.pos.column,
        ..whole_file(t, e.message)
    })?;
    let roots = docs.into_iter().map(|d| d.root).collect();
    Ok(yaml::Node::Seq(roots, yaml::Pos { line: 1, column: 1 }))
}

/// Where findings on document `i` of `t` point.
pub fn ctx<'a>(t: &Template, root: &'a yaml::Node, i: usize) -> Ctx<'a> {
    let base = vec![Seg::Index(i)];
    Ctx {
        file: t.path,
        root,
        base,
    }
}

/// The pod templates of a rendered Job or JobSet, with their paths.
pub fn pod_templates(doc: &Value) -> Vec<(Vec<Seg>, &Value)> {
    let rjs = doc["spec"]["replicatedJobs"].as_array().map_or(0, Vec::len);
    match doc["kind"].as_str() {
        Some("Job") => vec![(at("spec.template"), &doc["spec"]["template"])],
        Some("JobSet") => (0..rjs)
            .map(|i| {
                let rj = &doc["spec"]["replicatedJobs"][i]["template"]["spec"];
                let path = format!("spec.replicatedJobs.{i}.template.spec.template");
                (at(&path), &rj["template"])
            })
            .collect(),
        _ => vec![],
    }
}

/// The first place where `actual` does not match the pattern `want`:
/// objects match on `want`'s keys (a null one: absent), arrays item by
/// item and of the same length, scalars exactly.
pub fn expect(actual: &Value, want: &Value, path: &mut Vec<Seg>) -> Option<(Vec<Seg>, String)> {
    let mut inner = |seg: Seg, a: &Value, w: &Value| {
        path.push(seg);
        let found = expect(a, w, path);
        path.pop();
        found
    };
    match (actual, want) {
        (Value::Object(_) | Value::Null, Value::Object(w)) => {
            let mut keys = w.iter();
            keys.find_map(|(k, wv)| inner(Seg::Key(k.clone()), &actual[k.as_str()], wv))
        }
        (Value::Array(a), Value::Array(w)) if a.len() == w.len() => {
            let mut pairs = a.iter().zip(w).enumerate();
            pairs.find_map(|(i, (av, wv))| inner(Seg::Index(i), av, wv))
        }
        _ if actual == want => None,
        (Value::Array(a), Value::Array(w)) => {
            // Lists of the wrong length: by their names, if they have some.
            let show = |v: &Value| match names_of(v).concat().is_empty() {
                true => v.to_string(),
                false => format!("{:?}", names_of(v)),
            };
            let (n, m) = (a.len(), w.len());
            let msg = format!(
                "has {n}: {}, the chart's shape has {m}: {}",
                show(actual),
                show(want)
            );
            Some((path.clone(), msg))
        }
        _ => {
            let msg = format!("is {actual}, the chart's shape has {want}");
            Some((path.clone(), msg))
        }
    }
}

/// Whether a label selector (matchLabels, matchExpressions In) selects.
pub fn selects(sel: &Value, labels: &Value) -> bool {
    let mut ml = sel["matchLabels"].as_object().into_iter().flatten();
    let mut exprs = sel["matchExpressions"].as_array().into_iter().flatten();
    let has = |e: &Value| {
        let value = &labels[str_of(&e["key"])];
        e["values"].as_array().is_some_and(|v| v.contains(value))
    };
    ml.all(|(k, v)| &labels[k] == v) && exprs.all(|e| e["operator"] == "In" && has(e))
}

/// A placeholder left after rendering (ConfigMap data excepted: it holds
/// templates for HPCC to fill).
pub fn leftover(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if s.contains("_HPCC_") || s.contains("_HARNESS_") => Some(s.clone()),
        Value::Array(items) => items.iter().find_map(leftover),
        Value::Object(m) => {
            let mut fields = m.iter().filter(|(k, _)| *k != "data");
            fields.find_map(|(_, x)| leftover(x))
        }
        _ => None,
    }
}

const SECURITY: &str = r#"{"capabilities":{"drop":["ALL"]},"allowPrivilegeEscalation":false,
  "readOnlyRootFilesystem":true,"runAsNonRoot":true,"runAsUser":10000,"runAsGroup":10001}"#;
/// Every main container's environment after MALLOC_ARENA_MAX (and the
/// workers' MY_CONTAINER_NAME): `hpcc.mergeEnvironments`,
/// `hpcc.generateImageEnv`.
const ENV: &str = "MY_JOB_NAME MY_NODE_NAME MY_POD_NAME MY_POD_NAMESPACE MY_POD_IP \
    MY_POD_SERVICE_ACCOUNT baseImageRootName baseImageVersion runtimeImageVersion";
const PRESTOP: &str =
    r#"{"preStop":{"exec":{"command":["/bin/bash","-c","k8s_postjob_clearup.sh"]}}}"#;
const WATCH: &str =
    "container_watch.sh --directory=/var/lib/HPCCSystems/debug --daliServer=mydali:7070 --isJob";
const POSTRUN_RESOURCES: &str = r#"{"requests":{"cpu":"5m"},"limits":{"memory":"30Mi"}}"#;

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_default()
}

/// A main container: `check_executes.sh` with one argument string, the
/// chart's environment, securityContext, preStop hook, no resources.
fn main_container(name: &str, arg: String, env: Vec<Value>) -> Value {
    json!({"name": name, "command": ["check_executes.sh"], "args": [arg], "env": env,
        "workingDir": "/var/lib/HPCCSystems", "imagePullPolicy": "IfNotPresent",
        "securityContext": parse(SECURITY), "resources": null, "lifecycle": parse(PRESTOP)})
}

/// The postrun sidecar watching `watched` (`<container> <process>` pairs).
fn postrun(watched: Vec<&str>) -> Value {
    let command = [WATCH.split(' ').collect::<Vec<_>>(), watched].concat();
    json!({"name": "postrun", "command": command, "securityContext": parse(SECURITY),
        "resources": parse(POSTRUN_RESOURCES), "lifecycle": null})
}

/// The chart's shape of a Thor pod template of `component`, a pattern for
/// `expect`; `rank`: JobSet workers also read their rank.
pub fn thor_pod(p: &ThorParams, component: &str, rank: bool) -> Value {
    let (job, thor, manager) = (&p.job_name, &p.thor_name, component == "thormanager");
    let process = if manager {
        "thormaster_lcr"
    } else {
        "thorslave_lcr"
    };
    let mains: Vec<String> = match manager {
        true => vec![format!("thormanager-job-{job}")],
        false => {
            let n = 1..=p.num_workers_per_pod;
            n.map(|n| format!("thorworker-job-{job}-{n}")).collect()
        }
    };
    let (mut cs, mut watched) = (Vec::new(), Vec::new());
    for (i, name) in mains.iter().enumerate() {
        // The manager's check_executes/postrun tag is the Thor's name.
        let tag = if manager { thor } else { name };
        watched.extend([tag.as_str(), process]);
        let config = format!("\"--config=/etc/config/{thor}.yaml\"");
        let mut arg = format!("-p -d /var/lib/HPCCSystems/debug -c {tag} -j -- {process} {config}");
        arg += " \"--daliServers=mydali:7070\" \"--k8sJob=true\"";
        let arenas = if manager { "2" } else { "8" };
        let mut env = vec![json!({"name": "MALLOC_ARENA_MAX", "value": arenas})];
        if !manager {
            arg += &format!(" \"--master={}\"", p.master());
            arg += if rank {
                " \"--rank=$(JOB_COMPLETION_INDEX)\""
            } else {
                ""
            };
            arg += &format!(" --slaveport={}", 20100 + 100 * i);
            env.push(json!({"name": "MY_CONTAINER_NAME", "value": name}));
        }
        env.extend(ENV.split_whitespace().map(|n| json!({"name": n})));
        cs.push(main_container(name, arg, env));
    }
    cs.push(postrun(watched));
    let claim = |plane: &str| {
        let claim = json!({"claimName": format!("hpcc-{plane}-pvc")});
        json!({"name": format!("{plane}-volume"), "persistentVolumeClaim": claim})
    };
    let own = |v: &str| json!({"name": format!("{thor}-{v}-volume")});
    let mut volumes = vec![own("temp"), own("hpcctmp"), own("configmap")];
    volumes[2]["configMap"] = json!({"name": format!("{thor}-configmap")});
    volumes.extend(["dll", "data", "mydropzone", "debug"].map(claim));
    let (sa, grace) = match manager {
        true => ("hpcc-thoragent", 60),
        false => ("hpcc-default", 600),
    };
    json!({
        "metadata": {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}},
        "spec": {"serviceAccountName": sa, "terminationGracePeriodSeconds": grace,
            "restartPolicy": "Never", "containers": cs, "volumes": volumes,
            "initContainers": null},
    })
}

/// The chart's 13 pod labels of a Thor pod of `component`.
pub fn thor_labels(p: &ThorParams, component: &str) -> Value {
    let (job, thor) = (&p.job_name, &p.thor_name);
    json!({"accessDali": "yes", "accessEsp": "yes", "accessSasha": "yes", "app": "thor",
        "component": component, "helmVersion": p.job_version, "instance": job, "job": job,
        "instanceOf": format!("{thor}-{component}-job"), "app.kubernetes.io/name": "thor",
        "app.kubernetes.io/part-of": "HPCC-Platform", "app.kubernetes.io/component": component,
        "app.kubernetes.io/instance": format!("{component}-job-{job}")})
}

/// The chart's shape of eclccserver's compile pod template (render it
/// with `job_name` = `eclcc-myeclccserver-<suffix>-<k>`).
pub fn compile_pod(p: &ThorParams) -> Value {
    let job = &p.job_name;
    let name = format!("compile-job-{job}");
    let labels = json!({"accessDali": "yes", "accessEsp": "yes", "helmVersion": p.job_version,
        "instanceOf": "myeclccserver-job", "app.kubernetes.io/part-of": "HPCC-Platform",
        "app.kubernetes.io/name": "eclccserver", "app.kubernetes.io/component": "eclccserver",
        "app.kubernetes.io/instance": name});
    let mut arg = "-p -d /var/lib/HPCCSystems/debug -c myeclccserver -j -- eclccserver".to_string();
    arg += " \"--config=/etc/config/myeclccserver.yaml\" \"--daliServers=mydali:7070\"";
    arg += " \"--k8sJob=true\"";
    let mut env = vec![json!({"name": "ECLCC_ECLREPO_PATH"})];
    env.push(json!({"name": "MALLOC_ARENA_MAX", "value": "1"}));
    env.extend(ENV.split_whitespace().map(|n| json!({"name": n})));
    let mut main = main_container(&name, arg, env);
    main["workingDir"] = json!("/tmp");
    let volumes = "myeclccserver-temp-volume myeclccserver-hpcctmp-volume \
        myeclccserver-configmap-volume dll-volume debug-volume";
    let volumes: Vec<Value> = volumes
        .split_whitespace()
        .map(|v| json!({"name": v}))
        .collect();
    json!({
        "metadata": {"labels": labels},
        "spec": {"serviceAccountName": "hpcc-default", "terminationGracePeriodSeconds": null,
            "restartPolicy": "Never", "containers": [main, postrun(vec!["myeclccserver", "eclccserver"])],
            "volumes": volumes},
    })
}

/// Every pod template: valid labels and container names, every mount a
/// volume of the pod, the kwok annotation the harness ends pods by.
pub fn check_pod_basics(ctx: &Ctx<'_>, path: &[Seg], pod: &Value) -> Vec<Finding> {
    let mut out = k8s::check_labels(ctx, &pod["metadata"], path);
    let mut fail = |rel: &str, msg: String| {
        let full = [path, &at(rel)].concat();
        out.push(ctx.finding(&full, msg))
    };
    let ann = &pod["metadata"]["annotations"];
    if !ann["pod-complete.stage.kwok.x-k8s.io/delay"].is_string() {
        fail(
            "metadata.annotations",
            "kwok's pod-complete delay is missing".into(),
        );
    }
    let volumes = names_of(&pod["spec"]["volumes"]);
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        let name = str_of(&c["name"]);
        if let Err(e) = names::dns1123_label(name) {
            fail("spec.containers", format!("container {name:?}: {e}"));
        }
        let mounts = names_of(&c["volumeMounts"]);
        for m in mounts.into_iter().filter(|m| !volumes.contains(m)) {
            fail(
                "spec.containers",
                format!("{name} mounts {m}, no volume of the pod"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::validate::thor::matrix::check_template_set;
    use crate::workload::thor::{self, Mode, Template};

    /// The findings' messages when `set`'s template `i` has `from`
    /// replaced by `to` (it must occur).
    fn broken(set: Vec<Template>, mode: Mode, i: usize, from: &str, to: &str) -> String {
        assert!(
            set[i].text.contains(from),
            "{from:?} is not in {}",
            set[i].path
        );
        let text: &'static str = Box::leak(set[i].text.replacen(from, to, 1).into_boxed_str());
        let mut set: Vec<(Mode, Template)> = set.into_iter().map(|t| (mode, t)).collect();
        set[i].1.text = text;
        let r = check_template_set(&set);
        let ms: Vec<&str> = r.findings.iter().map(|f| f.message.as_str()).collect();
        ms.join("\n")
    }

    #[test]
    fn the_real_templates_pass() {
        let base = thor::templates(Mode::Baseline);
        assert_eq!(
            broken(base, Mode::Baseline, 0, "app: thor", "app: thor"),
            ""
        );
    }

    #[test]
    fn pods_must_have_the_charts_shape() {
        let b = || thor::templates(Mode::Baseline);
        let m = broken(b(), Mode::Baseline, 3, "        job: _HPCC_JOBNAME_\n", "");
        assert!(
            m.contains("the thorworker pod carries the chart's 13 labels"),
            "{m}"
        );
        let m = broken(
            b(),
            Mode::Baseline,
            1,
            "terminationGracePeriodSeconds: 60",
            "terminationGracePeriodSeconds: 30",
        );
        assert!(
            m.contains("the thormanager pod is 30, the chart's shape has 60"),
            "{m}"
        );
        // Without the marker the worker container is not repeated.
        let m = broken(
            b(),
            Mode::Baseline,
            3,
            "- name: thorworker-job-_HPCC_JOBNAME_-_HPCC_WORKER_N_",
            "- name: worker",
        );
        let repeated =
            "the thorworker pod has 2: [\"worker\", \"postrun\"], the chart's shape has 3";
        assert!(m.contains(repeated), "{m}");
        let m = broken(
            b(),
            Mode::Baseline,
            1,
            "safe-to-evict: \"false\"",
            "safe-to-evict: \"_HPCC_TYPO_\"",
        );
        assert!(m.contains("a placeholder is left after rendering"), "{m}");
    }

    #[test]
    fn policies_must_select_and_admit_the_instance() {
        let b = || thor::templates(Mode::Baseline);
        let m = broken(
            b(),
            Mode::Baseline,
            2,
            "component: thorworker",
            "component: thormanager",
        );
        assert!(
            m.contains("must select exactly the instance's thorworker pods"),
            "{m}"
        );
        let m = broken(
            b(),
            Mode::Baseline,
            0,
            "values: [_HPCC_THOR_NAME_-eclagent, _HPCC_JOBNAME_]",
            "values: [_HPCC_THOR_NAME_-eclagent]",
        );
        assert!(
            m.contains("ingress must cover every pod of the instance"),
            "{m}"
        );
        let js = || thor::templates(Mode::Jobset);
        let m = broken(
            js(),
            Mode::Jobset,
            1,
            "      app: thor\n      component: thorworker",
            "      app: thor\n      component: thorworkers",
        );
        assert!(
            m.contains("no NetworkPolicy of the instance selects this pod"),
            "{m}"
        );
        assert!(m.contains("thorworker-networkpolicy-"), "{m}");
        // A JobSet mode without its policies: the default-deny cuts it off.
        let alone = check_template_set(&[(Mode::Jobset, js()[2])]);
        let m: Vec<&str> = alone.findings.iter().map(|f| f.message.as_str()).collect();
        assert!(
            m.iter()
                .any(|m| m.starts_with("no NetworkPolicy of the instance selects")),
            "{m:?}"
        );
    }

    #[test]
    fn jobset_pods_must_be_baselines() {
        let js = || thor::templates(Mode::Jobset);
        let m = broken(
            js(),
            Mode::Jobset,
            2,
            "mountPath: /var/lib/HPCCSystems/queries",
            "mountPath: /queries",
        );
        assert!(
            m.contains("the thormanager pod template is not baseline's"),
            "{m}"
        );
        let m = broken(
            js(),
            Mode::Jobset,
            2,
            "enableDNSHostnames: _HARNESS_DNS_HOSTNAMES_",
            "enableDNSHostnames: true",
        );
        assert!(
            m.contains("with enableDNSHostnames true, every worker gets"),
            "{m}"
        );
    }
}
