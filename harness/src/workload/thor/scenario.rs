//! Scenario files (suites/thor/*.yaml): what a Thor benchmark runs — the
//! Thor cluster's values, the workunits and their graphs, compile Jobs,
//! how HPCC's kubectl and the kubelets behave, and the cluster. One set of
//! rules (`check`) for `harness validate` and `harness bench thor`.
//! Defaults are HPCC's chart defaults (helm/hpcc/values.yaml 10.6.x and
//! the code defaults it leaves in place: docs/thor-model.md).

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;
use serde_json::Value;

use crate::cluster::profile::ControlPlane;
use crate::cluster::spec::KubeletModel;
use crate::error::bad_input;
use crate::k8s::names;
use crate::schema::finding::Finding;
use crate::schema::typed::{Ctx, decode};
use crate::workload::thor::capacity::{self, Capacity, Resources};
use crate::workload::thor::overrides::apply_overrides;
pub use crate::workload::thor::overrides::parse_overrides;
use crate::workload::thor::template::Mode;
use crate::yaml::Seg;

fn path(keys: &[&str]) -> Vec<Seg> {
    keys.iter().map(|k| Seg::Key(k.to_string())).collect()
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ThorScenario {
    /// Names the baseline file and the clusters: a DNS-1123 label.
    pub name: String,
    pub description: Option<String>,
    pub thor: ThorShape,
    /// Workunits submitted at the start; each compiles, then runs its
    /// graphs one after another.
    pub workunits: u32,
    #[serde(default = "one")]
    pub graphs_per_workunit: u32,
    /// How long one graph runs, e.g. "5s".
    pub graph_duration: String,
    #[serde(default)]
    pub compile: CompileSpec,
    #[serde(default)]
    pub kubectl: KubectlSpec,
    #[serde(default)]
    pub kubelet: KubeletModel,
    #[serde(default)]
    pub jobset: JobsetSpec,
    /// How long after a main container exits the postrun sidecar notices
    /// (container_watch.sh polls every ≤ 10 s: 5 s on average).
    #[serde(default = "default_postrun")]
    pub postrun_exit: String,
    pub modes: Vec<String>,
    /// Room for this many whole instances' CPU (replaces cluster.nodeCpu):
    /// below maxGraphs, instances compete for the nodes.
    pub capacity: Option<Capacity>,
    pub cluster: ScenarioCluster,
}

/// One Thor cluster's values (`thor:` in HPCC's values).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ThorShape {
    #[serde(default = "default_thor_name")]
    pub name: String,
    pub num_workers: u32,
    #[serde(default = "one")]
    pub num_workers_per_pod: u32,
    /// Instances at once (running or lingering): the thoragent's pool.
    pub max_graphs: u32,
    /// Workunits at once (the Thor eclagent's maxActive); chart default 4.
    #[serde(default = "four")]
    pub max_jobs: u32,
    /// How long a manager waits for another graph before it exits; HPCC's
    /// default 60 s (common/workunit/workunit.hpp defaultThorLingerPeriod).
    #[serde(default = "default_linger")]
    pub linger_period: String,
    #[serde(default)]
    pub keep_jobs: KeepJobs,
    /// Each manager container's resources (chart: none).
    pub manager_resources: Option<Resources>,
    /// Each worker container's resources (chart: none).
    pub worker_resources: Option<Resources>,
    /// How long waitJob lets a Job's only pod stay unscheduled before it
    /// fails the Job (jcontainerized.cpp `runJob`, default 600).
    #[serde(default = "default_scheduling_timeout")]
    pub scheduling_timeout_secs: u32,
    #[serde(default)]
    pub expert: ThorExpert,
}

/// The Thor component's `expert:` options the model uses.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ThorExpert {
    /// How long a manager waits for all its workers to register before it
    /// fails (thmastermain.cpp `CRegistryServer::connect`: 60 min
    /// containerized).
    pub max_worker_registration_mins: u32,
}

impl Default for ThorExpert {
    fn default() -> Self {
        ThorExpert {
            max_worker_registration_mins: 60,
        }
    }
}

/// Which Jobs HPCC leaves behind (jcontainerized.cpp translateKeepJobs).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum KeepJobs {
    #[default]
    None,
    Podfailures,
    All,
}

/// eclccserver's compile Jobs (chart default `useChildProcesses: false`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct CompileSpec {
    pub enabled: bool,
    /// How long compiling one workunit takes.
    pub duration: String,
    /// A compile pod's linger (chart default 30 s).
    pub linger_period: String,
    /// Compile Jobs at once (chart default 4).
    pub max_active: u32,
}

impl Default for CompileSpec {
    fn default() -> Self {
        CompileSpec {
            enabled: true,
            duration: "2s".into(),
            linger_period: "30s".into(),
            max_active: 4,
        }
    }
}

/// The kubectl HPCC's processes fork for every call.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct KubectlSpec {
    /// HPCC's platform image ships 1.29.7; or the cluster's own version.
    pub version: String,
    pub discovery_cache: DiscoveryCacheSpec,
}

impl Default for KubectlSpec {
    fn default() -> Self {
        KubectlSpec {
            version: crate::tools::versions::HPCC_KUBECTL_VERSION.into(),
            discovery_cache: DiscoveryCacheSpec::None,
        }
    }
}

/// `none`: HPCC's read-only root filesystem, every call cold; `warm`: a
/// writable cache shared by the calls.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DiscoveryCacheSpec {
    #[default]
    None,
    Warm,
}

/// The JobSet modes' JobSet.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct JobsetSpec {
    /// false: the proof of concept passes the manager's address
    /// explicitly; true: JobSet's headless Service names the pods.
    #[serde(rename = "enableDNSHostnames")]
    pub enable_dns_hostnames: bool,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioCluster {
    pub k8s_minor: String,
    pub nodes: u32,
    /// Each node's CPU; or derived from the scenario's `capacity`.
    pub node_cpu: Option<String>,
    pub node_memory: String,
    #[serde(default = "default_pods")]
    pub node_pods: u32,
    /// Rate and inflight limits of the control plane (cluster::profile):
    /// `{profile: default|tuned, kcmQps: …}`.
    #[serde(default)]
    pub control_plane: ControlPlane,
    /// Thor's pods run on real nodes with real containers
    /// (workload::thor::realpods): locally one real node beside the fake
    /// ones (`up --real-node`, root only), on an existing cluster its own
    /// nodes. Off: kwok's fake nodes, `kubelet` picks their model.
    #[serde(default)]
    pub real_node: bool,
}

fn default_thor_name() -> String {
    "thor".into()
}
fn one() -> u32 {
    1
}
fn four() -> u32 {
    4
}
fn default_linger() -> String {
    "60s".into()
}
fn default_postrun() -> String {
    "5s".into()
}
fn default_pods() -> u32 {
    110
}
fn default_scheduling_timeout() -> u32 {
    600
}

/// The longest duration a scenario may ask for.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// "250ms", "5s", "2m", "1h" → Duration, at most a day.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map(|i| s.split_at(i))
        .ok_or_else(|| format!("{s:?} has no unit (ms, s, m, h)"))?;
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} does not start with a whole number"))?;
    let per = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        other => return Err(format!("{s:?}: unknown unit {other:?} (ms, s, m, h)")),
    };
    let d = n
        .checked_mul(per)
        .map(Duration::from_millis)
        .filter(|d| *d <= MAX_DURATION)
        .ok_or_else(|| format!("{s:?} is longer than {} h", MAX_DURATION.as_secs() / 3600))?;
    Ok(d)
}

/// 37 for "1.37"; 0 when unreadable.
fn minor_number(minor: &str) -> u32 {
    minor
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// The longest Thor name whose objects' names stay valid: the worker
/// containers `thorworker-job-<thor>-<16-char agent suffix>-<instance ≤
/// 9999>-<worker ≤ 999>` must be DNS labels of ≤ 63 characters.
pub const MAX_THOR_NAME: usize = 63 - "thorworker-job-".len() - 1 - 16 - 1 - 4 - 1 - 3;

impl ThorScenario {
    /// Semantic problems as (field path, message).
    pub fn problems(&self) -> Vec<(Vec<Seg>, String)> {
        let mut out = Vec::new();
        self.name_problems(&mut out);
        self.count_problems(&mut out);
        self.duration_problems(&mut out);
        self.version_problems(&mut out);
        self.resource_problems(&mut out);
        if let Some(e) = out_of_range(self.thor.expert.max_worker_registration_mins, 1, 24 * 60) {
            out.push((path(&["thor", "expert", "maxWorkerRegistrationMins"]), e));
        }
        self.mode_problems(&mut out);
        out
    }

    /// The scenario's and the Thor's names: DNS labels, the Thor's short
    /// enough for its worker containers' names.
    fn name_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        let mut p = |at: &[&str], msg: String| out.push((path(at), msg));
        if let Err(e) = names::dns1123_label(&self.name) {
            p(&["name"], e);
        }
        let t = &self.thor;
        if let Err(e) = names::dns1123_label(&t.name) {
            p(&["thor", "name"], e);
        } else if t.name.len() > MAX_THOR_NAME {
            p(
                &["thor", "name"],
                format!(
                    "{:?} is longer than {MAX_THOR_NAME} characters: its worker containers' names would pass 63",
                    t.name
                ),
            );
        }
    }

    /// The counts (workers, graphs, jobs, workunits, nodes…) within their
    /// ranges, and workers per pod dividing the workers.
    fn count_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        let mut p = |at: &[&str], msg: String| out.push((path(at), msg));
        let t = &self.thor;
        for (v, lo, hi, at) in [
            (t.num_workers, 1, 10_000, &["thor", "numWorkers"][..]),
            (
                t.num_workers_per_pod,
                1,
                100,
                &["thor", "numWorkersPerPod"][..],
            ),
            (t.max_graphs, 1, 64, &["thor", "maxGraphs"][..]),
            (t.max_jobs, 1, 1000, &["thor", "maxJobs"][..]),
            (self.workunits, 1, 10_000, &["workunits"][..]),
            (
                self.graphs_per_workunit,
                1,
                1000,
                &["graphsPerWorkunit"][..],
            ),
            (
                self.compile.max_active,
                1,
                100,
                &["compile", "maxActive"][..],
            ),
            (self.cluster.nodes, 1, 10_000, &["cluster", "nodes"][..]),
            (
                self.cluster.node_pods,
                1,
                10_000,
                &["cluster", "nodePods"][..],
            ),
        ] {
            if let Some(e) = out_of_range(v, lo, hi) {
                p(at, e);
            }
        }
        if t.num_workers_per_pod > 0 && !t.num_workers.is_multiple_of(t.num_workers_per_pod) {
            p(
                &["thor", "numWorkersPerPod"],
                format!(
                    "{} does not divide numWorkers {}",
                    t.num_workers_per_pod, t.num_workers
                ),
            );
        }
    }

    /// The durations: each parses and is no shorter than its least.
    fn duration_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        let mut p = |at: &[&str], msg: String| out.push((path(at), msg));
        let t = &self.thor;
        for (v, at, min) in [
            (&self.graph_duration, &["graphDuration"][..], Duration::ZERO),
            (
                &t.linger_period,
                &["thor", "lingerPeriod"][..],
                Duration::from_secs(1),
            ),
            (
                &self.compile.duration,
                &["compile", "duration"][..],
                Duration::ZERO,
            ),
            (
                &self.compile.linger_period,
                &["compile", "lingerPeriod"][..],
                Duration::ZERO,
            ),
            (&self.postrun_exit, &["postrunExit"][..], Duration::ZERO),
        ] {
            match parse_duration(v) {
                Err(e) => p(at, e),
                Ok(d) if d < min => p(at, format!("{v:?} is shorter than {min:?}")),
                Ok(_) => {}
            }
        }
    }

    /// The versions: a kubectl the harness provisions, a Kubernetes minor
    /// it knows.
    fn version_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        let mut p = |at: &[&str], msg: String| out.push((path(at), msg));
        let hpcc = crate::tools::versions::HPCC_KUBECTL_VERSION;
        let minor = crate::k8s::facts::for_minor(&self.cluster.k8s_minor);
        let own = crate::k8s::K8sRelease::parse(&self.cluster.k8s_minor).map(|r| r.version);
        let v = self.kubectl.version.trim_start_matches('v');
        if v != hpcc && own.as_ref().ok() != Some(&v) && v != self.cluster.k8s_minor {
            p(
                &["kubectl", "version"],
                format!(
                    "{v:?}: the harness provisions HPCC's kubectl {hpcc} or the cluster's own ({})",
                    own.unwrap_or("?")
                ),
            );
        }
        if minor.is_none() {
            p(
                &["cluster", "k8sMinor"],
                format!(
                    "unknown Kubernetes minor {:?}; known: {}",
                    self.cluster.k8s_minor,
                    crate::k8s::facts::minors().join(", ")
                ),
            );
        }
    }

    /// The nodes' CPU and memory quantities, and the Thor pods' resources
    /// against the nodes' capacity.
    fn resource_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        let mut p = |at: &[&str], msg: String| out.push((path(at), msg));
        for (at, q) in [
            ("nodeCpu", self.cluster.node_cpu.as_ref()),
            ("nodeMemory", Some(&self.cluster.node_memory)),
        ] {
            if let Some(Err(e)) = q.map(|q| names::quantity(q)) {
                p(&["cluster", at], e);
            }
        }
        let t = &self.thor;
        for (at, msg) in capacity::problems(
            t.manager_resources.as_ref(),
            t.worker_resources.as_ref(),
            self.capacity.as_ref(),
            self.cluster.node_cpu.is_some(),
        ) {
            p(&at, msg);
        }
    }

    /// The modes: at least one, each known and served by the cluster's
    /// Kubernetes minor.
    fn mode_problems(&self, out: &mut Vec<(Vec<Seg>, String)>) {
        if self.modes.is_empty() {
            out.push((path(&["modes"]), "name at least one mode".into()));
        }
        for (i, m) in self.modes.iter().enumerate() {
            let at = vec![Seg::Key("modes".into()), Seg::Index(i)];
            match Mode::parse(m) {
                None => out.push((
                    at,
                    format!(
                        "unknown mode {m:?}; one of {}",
                        Mode::ALL.map(Mode::name).join(", ")
                    ),
                )),
                Some(Mode::JobsetGang) if minor_number(&self.cluster.k8s_minor) < 36 => out.push((
                    at,
                    "jobset-gang needs Kubernetes 1.36 or later (PodGroup API)".into(),
                )),
                _ => {}
            }
        }
    }
}

/// Why `v` is outside `lo`–`hi`, if it is.
fn out_of_range(v: u32, lo: u32, hi: u32) -> Option<String> {
    (v < lo || v > hi).then(|| format!("{v} is out of range {lo}–{hi}"))
}

/// Decode and check one scenario document (the `harness validate` rules,
/// and the ones `bench` applies before it starts anything).
pub fn check(ctx: &Ctx<'_>, v: &Value) -> (Option<ThorScenario>, Vec<Finding>) {
    if v.get("instances").is_some() {
        // The old format: instances emerge from workunits now.
        return (
            None,
            vec![ctx.finding(
                &path(&["instances"]),
                "renamed: give `workunits` (each compiles, then runs `graphsPerWorkunit` graphs; \
                 Thor instances are launched as HPCC's thoragent would)",
            )],
        );
    }
    let (s, mut f) = decode::<ThorScenario>(ctx, v, "Thor scenario");
    if let Some(s) = &s {
        f.extend(s.problems().into_iter().map(|(p, m)| ctx.finding(&p, m)));
    }
    (s, f)
}

/// Read, decode and check a scenario file: exactly one document, every
/// problem bad input at file:line:column.
pub fn load(path: &Path) -> Result<ThorScenario> {
    load_with(path, &[])
}

/// Decode and check a whole scenario file: exactly one document (an empty
/// file or a second document is a finding too), `--set` overrides applied
/// first. The one function `harness validate` and `load` both call.
/// Returns the documents, the scenario and every finding.
pub fn check_file(
    file: &str,
    text: &str,
    overrides: &[(Vec<String>, Value)],
) -> (usize, Option<ThorScenario>, Vec<Finding>) {
    let mut scenario = None;
    let mut seen = 0;
    // Per `--set`: its key, and the first part of it the file lacked (the
    // field the flag created).
    let mut set_paths: Vec<(String, Option<String>)> = Vec::new();
    let (documents, mut findings) = crate::schema::check_yaml(file, text, |ctx, v| {
        seen += 1;
        set_paths = overrides
            .iter()
            .map(|(k, _)| {
                let mut at = Some(v);
                let created = (0..k.len()).find_map(|n| {
                    at = at.and_then(|x| x.get(&k[n]));
                    at.is_none().then(|| k[..=n].join("."))
                });
                (k.join("."), created)
            })
            .collect();
        let (s, mut f) = check(ctx, &apply_overrides(v, overrides));
        if seen > 1 {
            let msg = format!("a scenario is one YAML document; this is document {seen}");
            f.insert(0, ctx.finding(&[], msg));
        }
        scenario = scenario.take().or(s);
        f
    });
    if documents == 0 && findings.is_empty() {
        findings.push(Finding {
            file: file.to_string(),
            line: 1,
            column: 1,
            path: "(document)".into(),
            message: "empty scenario: a scenario is one YAML document".into(),
        });
    }
    // A finding about a field a `--set` gave is the flag's, not a line
    // of the file (it would point at whatever line holds the parent).
    let under = |path: &str, k: &str| {
        path == k || path.starts_with(&format!("{k}.")) || path.starts_with(&format!("{k}["))
    };
    for f in &mut findings {
        let by_set = set_paths.iter().find_map(|(k, created)| {
            let hit = under(&f.path, k) || created.as_deref().is_some_and(|c| under(&f.path, c));
            hit.then(|| k.clone())
        });
        if let Some(k) = by_set {
            f.file = format!("--set {k}");
            (f.line, f.column) = (0, 0);
        }
    }
    (documents, scenario, findings)
}

/// `load` with `--set` overrides applied before the checks.
pub fn load_with(path: &Path, overrides: &[(Vec<String>, Value)]) -> Result<ThorScenario> {
    let file = path.display().to_string();
    let text = crate::input::read(path)?;
    let (_, scenario, findings) = check_file(&file, &text, overrides);
    if let Some(f) = findings.first() {
        return Err(bad_input(format!(
            "invalid scenario: {f}{}",
            match findings.len() {
                1 => String::new(),
                n => format!(
                    " (and {} more; `harness validate {file}` lists them)",
                    n - 1
                ),
            }
        )));
    }
    scenario.ok_or_else(|| bad_input(format!("{file}: empty scenario")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        // Overflow and absurd lengths are errors, not wrap-arounds.
        assert!(parse_duration("5124095576030432h").is_err());
        assert!(parse_duration("25h").is_err());
        assert_eq!(parse_duration("24h").unwrap(), MAX_DURATION);
    }

    fn problems(yaml: &str) -> Vec<String> {
        let (_, f) = crate::schema::check_yaml("s.yaml", yaml, |ctx, v| check(ctx, v).1);
        f.iter().map(|f| f.to_string()).collect()
    }

    const OK: &str = "name: smoke\nthor: {numWorkers: 2, maxGraphs: 2}\nworkunits: 4\ngraphDuration: 3s\nmodes: [baseline]\ncluster: {k8sMinor: \"1.37\", nodes: 3, nodeCpu: \"32\", nodeMemory: 256Gi}\n";

    #[test]
    fn chart_defaults_and_one_set_of_rules() {
        assert_eq!(problems(OK), Vec::<String>::new());
        let (s, _) = crate::schema::check_yaml("s.yaml", OK, |ctx, v| {
            let (s, f) = check(ctx, v);
            assert!(s.is_some());
            f
        });
        assert_eq!(s, 1);
        for (bad, what) in [
            ("nodeCpu: \"32\"", "nodeCpu: banana"),
            ("name: smoke", "name: ../../x/PWNED"),
            (
                "thor: {numWorkers: 2,",
                "thor: {name: Thor_Bad!, numWorkers: 2,",
            ),
            ("numWorkers: 2,", "numWorkers: 4294967295,"),
            ("graphDuration: 3s", "graphDuration: 5124095576030432h"),
            ("workunits: 4", "workunits: 0"),
        ] {
            let text = OK.replace(bad, what);
            assert!(!problems(&text).is_empty(), "{what} accepted");
        }
        let set = parse_overrides(&[
            "jobset.enableDNSHostnames=true".into(),
            "thor.maxGraphs=4".into(),
        ])
        .unwrap();
        let v = apply_overrides(&serde_json::json!({"thor": {"maxGraphs": 2}}), &set);
        assert_eq!(
            v,
            serde_json::json!({"thor": {"maxGraphs": 4}, "jobset": {"enableDNSHostnames": true}})
        );
        assert!(parse_overrides(&["nokey".into()]).is_err());
        assert!(parse_overrides(&["a..b=1".into()]).is_err());
        let old = OK.replace("workunits: 4", "instances: 4");
        assert!(
            problems(&old).iter().any(|p| p.contains("instances")),
            "{:?}",
            problems(&old)
        );
    }

    /// Issue 30: a bad `--set` key is reported as the flag's, not at the
    /// line of whatever holds its parent.
    #[test]
    fn a_bad_set_key_is_reported_as_the_flag() {
        let text = include_str!("../../../../suites/thor/smoke.yaml");
        for (set, says) in [
            (
                "bogus.key=1",
                "--set bogus.key: bogus: unknown field \"bogus\"",
            ),
            (
                "thor.bogus=1",
                "--set thor.bogus: thor.bogus: unknown field \"bogus\"",
            ),
        ] {
            let ov = parse_overrides(&[set.into()]).unwrap();
            let (_, _, findings) = check_file("smoke.yaml", text, &ov);
            let all: Vec<String> = findings.iter().map(|f| f.to_string()).collect();
            assert!(all.iter().any(|f| f.starts_with(says)), "{set}: {all:?}");
            assert!(
                !all.iter().any(|f| f.starts_with("smoke.yaml:")),
                "{set}: {all:?}"
            );
        }
    }
}
