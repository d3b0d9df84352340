//! HPCC Platform on a running cluster: the released `hpcc` Helm chart
//! (baseline) or the JobSet proof-of-concept chart (jobset), installed by
//! `helm` as a subprocess with the cluster's kubeconfig.
//!
//! 1. Values: our `manifests/hpcc/values/kind.yaml`, then the user's
//!    `--hpcc-values`, merged as Helm merges values files (maps deep,
//!    everything else replaced; `null` removes a key), then the scenario's
//!    numWorkers and, in jobset mode, `thor[0].jobset.enabled=true`, written
//!    to `<state dir>/hpcc-values.yaml` and passed with `-f`.
//! 2. jobset mode: the JobSet API must be served; the Thor agent's JobSet
//!    Role (`manifests/hpcc/rbac/jobset.yaml`) is bound to the chart's
//!    `hpcc-thoragent` service account.
//! 3. `helm upgrade --install` (no `--wait`: readiness is ours).
//! 4. Wait for the Deployments of dali, ESP, eclccserver, the ECL agents and
//!    Thor's eclagent/thoragent to be Ready; on timeout the error names the
//!    failing pod with its events and the tail of its containers' logs.
//!
//! Tests use constructed Pod/Event objects for the diagnosis and the pure
//! rendering functions; helm itself runs only against a real cluster.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, LogParams};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::error::{bad_input, env_missing};
use crate::progress::Step;
use crate::tools::versions::{HELM_VERSION, HPCC_CHART_NAME, HPCC_CHART_REPO, HPCC_CHART_VERSION};
use crate::workload::thor::{self, Mode, ThorParams};

/// Where HPCC goes. `default`, so `kubectl` and the ECL suite find ECL Watch
/// without a namespace flag.
pub const NAMESPACE: &str = "default";
pub const RELEASE: &str = "hpcc";
/// The chart's service account of the Thor agent and manager.
pub const THOR_AGENT_SERVICE_ACCOUNT: &str = "hpcc-thoragent";

/// Our values for kind, embedded like the Thor templates.
pub const KIND_VALUES_PATH: &str = "manifests/hpcc/values/kind.yaml";
pub const KIND_VALUES: &str = include_str!("../../../manifests/hpcc/values/kind.yaml");
const SMOKE_SCENARIO: &str = include_str!("../../../suites/thor/smoke.yaml");

/// How Thor runs its instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HpccMode {
    /// The released chart: a manager Job and a worker Job per instance.
    Baseline,
    /// The proof-of-concept chart: one JobSet per instance (needs --hpcc-chart).
    Jobset,
}

impl HpccMode {
    pub fn name(self) -> &'static str {
        match self {
            HpccMode::Baseline => "baseline",
            HpccMode::Jobset => "jobset",
        }
    }
}

#[derive(Debug, Clone)]
pub struct HpccOptions {
    pub mode: HpccMode,
    /// `--hpcc-chart`: a chart directory or .tgz, `oci://…`, or REPO/CHART.
    pub chart: Option<String>,
    /// `--hpcc-values`: merged over ours.
    pub values: Option<PathBuf>,
    /// `--hpcc-workers`: Thor's numWorkers.
    pub workers: Option<u32>,
    /// For the pods to become Ready after helm returns.
    pub timeout: Duration,
}

/// What was installed; written to `<state dir>/hpcc.json` for the suites.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HpccInstall {
    pub mode: HpccMode,
    pub release: String,
    pub namespace: String,
    pub chart: String,
    pub chart_version: Option<String>,
    pub values_file: PathBuf,
    pub num_workers: u32,
    pub thor_name: String,
    pub eclwatch_service: String,
    pub eclwatch_port: u16,
    pub deployments: Vec<String>,
}

// ---------------------------------------------------------------------------
// The typed model of the values keys the harness uses (also what
// `harness validate` decodes manifests/hpcc/values/*.yaml into: a key
// outside it is reported there).

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct HpccValues {
    pub global: Option<HpccGlobal>,
    pub storage: Option<HpccStorage>,
    pub dali: Option<Vec<HpccDali>>,
    pub sasha: Option<HpccSasha>,
    pub roxie: Option<Vec<HpccRoxie>>,
    pub eclagent: Option<Vec<HpccEclAgent>>,
    pub eclccserver: Option<Vec<HpccEclccServer>>,
    pub esp: Option<Vec<HpccEsp>>,
    pub thor: Option<Vec<HpccThor>>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccGlobal {
    pub omit_resources: Option<bool>,
    pub image: Option<HpccImage>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccImage {
    pub version: Option<String>,
    pub root: Option<String>,
    pub name: Option<String>,
    pub pull_policy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct HpccStorage {
    pub planes: Vec<HpccPlane>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccPlane {
    pub name: String,
    pub category: String,
    pub prefix: String,
    pub storage_class: Option<String>,
    pub storage_size: Option<String>,
    pub storage_mode: Option<String>,
    pub pvc: Option<String>,
    pub host_path: Option<String>,
    pub force_permissions: Option<bool>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccDali {
    pub name: String,
    pub auth: Option<String>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct HpccSasha {
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccRoxie {
    pub name: String,
    pub prefix: Option<String>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccEclAgent {
    pub name: String,
    pub replicas: Option<u32>,
    pub max_active: Option<u32>,
    pub prefix: Option<String>,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub use_child_processes: Option<bool>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccEclccServer {
    pub name: String,
    pub replicas: Option<u32>,
    pub max_active: Option<u32>,
    pub use_child_processes: Option<bool>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccEsp {
    pub name: String,
    pub application: String,
    pub auth: Option<String>,
    pub replicas: Option<u32>,
    pub service: Option<HpccEspService>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccEspService {
    pub port: Option<u16>,
    pub service_port: Option<u16>,
    pub visibility: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HpccThor {
    pub name: String,
    pub prefix: Option<String>,
    pub num_workers: u32,
    pub num_workers_per_pod: Option<u32>,
    pub max_jobs: u32,
    pub max_graphs: u32,
    pub jobset: Option<HpccThorJobset>,
    pub disabled: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct HpccThorJobset {
    pub enabled: bool,
}

/// Plane categories the chart accepts (values.schema.json).
pub const PLANE_CATEGORIES: &[&str] = &[
    "data", "lz", "dali", "sasha", "dll", "spill", "temp", "git", "remote", "debug",
];
/// Access modes a plane's PVC may ask for.
pub const STORAGE_MODES: &[&str] = &["ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany"];
/// Service visibilities of the chart's default `global.visibilities`.
pub const VISIBILITIES: &[&str] = &["cluster", "local", "global"];

fn on(disabled: Option<bool>) -> bool {
    !disabled.unwrap_or(false)
}

impl HpccValues {
    pub fn thors(&self) -> Vec<&HpccThor> {
        self.thor
            .iter()
            .flatten()
            .filter(|t| on(t.disabled))
            .collect()
    }

    /// The Deployments the chart makes for the enabled components the
    /// harness waits for, by component.
    pub fn deployments(&self) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        for d in self.dali.iter().flatten().filter(|d| on(d.disabled)) {
            out.push((d.name.clone(), "dali"));
        }
        for e in self.esp.iter().flatten().filter(|e| on(e.disabled)) {
            out.push((e.name.clone(), "esp"));
        }
        for e in self.eclccserver.iter().flatten().filter(|e| on(e.disabled)) {
            out.push((e.name.clone(), "eclccserver"));
        }
        for e in self.eclagent.iter().flatten().filter(|e| on(e.disabled)) {
            out.push((e.name.clone(), "eclagent"));
        }
        for t in self.thors() {
            out.push((format!("{}-eclagent", t.name), "thor eclagent"));
            out.push((format!("{}-thoragent", t.name), "thoragent"));
        }
        out
    }

    /// Semantic problems as (field path, message).
    pub fn problems(&self) -> Vec<(Vec<crate::yaml::Seg>, String)> {
        use crate::yaml::Seg;
        let k = |s: &str| Seg::Key(s.to_string());
        let mut out = Vec::new();
        let planes: Vec<&HpccPlane> = self.storage.iter().flat_map(|s| s.planes.iter()).collect();
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in planes.iter().enumerate() {
            let at = |f: &str| vec![k("storage"), k("planes"), Seg::Index(i), k(f)];
            if !seen.insert(p.name.as_str()) {
                out.push((at("name"), format!("plane name {:?} is used twice", p.name)));
            }
            if !PLANE_CATEGORIES.contains(&p.category.as_str()) {
                out.push((
                    at("category"),
                    format!(
                        "unknown plane category {:?}; one of {}",
                        p.category,
                        PLANE_CATEGORIES.join(", ")
                    ),
                ));
            }
            if let Some(m) = &p.storage_mode
                && !STORAGE_MODES.contains(&m.as_str())
            {
                out.push((
                    at("storageMode"),
                    format!(
                        "unknown access mode {m:?}; one of {}",
                        STORAGE_MODES.join(", ")
                    ),
                ));
            }
            if p.pvc.is_some() && p.host_path.is_some() {
                out.push((
                    at("hostPath"),
                    "a plane has a pvc or a hostPath, not both".into(),
                ));
            }
            if !p.prefix.starts_with('/') {
                out.push((
                    at("prefix"),
                    format!("{:?} is not an absolute path", p.prefix),
                ));
            }
        }
        let has_engine =
            !self.thors().is_empty() || self.eclagent.iter().flatten().any(|e| on(e.disabled));
        if self.storage.is_some() && has_engine {
            for cat in ["dali", "dll", "data"] {
                if !planes.iter().any(|p| p.category == cat && on(p.disabled)) {
                    out.push((
                        vec![k("storage"), k("planes")],
                        format!("no enabled {cat:?} plane: Thor and the ECL agents need dali, dll and data planes"),
                    ));
                }
            }
        }
        match &self.thor {
            None => out.push((
                vec![],
                "no thor: the harness drives exactly one Thor".into(),
            )),
            Some(list) => {
                let enabled = list.iter().filter(|t| on(t.disabled)).count();
                if enabled != 1 {
                    out.push((
                        vec![k("thor")],
                        format!("{enabled} enabled Thor clusters; the harness drives exactly one"),
                    ));
                }
            }
        }
        for (i, t) in self.thor.iter().flatten().enumerate() {
            let at = |f: &str| vec![k("thor"), Seg::Index(i), k(f)];
            if t.num_workers == 0 {
                out.push((
                    at("numWorkers"),
                    "numWorkers must be at least 1, is 0".into(),
                ));
            }
            match t.num_workers_per_pod {
                Some(0) => out.push((at("numWorkersPerPod"), "must be at least 1, is 0".into())),
                Some(n) if t.num_workers > 0 && !t.num_workers.is_multiple_of(n) => out.push((
                    at("numWorkersPerPod"),
                    format!("{n} does not divide numWorkers {}", t.num_workers),
                )),
                _ => {}
            }
            if t.max_jobs == 0 {
                out.push((at("maxJobs"), "maxJobs must be at least 1, is 0".into()));
            }
            if t.max_graphs == 0 {
                out.push((at("maxGraphs"), "maxGraphs must be at least 1, is 0".into()));
            }
        }
        for (i, e) in self.esp.iter().flatten().enumerate() {
            if let Some(v) = e.service.as_ref().and_then(|s| s.visibility.as_ref())
                && !VISIBILITIES.contains(&v.as_str())
            {
                out.push((
                    vec![k("esp"), Seg::Index(i), k("service"), k("visibility")],
                    format!(
                        "unknown visibility {v:?}; one of {}",
                        VISIBILITIES.join(", ")
                    ),
                ));
            }
        }
        if self.esp.is_some()
            && !self
                .esp
                .iter()
                .flatten()
                .any(|e| e.application == "eclwatch" && on(e.disabled))
        {
            out.push((
                vec![k("esp")],
                "no enabled ESP with application eclwatch: the ECL suite submits through it".into(),
            ));
        }
        for (name, component) in self.deployments() {
            if let Err(e) = crate::k8s::names::dns1123_label(&name) {
                out.push((vec![], format!("{component} Deployment name {name:?}: {e}")));
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Rendering the effective values.

/// Helm's merge of a values file over another: maps merge key by key,
/// anything else (lists included) replaces, and `null` deletes the key.
pub fn merge_values(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                if v.is_null() {
                    b.remove(k);
                } else if let Some(existing) = b.get_mut(k)
                    && existing.is_object()
                    && v.is_object()
                {
                    merge_values(existing, v);
                } else {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Thor's numWorkers when --hpcc-workers is not given and the user's values
/// set none: suites/thor/smoke.yaml's.
pub fn default_workers() -> Result<u32> {
    let s: crate::workload::thor::scenario::ThorScenario =
        serde_saphyr::from_str(SMOKE_SCENARIO)
            .context("suites/thor/smoke.yaml (embedded) is not a Thor scenario")?;
    Ok(s.thor.num_workers)
}

fn parse_values(text: &str, origin: &str) -> Result<Value> {
    let v: Value = serde_saphyr::from_str(text)
        .map_err(|e| bad_input(format!("{origin}: not a YAML values file: {e}")))?;
    match v {
        Value::Null => Ok(json!({})),
        Value::Object(_) => Ok(v),
        _ => Err(bad_input(format!(
            "{origin}: a values file must be a mapping"
        ))),
    }
}

/// The effective values: ours, the user's file (path, text), then
/// numWorkers and the JobSet switch. Returns the values and numWorkers.
pub fn render_values(
    mode: HpccMode,
    user: Option<(&Path, &str)>,
    workers: Option<u32>,
) -> Result<(Value, u32)> {
    let mut v = parse_values(KIND_VALUES, KIND_VALUES_PATH)?;
    let mut user_workers = None;
    if let Some((path, text)) = user {
        let origin = path.display().to_string();
        let u = parse_values(text, &origin)?;
        if let Some(n) = u.pointer("/thor/0/numWorkers") {
            user_workers = Some(n.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(
                || {
                    bad_input(format!(
                        "{origin}: thor[0].numWorkers {n} is not a whole number"
                    ))
                },
            )?);
        }
        merge_values(&mut v, &u);
    }
    let n = match (workers, user_workers) {
        (Some(n), _) | (None, Some(n)) => n,
        (None, None) => default_workers()?,
    };
    if n == 0 {
        return Err(bad_input("Thor numWorkers must be at least 1, is 0"));
    }
    let thors = v
        .get_mut("thor")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad_input("the effective values have no thor list"))?;
    if thors.len() != 1 {
        return Err(bad_input(format!(
            "the effective values define {} Thor clusters; the harness drives exactly one",
            thors.len()
        )));
    }
    let thor = thors[0]
        .as_object_mut()
        .ok_or_else(|| bad_input("thor[0] is not a mapping"))?;
    thor.insert("numWorkers".into(), json!(n));
    match mode {
        HpccMode::Jobset => {
            let js = thor.entry("jobset").or_insert_with(|| json!({}));
            if !js.is_object() {
                *js = json!({});
            }
            js["enabled"] = json!(true);
        }
        HpccMode::Baseline => {
            // A user file cannot turn JobSet on behind the mode's back.
            if thor.get("jobset").and_then(|j| j.get("enabled")) == Some(&json!(true)) {
                return Err(bad_input(
                    "thor[0].jobset.enabled is true in --hpcc-values but the mode is baseline; use --hpcc jobset",
                ));
            }
        }
    }
    // The keys we rely on must still make sense after the user's merge.
    let typed: HpccValues = serde_json::from_value(v.clone()).map_err(|e| {
        bad_input(format!(
            "the effective HPCC values do not fit the chart: {e}"
        ))
    })?;
    let problems: Vec<String> = typed
        .problems()
        .into_iter()
        .map(|(path, msg)| format!("{}: {msg}", crate::yaml::path_string(&path)))
        .collect();
    if !problems.is_empty() {
        return Err(bad_input(format!(
            "the effective HPCC values ({KIND_VALUES_PATH} + --hpcc-values + numWorkers) are not usable:\n  {}",
            problems.join("\n  ")
        )));
    }
    Ok((v, n))
}

/// Which chart helm installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartRef {
    pub chart: String,
    /// `--repo` and `--version` for the released chart only.
    pub repo: Option<String>,
    pub version: Option<String>,
}

pub fn chart_ref(mode: HpccMode, chart: Option<&str>) -> Result<ChartRef> {
    match (mode, chart) {
        (HpccMode::Jobset, None) => Err(bad_input(
            "--hpcc jobset needs --hpcc-chart: the JobSet proof-of-concept chart (a chart \
             directory or .tgz, its https:// URL, oci://REGISTRY/CHART, or REPO/CHART of a \
             repository added with `helm repo add`); the released hpcc chart has no JobSet mode",
        )),
        (HpccMode::Baseline, None) => Ok(ChartRef {
            chart: HPCC_CHART_NAME.into(),
            repo: Some(HPCC_CHART_REPO.into()),
            version: Some(HPCC_CHART_VERSION.into()),
        }),
        (_, Some(c)) => {
            let c = c.trim();
            if c.is_empty() {
                return Err(bad_input("--hpcc-chart is empty"));
            }
            if c.starts_with("https://") || c.starts_with("http://") {
                // A packaged chart's URL: helm fetches it.
                return Ok(ChartRef {
                    chart: c.into(),
                    repo: None,
                    version: None,
                });
            }
            let p = Path::new(c);
            let looks_local =
                c.starts_with('.') || c.starts_with('/') || c.ends_with(".tgz") || p.exists();
            if looks_local {
                let abs = p.canonicalize().map_err(|e| {
                    bad_input(format!(
                        "--hpcc-chart {c}: no such chart directory or file ({e})"
                    ))
                })?;
                if abs.is_dir() && !abs.join("Chart.yaml").is_file() {
                    return Err(bad_input(format!(
                        "--hpcc-chart {c}: {} has no Chart.yaml",
                        abs.display()
                    )));
                }
                return Ok(ChartRef {
                    chart: abs.display().to_string(),
                    repo: None,
                    version: None,
                });
            }
            if !(c.starts_with("oci://") || c.split('/').count() == 2) {
                return Err(bad_input(format!(
                    "--hpcc-chart {c:?}: not a chart path, oci:// reference or REPO/CHART"
                )));
            }
            Ok(ChartRef {
                chart: c.into(),
                repo: None,
                version: None,
            })
        }
    }
}

/// The helm command line (after the binary).
pub fn helm_args(
    chart: &ChartRef,
    kubeconfig: &Path,
    values_file: &Path,
    mode: HpccMode,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = ["upgrade", "--install", RELEASE]
        .into_iter()
        .map(OsString::from)
        .collect();
    a.push(chart.chart.clone().into());
    if let Some(r) = &chart.repo {
        a.extend(["--repo".into(), r.into()]);
    }
    if let Some(v) = &chart.version {
        a.extend(["--version".into(), v.into()]);
    }
    a.extend([
        "--kubeconfig".into(),
        kubeconfig.as_os_str().to_owned(),
        "--namespace".into(),
        NAMESPACE.into(),
        "-f".into(),
        values_file.as_os_str().to_owned(),
    ]);
    if mode == HpccMode::Jobset {
        a.extend(["--set".into(), "thor[0].jobset.enabled=true".into()]);
    }
    a
}

/// `helm` from `$HARNESS_HELM_BIN` or PATH.
pub fn find_helm() -> Result<PathBuf> {
    find_helm_from(
        std::env::var_os("HARNESS_HELM_BIN"),
        std::env::var_os("PATH"),
    )
}

/// `find_helm` with the environment passed in (tests).
pub fn find_helm_from(bin: Option<OsString>, path: Option<OsString>) -> Result<PathBuf> {
    if let Some(p) = bin {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return Err(env_missing(
            format!("HARNESS_HELM_BIN={} is not a file", p.display()),
            "point HARNESS_HELM_BIN at a helm binary, or unset it to use helm from PATH",
        ));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    which::which_in("helm", path, cwd).map_err(|_| {
        env_missing(
            "helm is not on PATH (it installs the HPCC chart)",
            format!(
                "install helm (CI pins v{HELM_VERSION}): https://helm.sh/docs/intro/install/ \
                 — e.g. unpack https://get.helm.sh/helm-v{HELM_VERSION}-linux-amd64.tar.gz and put \
                 linux-amd64/helm on PATH — or set HARNESS_HELM_BIN"
            ),
        )
    })
}

/// The JobSet Role of `manifests/hpcc/rbac/jobset.yaml`, bound to the
/// chart's Thor agent service account.
pub fn jobset_rbac(num_workers: u32) -> Result<Vec<Value>> {
    let params = ThorParams {
        thor_name: "thor".into(),
        job_name: "thor-rbac-0".into(),
        num_workers,
        num_workers_per_pod: 1,
        job_version: HPCC_CHART_VERSION.into(),
        pod_runtime: "0s".into(),
        namespace: NAMESPACE.into(),
    };
    let mut docs = thor::render(&thor::rbac(Mode::Jobset), &params)?;
    for d in &mut docs {
        if d["kind"] == "RoleBinding" {
            d["subjects"] = json!([{
                "kind": "ServiceAccount",
                "name": THOR_AGENT_SERVICE_ACCOUNT,
                "namespace": NAMESPACE,
            }]);
        }
    }
    if !docs.iter().any(|d| d["kind"] == "RoleBinding") {
        bail!("manifests/hpcc/rbac/jobset.yaml has no RoleBinding");
    }
    Ok(docs)
}

// ---------------------------------------------------------------------------
// Readiness and diagnosis.

pub fn deployment_ready(d: &Deployment) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    let st = d.status.as_ref();
    let ready = st.and_then(|s| s.ready_replicas).unwrap_or(0);
    let updated = st.and_then(|s| s.updated_replicas).unwrap_or(0);
    ready >= want && updated >= want
}

/// Container waiting reasons that will not fix themselves.
const STUCK: &[&str] = &[
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
];

fn pod_name(p: &Pod) -> &str {
    p.metadata.name.as_deref().unwrap_or("?")
}

/// How bad a pod looks (lower is worse) and why; None when it is Ready.
pub fn pod_trouble(p: &Pod) -> Option<(u8, String)> {
    let st = p.status.as_ref()?;
    let statuses = st
        .init_container_statuses
        .iter()
        .flatten()
        .chain(st.container_statuses.iter().flatten());
    let mut worst: Option<(u8, String)> = None;
    let mut consider = |rank: u8, why: String| {
        if worst.as_ref().is_none_or(|(r, _)| rank < *r) {
            worst = Some((rank, why));
        }
    };
    for c in statuses {
        let state = c.state.as_ref();
        if let Some(w) = state.and_then(|s| s.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_default();
            if STUCK.contains(&reason.as_str()) {
                consider(
                    0,
                    format!(
                        "container {} is {reason}{} (restarts: {})",
                        c.name,
                        w.message
                            .as_ref()
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default(),
                        c.restart_count
                    ),
                );
            }
        }
        let term = state
            .and_then(|s| s.terminated.as_ref())
            .or_else(|| c.last_state.as_ref().and_then(|s| s.terminated.as_ref()));
        if let Some(t) = term
            && t.exit_code != 0
        {
            consider(
                1,
                format!(
                    "container {} exited with code {}{} (restarts: {})",
                    c.name,
                    t.exit_code,
                    t.reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default(),
                    c.restart_count
                ),
            );
        }
    }
    let conditions = st.conditions.iter().flatten();
    let cond = |t: &str| conditions.clone().find(|c| c.type_ == t);
    if st.phase.as_deref() == Some("Pending")
        && let Some(c) = cond("PodScheduled")
        && c.status == "False"
    {
        consider(
            2,
            format!(
                "not scheduled: {}{}",
                c.reason.clone().unwrap_or_default(),
                c.message
                    .as_ref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
        );
    }
    if st.phase.as_deref() == Some("Failed") {
        consider(
            1,
            format!("pod Failed: {}", st.reason.clone().unwrap_or_default()),
        );
    }
    let ready = cond("Ready").is_some_and(|c| c.status == "True");
    if !ready {
        let phase = st.phase.clone().unwrap_or_else(|| "Unknown".into());
        let waiting: Vec<String> = st
            .init_container_statuses
            .iter()
            .flatten()
            .chain(st.container_statuses.iter().flatten())
            .filter(|c| !c.ready)
            .map(|c| {
                let w = c
                    .state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.clone());
                match w {
                    Some(r) => format!("{} {r}", c.name),
                    None => format!("{} not ready", c.name),
                }
            })
            .collect();
        let rank = if phase == "Pending" { 3 } else { 4 };
        consider(
            rank,
            if waiting.is_empty() {
                format!("{phase}, not Ready")
            } else {
                format!("{phase}, not Ready: {}", waiting.join(", "))
            },
        );
    }
    worst
}

/// The pod to report: the worst-looking, then the one restarted most.
pub fn failing_pod(pods: &[Pod]) -> Option<(&Pod, String)> {
    let restarts = |p: &Pod| -> i32 {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map(|cs| cs.iter().map(|c| c.restart_count).sum())
            .unwrap_or(0)
    };
    pods.iter()
        .filter_map(|p| pod_trouble(p).map(|(rank, why)| (p, rank, why)))
        .min_by(|a, b| {
            a.1.cmp(&b.1)
                .then(restarts(b.0).cmp(&restarts(a.0)))
                .then(pod_name(a.0).cmp(pod_name(b.0)))
        })
        .map(|(p, _, why)| (p, why))
}

/// One container log to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    pub container: String,
    /// The previous (crashed) instance's log.
    pub previous: bool,
}

/// Logs worth reading: every container that is not ready and has run
/// (a container waiting for its image has no log). A restarted one's
/// previous instance is the one that failed.
pub fn logs_to_fetch(p: &Pod) -> Vec<LogRequest> {
    let Some(st) = p.status.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in st
        .init_container_statuses
        .iter()
        .flatten()
        .chain(st.container_statuses.iter().flatten())
    {
        if c.ready {
            continue;
        }
        let state = c.state.as_ref();
        let running = state.is_some_and(|s| s.running.is_some());
        let terminated = state.is_some_and(|s| s.terminated.is_some());
        if c.restart_count > 0 {
            out.push(LogRequest {
                container: c.name.clone(),
                previous: true,
            });
        }
        if running || terminated {
            out.push(LogRequest {
                container: c.name.clone(),
                previous: false,
            });
        }
    }
    out
}

fn event_time(e: &Event) -> Option<k8s_openapi::jiff::Timestamp> {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
}

/// The last `max` events about `pod`, oldest first, one line each.
pub fn event_lines(pod: &str, events: &[Event], max: usize) -> Vec<String> {
    let mut mine: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod)
                && e.involved_object.kind.as_deref().is_none_or(|k| k == "Pod")
        })
        .collect();
    mine.sort_by_key(|e| event_time(e));
    let skip = mine.len().saturating_sub(max);
    mine.into_iter()
        .skip(skip)
        .map(|e| {
            format!(
                "{} {} {}{}: {}",
                event_time(e)
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "-".into()),
                e.type_.as_deref().unwrap_or("Normal"),
                e.reason.as_deref().unwrap_or("?"),
                match e.count {
                    Some(n) if n > 1 => format!(" (×{n})"),
                    _ => String::new(),
                },
                e.message.as_deref().unwrap_or("").trim()
            )
        })
        .collect()
}

const LOG_TAIL_LINES: i64 = 40;
const EVENT_LINES: usize = 15;

/// What is wrong with the Deployments that are not Ready: the failing
/// pod of each, its events and the tail of its logs.
async fn diagnose(client: &kube::Client, not_ready: &[(String, Option<Deployment>)]) -> String {
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let events_api: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    let mut out = String::new();
    for (name, dep) in not_ready {
        let Some(dep) = dep else {
            out.push_str(&format!(
                "\n- Deployment {name}: not created by the chart (check the values: is the component named so, and enabled?)"
            ));
            continue;
        };
        let selector = dep
            .spec
            .selector
            .match_labels
            .as_ref()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        let pods = match pods_api
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(l) => l.items,
            Err(e) => {
                out.push_str(&format!("\n- Deployment {name}: listing its pods: {e}"));
                continue;
            }
        };
        let ready = dep
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        let want = dep.spec.replicas.unwrap_or(1);
        out.push_str(&format!(
            "\n- Deployment {name}: {ready}/{want} ready, {} pod(s)",
            pods.len()
        ));
        let Some((pod, why)) = failing_pod(&pods) else {
            if pods.is_empty() {
                // No pod at all: the ReplicaSet's events say why.
                if let Ok(ev) = events_api.list(&ListParams::default()).await {
                    let rs_lines: Vec<String> = ev
                        .items
                        .iter()
                        .filter(|e| {
                            e.involved_object.kind.as_deref() == Some("ReplicaSet")
                                && e.involved_object
                                    .name
                                    .as_deref()
                                    .is_some_and(|n| n.starts_with(&format!("{name}-")))
                        })
                        .filter_map(|e| e.message.clone())
                        .collect();
                    for l in rs_lines.iter().rev().take(5).rev() {
                        out.push_str(&format!("\n    replicaset: {l}"));
                    }
                }
            }
            continue;
        };
        let pname = pod_name(pod).to_string();
        out.push_str(&format!("\n  failing pod {pname}: {why}"));
        let fs = format!("involvedObject.name={pname}");
        match events_api.list(&ListParams::default().fields(&fs)).await {
            Ok(ev) => {
                let lines = event_lines(&pname, &ev.items, EVENT_LINES);
                if lines.is_empty() {
                    out.push_str("\n  events: none");
                } else {
                    out.push_str("\n  events:");
                    for l in lines {
                        out.push_str(&format!("\n    {l}"));
                    }
                }
            }
            Err(e) => out.push_str(&format!("\n  events: cannot list: {e}")),
        }
        for req in logs_to_fetch(pod) {
            let lp = LogParams {
                container: Some(req.container.clone()),
                previous: req.previous,
                tail_lines: Some(LOG_TAIL_LINES),
                ..LogParams::default()
            };
            let label = if req.previous {
                format!("{} (previous instance)", req.container)
            } else {
                req.container.clone()
            };
            match pods_api.logs(&pname, &lp).await {
                Ok(text) if text.trim().is_empty() => {
                    out.push_str(&format!("\n  log of {label}: empty"))
                }
                Ok(text) => {
                    out.push_str(&format!(
                        "\n  log of {label} (last {LOG_TAIL_LINES} lines):"
                    ));
                    for l in text.lines() {
                        out.push_str(&format!("\n    | {l}"));
                    }
                }
                Err(e) => out.push_str(&format!("\n  log of {label}: cannot read: {e}")),
            }
        }
    }
    out
}

/// Wait until every named Deployment is Ready, showing progress; on timeout
/// the error carries the diagnosis.
pub async fn wait_ready(
    client: &kube::Client,
    names: &[(String, &'static str)],
    timeout: Duration,
) -> Result<()> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let step = Step::start(format!(
        "waiting for HPCC to be Ready ({})",
        describe(names)
    ));
    let deadline = Instant::now() + timeout;
    loop {
        let mut pending: Vec<(String, Option<Deployment>)> = Vec::new();
        for (name, _) in names {
            let d = api
                .get_opt(name)
                .await
                .with_context(|| format!("reading Deployment {name} in {NAMESPACE}"))?;
            if !d.as_ref().is_some_and(deployment_ready) {
                pending.push((name.clone(), d));
            }
        }
        if pending.is_empty() {
            step.done("ready");
            return Ok(());
        }
        let ready = names.len() - pending.len();
        step.update(&format!(
            "{ready}/{} ready; waiting for {}",
            names.len(),
            pending
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if Instant::now() > deadline {
            let detail = diagnose(client, &pending).await;
            step.done("timed out");
            bail!(
                "HPCC not Ready after {} s: {ready} of {} deployments Ready{detail}",
                timeout.as_secs(),
                names.len()
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Is `group` served (e.g. jobset.x-k8s.io)?
async fn group_served(client: &kube::Client, group: &str) -> Result<bool> {
    let groups = client
        .list_api_groups()
        .await
        .context("listing the API groups")?;
    Ok(groups.groups.iter().any(|g| g.name == group))
}

/// Run helm; its output goes to `log` and the tail of it into the error.
async fn run_helm(helm: &Path, args: &[OsString], log: &Path) -> Result<()> {
    let out = tokio::process::Command::new(helm)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", helm.display()))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    std::fs::write(log, &text).with_context(|| format!("writing {}", log.display()))?;
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "helm {} failed ({}); output in {}:\n  {}",
            args.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            out.status,
            log.display(),
            tail.join("\n  ")
        );
    }
    Ok(())
}

/// Everything that can be checked before a cluster exists: the chart
/// reference, the values (ours + the user's + numWorkers), and helm.
pub fn preflight(opts: &HpccOptions) -> Result<()> {
    chart_ref(opts.mode, opts.chart.as_deref())?;
    let text = match &opts.values {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| bad_input(format!("--hpcc-values {}: {e}", p.display())))?,
        ),
        None => None,
    };
    render_values(
        opts.mode,
        opts.values.as_deref().zip(text.as_deref()),
        opts.workers,
    )?;
    find_helm()?;
    Ok(())
}

/// Install HPCC on `cluster` and wait until it is Ready.
pub async fn install<C: Cluster>(cluster: &C, opts: &HpccOptions) -> Result<HpccInstall> {
    let chart = chart_ref(opts.mode, opts.chart.as_deref())?;
    let user_text = match &opts.values {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| bad_input(format!("--hpcc-values {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let (values, num_workers) = render_values(
        opts.mode,
        opts.values.as_deref().zip(user_text.as_deref()),
        opts.workers,
    )?;
    let helm = find_helm()?;
    let dir = crate::cluster::state::cluster_dir(cluster.name());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let values_file = dir.join("hpcc-values.yaml");
    let header = format!(
        "# Effective HPCC values written by `harness up --hpcc {}`: {KIND_VALUES_PATH}{}, numWorkers {num_workers}{}.\n",
        opts.mode.name(),
        opts.values
            .as_ref()
            .map(|p| format!(" + {}", p.display()))
            .unwrap_or_default(),
        if opts.mode == HpccMode::Jobset {
            ", thor[0].jobset.enabled"
        } else {
            ""
        }
    );
    let body = serde_saphyr::to_string(&values).context("serialising the HPCC values")?;
    std::fs::write(&values_file, format!("{header}{body}"))
        .with_context(|| format!("writing {}", values_file.display()))?;

    let client = cluster.client().await?;
    if opts.mode == HpccMode::Jobset {
        if !group_served(&client, "jobset.x-k8s.io").await? {
            return Err(env_missing(
                format!(
                    "cluster {:?} does not serve the JobSet API (jobset.x-k8s.io), which --hpcc jobset needs",
                    cluster.name()
                ),
                "bring the cluster up with a JobSet profile (kind-configs/jobset-<minor>.yaml), which installs JobSet",
            ));
        }
        let step = Step::start("applying the Thor agent's JobSet RBAC");
        crate::install::apply::apply_all(&client, &jobset_rbac(num_workers)?)
            .await
            .context("applying manifests/hpcc/rbac/jobset.yaml for hpcc-thoragent")?;
        step.done("applied");
    }

    let args = helm_args(&chart, cluster.kubeconfig(), &values_file, opts.mode);
    let step = Step::start(format!(
        "helm install {} {}{}",
        RELEASE,
        chart.chart,
        chart
            .version
            .as_ref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default()
    ));
    run_helm(&helm, &args, &dir.join("helm-install.log"))
        .await
        .with_context(|| format!("installing HPCC ({} mode)", opts.mode.name()))?;
    step.done("installed");

    let typed: HpccValues =
        serde_json::from_value(values.clone()).context("re-reading the effective values")?;
    let names = typed.deployments();
    wait_ready(&client, &names, opts.timeout)
        .await
        .with_context(|| format!("values in {}", values_file.display()))?;

    let esp = typed
        .esp
        .iter()
        .flatten()
        .find(|e| e.application == "eclwatch" && on(e.disabled))
        .context("no eclwatch ESP in the effective values")?;
    let thor = typed.thors()[0].clone();
    let record = HpccInstall {
        mode: opts.mode,
        release: RELEASE.into(),
        namespace: NAMESPACE.into(),
        chart: chart.chart.clone(),
        chart_version: chart.version.clone(),
        values_file,
        num_workers,
        thor_name: thor.name,
        eclwatch_service: esp.name.clone(),
        eclwatch_port: esp
            .service
            .as_ref()
            .and_then(|s| s.service_port)
            .unwrap_or(8010),
        deployments: names.into_iter().map(|(n, _)| n).collect(),
    };
    let path = dir.join("hpcc.json");
    std::fs::write(&path, serde_json::to_string_pretty(&record)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(record)
}

/// Components by Deployment, for messages.
pub fn describe(names: &[(String, &'static str)]) -> String {
    let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (n, c) in names {
        by.entry(c).or_default().push(n);
    }
    by.iter()
        .map(|(c, ns)| format!("{c}: {}", ns.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code;

    fn planes(v: &Value) -> Vec<(String, String)> {
        v["storage"]["planes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["category"].as_str().unwrap().to_string(),
                    p["storageMode"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn baseline_values_carry_what_kind_needs() {
        let (v, n) = render_values(HpccMode::Baseline, None, None).unwrap();
        // numWorkers defaults to suites/thor/smoke.yaml's (2).
        assert_eq!(n, 2);
        assert_eq!(n, default_workers().unwrap());
        assert_eq!(v["thor"].as_array().unwrap().len(), 1);
        assert_eq!(v["thor"][0]["numWorkers"], json!(2));
        assert!(v["thor"][0].get("jobset").is_none(), "{}", v["thor"][0]);
        let p = planes(&v);
        for cat in ["dali", "dll", "data", "lz", "debug"] {
            assert!(p.iter().any(|(c, _)| c == cat), "no {cat} plane in {p:?}");
        }
        assert!(p.iter().all(|(_, m)| m == "ReadWriteOnce"), "{p:?}");
        assert_eq!(v["global"]["omitResources"], json!(true));
        assert_eq!(v["roxie"], json!([]));
        assert_eq!(v["sasha"]["disabled"], json!(true));
        let esp = v["esp"].as_array().unwrap();
        assert_eq!(esp.len(), 1);
        assert_eq!(esp[0]["application"], "eclwatch");
        assert_eq!(esp[0]["service"]["visibility"], "cluster");
        assert_eq!(esp[0]["service"]["servicePort"], json!(8010));
        // What is written for helm reads back the same (empty strings stay strings).
        let text = serde_saphyr::to_string(&v).unwrap();
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, v, "{text}");
        assert_eq!(back["storage"]["planes"][0]["storageClass"], json!(""));
    }

    #[test]
    fn jobset_mode_sets_the_flag_and_only_it() {
        let (b, _) = render_values(HpccMode::Baseline, None, Some(4)).unwrap();
        let (j, n) = render_values(HpccMode::Jobset, None, Some(4)).unwrap();
        assert_eq!(n, 4);
        assert_eq!(j["thor"][0]["jobset"]["enabled"], json!(true));
        assert_eq!(j["thor"][0]["numWorkers"], json!(4));
        let mut j2 = j.clone();
        j2["thor"][0].as_object_mut().unwrap().remove("jobset");
        assert_eq!(
            b, j2,
            "jobset mode must differ from baseline only in the flag"
        );
    }

    #[test]
    fn user_values_merge_like_helm() {
        let user = "global:\n  image:\n    version: 10.8.0-rc4\nesp:\n  - name: ew\n    application: eclwatch\n    service: {servicePort: 8011, visibility: local}\nsasha: null\nthor:\n  - name: big\n    numWorkers: 3\n    maxJobs: 1\n    maxGraphs: 1\n";
        let (v, n) =
            render_values(HpccMode::Baseline, Some((Path::new("u.yaml"), user)), None).unwrap();
        // Maps merge: ours and theirs side by side.
        assert_eq!(v["global"]["image"]["version"], "10.8.0-rc4");
        assert_eq!(v["global"]["image"]["pullPolicy"], "IfNotPresent");
        assert_eq!(v["global"]["omitResources"], json!(true));
        // Lists replace.
        assert_eq!(v["esp"].as_array().unwrap().len(), 1);
        assert_eq!(v["esp"][0]["name"], "ew");
        assert_eq!(v["thor"][0]["name"], "big");
        assert!(v["thor"][0].get("prefix").is_none());
        // null deletes.
        assert!(v.get("sasha").is_none());
        // The user's numWorkers is used without --hpcc-workers ...
        assert_eq!(n, 3);
        // ... and the flag wins over it.
        let (v, n) = render_values(
            HpccMode::Baseline,
            Some((Path::new("u.yaml"), user)),
            Some(5),
        )
        .unwrap();
        assert_eq!((n, v["thor"][0]["numWorkers"].clone()), (5, json!(5)));
    }

    #[test]
    fn unusable_values_are_bad_input() {
        let e = render_values(HpccMode::Baseline, None, Some(0)).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("at least 1"), "{e}");
        let two = "thor:\n  - {name: a, numWorkers: 1, maxJobs: 1, maxGraphs: 1}\n  - {name: b, numWorkers: 1, maxJobs: 1, maxGraphs: 1}\n";
        let e = render_values(HpccMode::Baseline, Some((Path::new("two.yaml"), two)), None)
            .unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("exactly one"), "{e}");
        let sneaky = "thor:\n  - {name: t, numWorkers: 1, maxJobs: 1, maxGraphs: 1, jobset: {enabled: true}}\n";
        let e = render_values(
            HpccMode::Baseline,
            Some((Path::new("s.yaml"), sneaky)),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--hpcc jobset"), "{e}");
        let e = render_values(
            HpccMode::Baseline,
            Some((Path::new("bad.yaml"), "a: [")),
            None,
        )
        .unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("bad.yaml"), "{e}");
        // A merge that drops the dll plane is caught before helm runs.
        let no_dll = "storage:\n  planes:\n    - {name: dali, category: dali, prefix: /d}\n    - {name: data, category: data, prefix: /x}\n";
        let e = render_values(
            HpccMode::Baseline,
            Some((Path::new("p.yaml"), no_dll)),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("\"dll\""), "{e}");
    }

    #[test]
    fn chart_references() {
        let e = chart_ref(HpccMode::Jobset, None).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("--hpcc-chart"), "{e}");
        let c = chart_ref(HpccMode::Baseline, None).unwrap();
        assert_eq!(c.chart, HPCC_CHART_NAME);
        assert_eq!(c.repo.as_deref(), Some(HPCC_CHART_REPO));
        assert_eq!(c.version.as_deref(), Some(HPCC_CHART_VERSION));
        let dir = tempfile::tempdir().unwrap();
        let e = chart_ref(HpccMode::Jobset, Some(dir.path().to_str().unwrap())).unwrap_err();
        assert!(e.to_string().contains("Chart.yaml"), "{e}");
        std::fs::write(dir.path().join("Chart.yaml"), "name: hpcc\n").unwrap();
        let c = chart_ref(HpccMode::Jobset, Some(dir.path().to_str().unwrap())).unwrap();
        assert_eq!(Path::new(&c.chart), dir.path().canonicalize().unwrap());
        assert_eq!((c.repo, c.version), (None, None));
        let e = chart_ref(HpccMode::Jobset, Some("./no/such/chart")).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        let c = chart_ref(HpccMode::Jobset, Some("poc/hpcc")).unwrap();
        assert_eq!(c.chart, "poc/hpcc");
        assert!(chart_ref(HpccMode::Jobset, Some("a/b/c")).is_err());
        let url = "https://example.org/charts/hpcc-poc-10.8.0.tgz";
        assert_eq!(chart_ref(HpccMode::Jobset, Some(url)).unwrap().chart, url);
    }

    #[test]
    fn helm_command_line() {
        let c = chart_ref(HpccMode::Baseline, None).unwrap();
        let s = |a: Vec<OsString>| {
            a.iter()
                .map(|x| x.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let b = s(helm_args(
            &c,
            Path::new("/k/kc"),
            Path::new("/s/v.yaml"),
            HpccMode::Baseline,
        ));
        assert_eq!(
            b,
            format!(
                "upgrade --install hpcc hpcc --repo {HPCC_CHART_REPO} --version {HPCC_CHART_VERSION} --kubeconfig /k/kc --namespace default -f /s/v.yaml"
            )
        );
        let poc = ChartRef {
            chart: "/charts/poc".into(),
            repo: None,
            version: None,
        };
        let j = s(helm_args(
            &poc,
            Path::new("/k/kc"),
            Path::new("/s/v.yaml"),
            HpccMode::Jobset,
        ));
        assert!(
            j.ends_with("-f /s/v.yaml --set thor[0].jobset.enabled=true"),
            "{j}"
        );
        assert!(!j.contains("--version"), "{j}");
    }

    #[test]
    fn missing_helm_says_how_to_install_it() {
        let empty = tempfile::tempdir().unwrap();
        let e = find_helm_from(None, Some(empty.path().as_os_str().to_owned())).unwrap_err();
        assert_eq!(exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(msg.contains("helm is not on PATH"), "{msg}");
        assert!(msg.contains(HELM_VERSION), "{msg}");
        let e = find_helm_from(Some("/no/such/helm".into()), None).unwrap_err();
        assert_eq!(exit_code(&e), 3);
        // A helm on PATH is found.
        let bin = empty.path().join("helm");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = find_helm_from(None, Some(empty.path().as_os_str().to_owned())).unwrap();
        assert_eq!(found, bin);
    }

    #[test]
    fn jobset_rbac_binds_the_thor_agent_service_account() {
        let docs = jobset_rbac(2).unwrap();
        let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
        assert_eq!(role["metadata"]["namespace"], NAMESPACE);
        assert!(
            role["rules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["resources"] == json!(["jobsets"])
                    && r["verbs"].as_array().unwrap().contains(&json!("create")))
        );
        let rb = docs.iter().find(|d| d["kind"] == "RoleBinding").unwrap();
        assert_eq!(
            rb["subjects"],
            json!([{"kind": "ServiceAccount", "name": "hpcc-thoragent", "namespace": "default"}])
        );
    }

    #[test]
    fn deployments_waited_for() {
        let (v, _) = render_values(HpccMode::Baseline, None, None).unwrap();
        let typed: HpccValues = serde_json::from_value(v).unwrap();
        let names: Vec<String> = typed.deployments().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "mydali",
                "eclwatch",
                "myeclccserver",
                "hthor",
                "thor-eclagent",
                "thor-thoragent"
            ]
        );
    }

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn ready_pod(name: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true,
                    "restartCount": 0, "state": {"running": {}}}]}
        }))
    }

    fn crashing_pod(name: &str, restarts: i32) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{"name": "dali", "image": "i", "imageID": "", "ready": false,
                    "restartCount": restarts,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                    "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}
        }))
    }

    fn unschedulable_pod(name: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 node(s) had volume node affinity conflict"}]}
        }))
    }

    fn starting_pod(name: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{"name": "esp", "image": "i", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"running": {}}}]}
        }))
    }

    #[test]
    fn the_worst_pod_is_reported() {
        assert!(failing_pod(&[ready_pod("a")]).is_none());
        let pods = [
            ready_pod("a"),
            starting_pod("b"),
            unschedulable_pod("c"),
            crashing_pod("d", 1),
            crashing_pod("e", 7),
        ];
        let (p, why) = failing_pod(&pods).unwrap();
        // Crash-looping beats unschedulable and slow; the most restarts wins.
        assert_eq!(p.metadata.name.as_deref(), Some("e"));
        assert!(
            why.contains("CrashLoopBackOff") && why.contains("restarts: 7"),
            "{why}"
        );
        let (p, why) = failing_pod(&pods[..3]).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("c"));
        assert!(why.contains("volume node affinity conflict"), "{why}");
        let (p, why) = failing_pod(&pods[..2]).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("b"));
        assert!(why.contains("esp not ready"), "{why}");
    }

    #[test]
    fn which_logs_are_read() {
        // A crash-looping container: its previous instance is the one that failed.
        assert_eq!(
            logs_to_fetch(&crashing_pod("d", 3)),
            [LogRequest {
                container: "dali".into(),
                previous: true
            }]
        );
        // Running but not ready: the current log.
        assert_eq!(
            logs_to_fetch(&starting_pod("b")),
            [LogRequest {
                container: "esp".into(),
                previous: false
            }]
        );
        // Waiting for an image or not scheduled: nothing has run, no log.
        let pulling = pod(json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Pending",
                "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}
        }));
        assert!(logs_to_fetch(&pulling).is_empty());
        assert!(logs_to_fetch(&unschedulable_pod("c")).is_empty());
        assert!(logs_to_fetch(&ready_pod("a")).is_empty());
        let (_, why) = failing_pod(std::slice::from_ref(&pulling)).unwrap();
        assert!(why.contains("ImagePullBackOff"), "{why}");
    }

    #[test]
    fn events_of_the_pod_newest_last() {
        let ev = |pod: &str, at: &str, reason: &str, count: i32| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": format!("{pod}.{reason}")},
                "involvedObject": {"kind": "Pod", "name": pod},
                "reason": reason, "message": format!("{reason} happened"),
                "type": "Warning", "count": count, "lastTimestamp": at,
            }))
            .unwrap()
        };
        let events = [
            ev("d", "2026-01-01T00:00:30Z", "BackOff", 5),
            ev("d", "2026-01-01T00:00:10Z", "Pulled", 1),
            ev("other", "2026-01-01T00:00:20Z", "Scheduled", 1),
            ev("d", "2026-01-01T00:00:20Z", "Started", 1),
        ];
        let lines = event_lines("d", &events, 10);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("Pulled"), "{lines:?}");
        assert!(
            lines[2].contains("Warning BackOff (×5): BackOff happened"),
            "{lines:?}"
        );
        let last = event_lines("d", &events, 1);
        assert_eq!(last.len(), 1);
        assert!(last[0].contains("BackOff"));
        assert!(event_lines("nobody", &events, 10).is_empty());
    }

    #[test]
    fn deployment_readiness() {
        let d = |want: i32, ready: i32, updated: i32| -> Deployment {
            serde_json::from_value(json!({
                "metadata": {"name": "x"},
                "spec": {"replicas": want, "selector": {"matchLabels": {"run": "x"}},
                    "template": {}},
                "status": {"readyReplicas": ready, "updatedReplicas": updated}
            }))
            .unwrap()
        };
        assert!(deployment_ready(&d(1, 1, 1)));
        assert!(!deployment_ready(&d(1, 0, 1)));
        assert!(!deployment_ready(&d(2, 2, 1)));
    }
}
