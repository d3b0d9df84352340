//! `harness bench thor`: each mode of a scenario on a fresh local cluster,
//! measured, as one Result (DESIGN.md's contract).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::cluster::local::LocalCluster;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::error::bad_input;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::pods::{self, PodTracker};
use crate::metrics::{self, EtcdFigures, Percentiles};
use crate::progress::Step;
use crate::scenario::{ThorScenario, parse_duration};
use crate::tools::Component;
use crate::workload::thor::driver::{self, ThorEnv};
use crate::workload::thor::{self, Mode, THOR_AGENT_USER, ThorParams};

/// Users whose requests are the harness's own, counted apart.
pub const HARNESS_USERS: &[&str] = &["admin"];
pub const NAMESPACE: &str = "thor";

/// One mode's figures (the headline keys are DESIGN.md's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    pub mode: String,
    pub instances: u32,
    /// Requests by every client but the harness (from the audit log).
    pub api_requests_total: u64,
    /// "verb resource[/subresource]" → count.
    pub api_requests: BTreeMap<String, u64>,
    /// client identity → count.
    pub api_requests_by_client: BTreeMap<String, u64>,
    /// client identity → "verb resource" → count.
    pub api_requests_by_client_request: BTreeMap<String, BTreeMap<String, u64>>,
    /// The Thor identity's own requests (thoragent + manager). Includes
    /// status polls with HPCC's backoff and kubectl's discovery, so it
    /// moves with timing by a few percent.
    pub thor_agent_requests: u64,
    /// Of those, the writes (create, update, patch, delete): what the
    /// driver decides to do, independent of timing.
    #[serde(default)]
    pub thor_agent_writes: u64,
    /// client → "verb resource code" → count of failed requests (≥ 400,
    /// not 404/409).
    pub failed_requests: BTreeMap<String, BTreeMap<String, u64>>,
    /// The harness's own requests in the window (excluded above).
    pub harness_requests: u64,
    /// What apiserver_request_total counted (everyone, the harness too).
    pub apiserver_requests_counted: u64,
    pub etcd_writes_total: u64,
    pub etcd: EtcdFigures,
    /// Objects created by clients other than the harness, by resource.
    pub objects_created: BTreeMap<String, u64>,
    pub pods_created: u64,
    pub containers_created: u64,
    /// Pod created → Running (ms), from the watch.
    pub pod_startup_ms: Percentiles,
    pub pod_schedule_ms: Percentiles,
    /// First pod of an instance created → its last pod Running (ms).
    pub instance_start_ms: Percentiles,
    /// The same, for modes that schedule an instance as a gang.
    pub gang_start_ms: Option<Percentiles>,
    pub instance_wall_s: Percentiles,
    pub api_latency_ms: BTreeMap<String, Percentiles>,
    pub objects_after: BTreeMap<String, u64>,
    pub wall_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeSummary {
    /// Means over the repeats for the numeric headline keys; the first
    /// run's maps.
    pub result: ModeResult,
    pub repeats: Vec<ModeResult>,
    /// (max − min) / mean × 100 over repeats, per headline key.
    pub spread_pct: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThorResult {
    pub schema: String,
    pub scenario: String,
    pub scenario_file: String,
    pub provider: String,
    pub k8s_version: String,
    pub harness_version: String,
    pub started: String,
    pub num_workers: u32,
    pub num_workers_per_pod: u32,
    pub max_graphs: u32,
    pub graph_duration: String,
    pub modes: BTreeMap<String, ModeSummary>,
    /// The harness process's own peak resident memory (VmHWM), in KiB;
    /// the control-plane processes are not included.
    #[serde(default)]
    pub harness_peak_rss_kib: u64,
}

/// This process's peak resident set size (VmHWM) in KiB.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

pub const RESULT_SCHEMA: &str = "harness.thor-result/v1";

pub fn load_scenario(path: &Path) -> Result<ThorScenario> {
    let text =
        std::fs::read_to_string(path).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    let docs = crate::yaml::parse(&text).map_err(|e| {
        bad_input(format!(
            "{}:{}:{}: {}",
            path.display(),
            e.pos.line,
            e.pos.column,
            e.message
        ))
    })?;
    let doc = docs
        .first()
        .ok_or_else(|| bad_input(format!("{}: empty scenario", path.display())))?;
    let ctx = crate::schema::typed::Ctx {
        file: &path.display().to_string(),
        root: &doc.root,
        base: vec![],
    };
    let (s, mut findings) =
        crate::schema::typed::decode::<ThorScenario>(&ctx, &doc.root.to_json(), "Thor scenario");
    if let Some(s) = &s {
        findings.extend(s.problems().into_iter().map(|(p, m)| ctx.finding(&p, m)));
    }
    if let Some(f) = findings.first() {
        return Err(bad_input(format!("invalid scenario: {f}")));
    }
    s.ok_or_else(|| bad_input(format!("{}: not a Thor scenario", path.display())))
}

fn params(s: &ThorScenario, instance: u32) -> ThorParams {
    ThorParams {
        thor_name: s.thor.name.clone(),
        job_name: format!("{}-6d9f7c8b5d-x2v9k-{instance}", s.thor.name),
        num_workers: s.thor.num_workers,
        num_workers_per_pod: s.thor.num_workers_per_pod,
        job_version: "10.8.0".into(),
        pod_runtime: driver::POD_RUNTIME.into(),
        namespace: NAMESPACE.into(),
    }
}

/// Run one mode on a running cluster and measure it.
pub async fn run_mode(
    cluster: &LocalCluster,
    s: &ThorScenario,
    mode: Mode,
    kubectl: &Path,
) -> Result<ModeResult> {
    let minor = crate::k8s::K8sRelease::parse(&s.cluster.k8s_minor)?.minor_number();
    if thor::templates_for(mode, minor).is_empty() {
        bail!(bad_input(format!(
            "{} mode has no templates for Kubernetes {}",
            mode.name(),
            s.cluster.k8s_minor
        )));
    }
    let admin = cluster.client().await?;
    // Namespace and the Thor agent's RBAC, as the harness.
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    let mut setup = vec![ns];
    setup.extend(thor::render(&thor::rbac(mode), &params(s, 0))?);
    crate::install::apply::apply_all(&admin, &setup)
        .await
        .context("creating the namespace and RBAC")?;
    let sa: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(admin.clone(), NAMESPACE);
    let t = Instant::now();
    while sa.get_opt("default").await?.is_none() {
        if t.elapsed() > Duration::from_secs(30) {
            bail!("namespace {NAMESPACE} has no default service account after 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let tracker = Arc::new(PodTracker::start(admin.clone(), NAMESPACE));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let graph = parse_duration(&s.graph_duration).map_err(bad_input)?;
    let env = ThorEnv {
        admin: admin.clone(),
        agent_kubeconfig: cluster.kubeconfig_of("thor-agent"),
        kubectl: kubectl.to_path_buf(),
        kubectl_cache: cluster
            .layout
            .root
            .join(format!("kubectl-cache-{}", mode.name())),
        namespace: NAMESPACE.into(),
        tracker: tracker.clone(),
        step_timeout: Duration::from_secs(600),
        k8s_minor: minor,
    };

    let before = metrics::snapshot(cluster).await?;
    let started = Instant::now();
    let instances = driver::run_instances(
        &env,
        mode,
        |i| params(s, i),
        s.instances,
        s.thor.max_graphs,
        graph,
    )
    .await?;
    driver::wait_all_gone(&env, Duration::from_secs(600)).await?;
    let wall_s = started.elapsed().as_secs_f64();
    let after = metrics::snapshot(cluster).await?;
    let (events, _) = cluster.audit_events(before.audit_offset)?;
    drop(env);

    let attribution = metrics::attribute(&events, HARNESS_USERS);
    let api = metrics::api_figures(&before, &after);
    let etcd = metrics::etcd_figures(&before, &after);
    let pod_times = tracker.snapshot();
    let pf = pods::figures(&pod_times);
    let starts: Vec<f64> = instances.iter().filter_map(|i| i.start_ms).collect();
    let walls: Vec<f64> = instances.iter().map(|i| i.wall_ms).collect();
    let instance_start_ms = pods::percentiles(&starts);
    let mut wall_pct = pods::percentiles(&walls);
    for v in [
        &mut wall_pct.p50,
        &mut wall_pct.p90,
        &mut wall_pct.p99,
        &mut wall_pct.max,
    ] {
        *v /= 1000.0;
    }
    Ok(ModeResult {
        mode: mode.name().into(),
        instances: s.instances,
        api_requests_total: attribution.total,
        thor_agent_requests: attribution
            .by_client
            .get(THOR_AGENT_USER)
            .copied()
            .unwrap_or(0),
        thor_agent_writes: attribution
            .by_client_request
            .get(THOR_AGENT_USER)
            .map_or(0, |reqs| {
                reqs.iter()
                    .filter(|(req, _)| metrics::is_write_request(req))
                    .map(|(_, n)| n)
                    .sum()
            }),
        failed_requests: attribution.failed,
        api_requests: attribution.by_request,
        api_requests_by_client: attribution.by_client,
        api_requests_by_client_request: attribution.by_client_request,
        harness_requests: attribution.harness,
        apiserver_requests_counted: api.requests_total,
        etcd_writes_total: etcd.writes,
        etcd,
        objects_created: attribution.created,
        pods_created: pf.pods_created,
        containers_created: pf.containers_created,
        pod_startup_ms: pf.startup_ms,
        pod_schedule_ms: pf.schedule_ms,
        gang_start_ms: (mode == Mode::JobsetGang).then_some(instance_start_ms),
        instance_start_ms,
        instance_wall_s: wall_pct,
        api_latency_ms: api.latency_ms,
        objects_after: api.objects_after,
        wall_s,
    })
}

/// Headline numbers that get means and spreads over repeats.
pub fn headline(r: &ModeResult) -> Vec<(&'static str, f64)> {
    vec![
        ("api_requests_total", r.api_requests_total as f64),
        ("thor_agent_requests", r.thor_agent_requests as f64),
        ("thor_agent_writes", r.thor_agent_writes as f64),
        ("etcd_writes_total", r.etcd_writes_total as f64),
        ("pods_created", r.pods_created as f64),
        ("containers_created", r.containers_created as f64),
        ("pod_startup_ms.p99", r.pod_startup_ms.p99),
        ("instance_start_ms.p99", r.instance_start_ms.p99),
        ("wall_s", r.wall_s),
    ]
}

fn summarize(runs: Vec<ModeResult>) -> ModeSummary {
    let n = runs.len() as f64;
    let mut result = runs[0].clone();
    let mut spread_pct = BTreeMap::new();
    let cols: Vec<Vec<(&str, f64)>> = runs.iter().map(headline).collect();
    for (i, (name, _)) in cols[0].iter().enumerate() {
        let vals: Vec<f64> = cols.iter().map(|c| c[i].1).collect();
        let mean = vals.iter().sum::<f64>() / n;
        let (lo, hi) = vals
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
        spread_pct.insert(
            name.to_string(),
            if mean > 0.0 {
                (hi - lo) / mean * 100.0
            } else {
                0.0
            },
        );
        let round = |v: f64| v.round() as u64;
        match *name {
            "api_requests_total" => result.api_requests_total = round(mean),
            "thor_agent_requests" => result.thor_agent_requests = round(mean),
            "thor_agent_writes" => result.thor_agent_writes = round(mean),
            "etcd_writes_total" => result.etcd_writes_total = round(mean),
            "pods_created" => result.pods_created = round(mean),
            "containers_created" => result.containers_created = round(mean),
            "pod_startup_ms.p99" => result.pod_startup_ms.p99 = mean,
            "instance_start_ms.p99" => result.instance_start_ms.p99 = mean,
            "wall_s" => result.wall_s = mean,
            _ => {}
        }
    }
    ModeSummary {
        result,
        repeats: runs,
        spread_pct,
    }
}

pub struct ThorBenchOptions {
    pub scenario: PathBuf,
    /// None: the scenario's modes.
    pub modes: Option<Vec<Mode>>,
    pub repeat: u32,
    pub bins: BTreeMap<Component, PathBuf>,
    /// Name prefix of the clusters (each mode gets a fresh one).
    pub cluster_prefix: String,
}

/// Run every mode (× repeats), each on a fresh cluster torn down after.
pub async fn bench_thor(opts: &ThorBenchOptions) -> Result<ThorResult> {
    let s = load_scenario(&opts.scenario)?;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    let k8s = crate::k8s::K8sRelease::parse(&s.cluster.k8s_minor)?;
    let tools = lifecycle::resolve_tools(k8s, opts.bins.clone()).await?;
    let kubectl = tools.path(Component::Kubectl)?.to_path_buf();
    let started = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut summaries = BTreeMap::new();
    for mode in modes {
        let mut runs = Vec::new();
        for rep in 0..opts.repeat.max(1) {
            let name = format!("{}-{}-{rep}", opts.cluster_prefix, mode.name());
            let spec = ClusterSpec {
                name: name.clone(),
                k8s_minor: k8s.minor.into(),
                // Gang mode needs the release's gang feature set.
                feature_gates: if mode == Mode::JobsetGang {
                    k8s.gang_feature_gates()
                } else {
                    Default::default()
                },
                runtime_config: if mode == Mode::JobsetGang {
                    k8s.gang_runtime_config()
                } else {
                    Default::default()
                },
                nodes: NodeSpec {
                    count: s.cluster.nodes as usize,
                    cpu: s.cluster.node_cpu.clone(),
                    memory: s.cluster.node_memory.clone(),
                    pods: s.cluster.node_pods,
                },
            };
            let cluster = lifecycle::up(&UpOptions {
                spec,
                bins: opts.bins.clone(),
                timeout: Duration::from_secs(180),
            })
            .await?;
            let step = Step::start(format!(
                "{} × Thor {} ({} workers, {} at a time) in {} mode{}",
                s.instances,
                s.name,
                s.thor.num_workers,
                s.thor.max_graphs,
                mode.name(),
                if opts.repeat > 1 {
                    format!(", run {}/{}", rep + 1, opts.repeat)
                } else {
                    String::new()
                }
            ));
            let r = run_mode(&cluster, &s, mode, &kubectl).await;
            let down = cluster.down(false);
            let r = r.with_context(|| format!("{} mode on cluster {name}", mode.name()))?;
            down?;
            step.done(&format!(
                "{} API requests, {} etcd writes",
                r.api_requests_total, r.etcd_writes_total
            ));
            runs.push(r);
        }
        summaries.insert(mode.name().to_string(), summarize(runs));
    }
    Ok(ThorResult {
        schema: RESULT_SCHEMA.into(),
        scenario: s.name.clone(),
        scenario_file: opts.scenario.display().to_string(),
        provider: "local".into(),
        k8s_version: k8s.version.into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started,
        num_workers: s.thor.num_workers,
        num_workers_per_pod: s.thor.num_workers_per_pod,
        max_graphs: s.thor.max_graphs,
        graph_duration: s.graph_duration.clone(),
        modes: summaries,
        harness_peak_rss_kib: peak_rss_kib(),
    })
}
