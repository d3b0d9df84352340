//! `harness bench thor`: each mode of a scenario on a fresh local cluster,
//! the Thor drivers inside one measurement window, as one Result
//! (`result`), rendered by `report` and judged against a stored baseline by
//! `baseline`.

pub mod baseline;
pub mod compare;
pub mod report;
pub mod result;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cluster::local::LocalCluster;
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::pods::{self, PodTracker};
use crate::metrics::{Percentiles, Window};
use crate::poll::Poll;
use crate::progress::Step;
use crate::tools::Component;
use crate::workload::thor::driver::{self, ThorEnv};
use crate::workload::thor::scenario::{self, ThorScenario, parse_duration};
use crate::workload::thor::{self, Mode, THOR_AGENT_USER, ThorParams};
use result::{ModeResult, RESULT_SCHEMA, ThorResult, peak_rss_kib, summarize};

pub const NAMESPACE: &str = "thor";

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
    let minor = K8sRelease::parse(&s.cluster.k8s_minor)?.minor_number();
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
    Poll::new(
        format!("namespace {NAMESPACE}'s default service account"),
        Duration::from_secs(30),
    )
    .until(|| async { Ok(sa.get_opt("default").await?.map(|_| ())) })
    .await?;
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

    let window = Window::open(cluster).await?;
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
    let closed = window.close(cluster).await?;
    drop(env);

    let pf = pods::figures(&tracker.snapshot());
    let starts: Vec<f64> = instances.iter().filter_map(|i| i.start_ms).collect();
    let walls: Vec<f64> = instances.iter().map(|i| i.wall_ms).collect();
    let instance_start_ms = Percentiles::of_ms(&starts);
    let w = closed.figures;
    let thor_agent_writes = w
        .api_requests_by_client_request
        .get(THOR_AGENT_USER)
        .map_or(0, |reqs| {
            reqs.iter()
                .filter(|(req, _)| crate::metrics::attribution::is_write_request(req))
                .map(|(_, n)| n)
                .sum()
        });
    Ok(ModeResult {
        mode: mode.name().into(),
        instances: s.instances,
        thor_agent_requests: w
            .api_requests_by_client
            .get(THOR_AGENT_USER)
            .copied()
            .unwrap_or(0),
        thor_agent_writes,
        window: w,
        pods_created: pf.pods_created,
        containers_created: pf.containers_created,
        pod_startup_ms: pf.startup_ms,
        pod_schedule_ms: pf.schedule_ms,
        gang_start_ms: (mode == Mode::JobsetGang).then_some(instance_start_ms),
        instance_start_ms,
        instance_wall_s: Percentiles::of_ms(&walls).scaled(0.001),
        wall_s: closed.elapsed.as_secs_f64(),
    })
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

/// The cluster a mode runs on: the scenario's nodes, and for gang mode the
/// release's gang feature set.
fn mode_cluster(s: &ThorScenario, k8s: K8sRelease, mode: Mode, name: String) -> ClusterSpec {
    let gang = mode == Mode::JobsetGang;
    ClusterSpec {
        name,
        k8s_minor: k8s.minor.into(),
        feature_gates: if gang {
            k8s.gang_feature_gates()
        } else {
            Default::default()
        },
        runtime_config: if gang {
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
    }
}

/// Run every mode (× repeats), each on a fresh cluster torn down after.
pub async fn bench_thor(opts: &ThorBenchOptions) -> Result<ThorResult> {
    let s = scenario::load(&opts.scenario)?;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    let k8s = K8sRelease::parse(&s.cluster.k8s_minor)?;
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
            let cluster = lifecycle::up(&UpOptions {
                spec: mode_cluster(&s, k8s, mode, name.clone()),
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
                r.window.api_requests_total, r.window.etcd_writes_total
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

/// A run checked against its stored baseline.
pub struct Comparison {
    pub baseline: PathBuf,
    pub verdicts: Vec<compare::Verdict>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.verdicts.iter().any(|v| !v.pass)
    }
}

/// Compare `r` with `baselines/<provider>/<minor>/<scenario>.json` under
/// `root`; with `counts_only` latencies are shown but not judged. Writes
/// compare.md and compare-junit.xml into `out`.
pub fn compare(root: &Path, r: &ThorResult, counts_only: bool, out: &Path) -> Result<Comparison> {
    let path = baseline::path_for(root, r);
    let base = baseline::load(&path)?;
    let mut verdicts = compare::compare(&base, r);
    if counts_only {
        compare::not_judging_latency(&mut verdicts);
    }
    let md = report::compare_markdown(&verdicts, &path);
    crate::output::write_atomic(&out.join("compare.md"), &md)?;
    crate::output::write_atomic(
        &out.join("compare-junit.xml"),
        report::compare_junit(&verdicts),
    )?;
    Ok(Comparison {
        baseline: path,
        verdicts,
    })
}

/// Store `r` as the baseline under `root`, naming the scenario file
/// relative to the repository when it lies inside it. Returns the path.
pub fn record(root: &Path, r: &ThorResult, scenario: &Path) -> Result<PathBuf> {
    let path = baseline::path_for(root, r);
    let relative = scenario
        .canonicalize()
        .ok()
        .and_then(|p| {
            p.strip_prefix(root.canonicalize().ok()?)
                .ok()
                .map(Path::to_path_buf)
        })
        .unwrap_or(scenario.to_path_buf());
    baseline::record(&path, r, &relative.display().to_string())?;
    Ok(path)
}
