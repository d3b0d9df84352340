//! The Thor benchmark's Result (DESIGN.md's contract): one mode's figures,
//! the summary over repeats, the whole run. Renderers and the baseline
//! policy import these types, never the orchestrator. The JSON keys are
//! documented in the README and are added, never renamed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::pods::PodRates;
use crate::metrics::timeline::Timeline;
use crate::metrics::{Percentiles, WindowFigures};

/// One mode's figures (the headline keys are DESIGN.md's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    pub mode: String,
    /// Thor instances launched (a lingering manager runs further graphs,
    /// so there can be fewer instances than graphs).
    pub instances: u32,
    /// Workunits and graphs run, compile Jobs launched.
    #[serde(default)]
    pub workunits: u32,
    #[serde(default)]
    pub graphs: u32,
    #[serde(default)]
    pub compile_jobs: u32,
    /// What the control plane did: requests per client, latency, etcd,
    /// objects (the same keys in every workload's result).
    #[serde(flatten)]
    pub window: WindowFigures,
    /// The Thor identity's own requests (thoragent + manager). Includes
    /// status polls with HPCC's backoff and kubectl's discovery, so it
    /// moves with timing by a few percent.
    pub thor_agent_requests: u64,
    /// The user name the Thor identity has on the cluster ("thor-agent",
    /// a client certificate, on the harness's own clusters; a
    /// ServiceAccount's on an existing cluster).
    #[serde(default = "thor_agent_user")]
    pub thor_agent_user: String,
    /// Of those, the writes (create, update, patch, delete): what the
    /// driver decides to do, independent of timing.
    #[serde(default)]
    pub thor_agent_writes: u64,
    /// What the Thor identity's call list predicts it costs (its kubectl
    /// calls priced by workload::thor::kubectl from the server's
    /// discovery); the measured count is checked against it.
    #[serde(default)]
    pub thor_agent_requests_predicted: u64,
    /// The Thor identity's kubectl calls by kind.
    #[serde(default)]
    pub thor_agent_calls: BTreeMap<String, u64>,
    /// eclccserver's requests (its compile Jobs).
    #[serde(default)]
    pub eclccserver_requests: u64,
    #[serde(default)]
    pub eclccserver_requests_predicted: u64,
    pub pods_created: u64,
    pub containers_created: u64,
    /// Pod created → Running (ms), from the watch.
    pub pod_startup_ms: Percentiles,
    pub pod_schedule_ms: Percentiles,
    /// First pod of an instance created → its last pod Running (ms).
    pub instance_start_ms: Percentiles,
    /// The same, for modes that schedule an instance as a gang.
    pub gang_start_ms: Option<Percentiles>,
    /// An instance's worker pods per second created, bound and Running
    /// (first worker created → last to reach the step), mean over the
    /// instances.
    #[serde(default)]
    pub worker_pod_rates: PodRates,
    pub instance_wall_s: Percentiles,
    pub wall_s: f64,
    /// pprof files taken during this run (`--profile`), in profiles/.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<String>,
    /// Instances competing for room: those that failed or deadlocked, the
    /// room held in vain (`bench::thor::contention`). Present when the
    /// scenario gives `capacity` or an instance failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<crate::bench::thor::contention::Contention>,
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
    /// How the scenario modelled HPCC and the nodes: kubectl version and
    /// discovery cache, kubelet model, JobSet DNS hostnames, compile Jobs,
    /// linger.
    #[serde(default)]
    pub model: BTreeMap<String, String>,
    pub modes: BTreeMap<String, ModeSummary>,
    /// The harness process's own peak resident memory (VmHWM), in KiB;
    /// the control-plane processes are not included.
    #[serde(default)]
    pub harness_peak_rss_kib: u64,
    /// What the cluster offered, probed before the run (existing clusters
    /// only): results with different sets are not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<crate::cluster::existing::probe::Capabilities>,
    /// Each run's metrics over time as (mode, repeat, timeline): written
    /// beside result.json as timeline.json and timeline.csv, drawn in
    /// report.html; not part of result.json (they are long).
    #[serde(skip)]
    pub timelines: Vec<(String, usize, Timeline)>,
}

fn thor_agent_user() -> String {
    crate::workload::thor::THOR_AGENT_USER.to_string()
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

/// Headline numbers that get means and spreads over repeats.
pub fn headline(r: &ModeResult) -> Vec<(&'static str, f64)> {
    vec![
        ("api_requests_total", r.window.api_requests_total as f64),
        ("thor_agent_requests", r.thor_agent_requests as f64),
        ("thor_agent_writes", r.thor_agent_writes as f64),
        (
            "thor_agent_requests_predicted",
            r.thor_agent_requests_predicted as f64,
        ),
        ("eclccserver_requests", r.eclccserver_requests as f64),
        (
            "eclccserver_requests_predicted",
            r.eclccserver_requests_predicted as f64,
        ),
        ("etcd_writes_total", r.window.etcd_writes_total as f64),
        ("etcd.put_bytes", r.window.etcd.put_bytes as f64),
        ("apiserver_etcd_cpu_s", r.window.apiserver_etcd_cpu_s),
        ("pods_created", r.pods_created as f64),
        ("containers_created", r.containers_created as f64),
        ("pod_startup_ms.p99", r.pod_startup_ms.p99),
        ("instance_start_ms.p99", r.instance_start_ms.p99),
        ("wall_s", r.wall_s),
    ]
}

pub fn summarize(runs: Vec<ModeResult>) -> ModeSummary {
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
            "api_requests_total" => result.window.api_requests_total = round(mean),
            "thor_agent_requests" => result.thor_agent_requests = round(mean),
            "thor_agent_writes" => result.thor_agent_writes = round(mean),
            "thor_agent_requests_predicted" => result.thor_agent_requests_predicted = round(mean),
            "eclccserver_requests" => result.eclccserver_requests = round(mean),
            "eclccserver_requests_predicted" => result.eclccserver_requests_predicted = round(mean),
            "etcd.put_bytes" => result.window.etcd.put_bytes = round(mean),
            "apiserver_etcd_cpu_s" => result.window.apiserver_etcd_cpu_s = mean,
            "etcd_writes_total" => result.window.etcd_writes_total = round(mean),
            "pods_created" => result.pods_created = round(mean),
            "containers_created" => result.containers_created = round(mean),
            "pod_startup_ms.p99" => result.pod_startup_ms.p99 = mean,
            "instance_start_ms.p99" => result.instance_start_ms.p99 = mean,
            "wall_s" => result.wall_s = mean,
            _ => {}
        }
    }
    let rates: Vec<PodRates> = runs.iter().map(|r| r.worker_pod_rates).collect();
    result.worker_pod_rates = PodRates::mean(&rates);
    ModeSummary {
        result,
        repeats: runs,
        spread_pct,
    }
}

/// A one-mode result for tests of the renderers and the baseline policy.
#[cfg(test)]
pub fn sample_result(requests: u64, p99: f64) -> ThorResult {
    let mut m = ModeResult {
        mode: "baseline".into(),
        instances: 4,
        window: crate::metrics::WindowFigures {
            api_requests_total: requests,
            etcd_writes_total: 200,
            ..Default::default()
        },
        thor_agent_requests: 100,
        thor_agent_writes: 12,
        pods_created: 12,
        containers_created: 24,
        wall_s: 20.0,
        ..Default::default()
    };
    m.pod_startup_ms.p99 = p99;
    m.instance_start_ms.p99 = 500.0;
    m.window.objects_created.insert("jobs".into(), 8);
    ThorResult {
        schema: RESULT_SCHEMA.into(),
        scenario: "smoke".into(),
        scenario_file: "suites/thor/smoke.yaml".into(),
        provider: "local".into(),
        k8s_version: "1.37.1".into(),
        harness_version: "0.1.0".into(),
        started: "2026-11-21T00:00:00Z".into(),
        num_workers: 2,
        num_workers_per_pod: 1,
        max_graphs: 2,
        graph_duration: "3s".into(),
        harness_peak_rss_kib: 0,
        capabilities: None,
        timelines: Vec::new(),
        model: Default::default(),
        modes: [(
            "baseline".to_string(),
            ModeSummary {
                result: m.clone(),
                repeats: vec![m],
                spread_pct: Default::default(),
            },
        )]
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use crate::bench::thor::result::{ModeResult, summarize};

    #[test]
    fn repeats_average_measured_and_predicted_alike() {
        let run = |measured: u64, predicted: u64, bytes: u64| {
            let mut m = ModeResult {
                thor_agent_requests: measured,
                thor_agent_requests_predicted: predicted,
                eclccserver_requests: measured + 1,
                eclccserver_requests_predicted: predicted + 1,
                ..Default::default()
            };
            m.window.etcd.put_bytes = bytes;
            m
        };
        let s = summarize(vec![run(1029, 1029, 100), run(1083, 1083, 300)]);
        let r = &s.result;
        assert_eq!(
            (r.thor_agent_requests, r.thor_agent_requests_predicted),
            (1056, 1056)
        );
        assert_eq!(
            (r.eclccserver_requests, r.eclccserver_requests_predicted),
            (1057, 1057)
        );
        assert_eq!(r.window.etcd.put_bytes, 200);
        assert!((s.spread_pct["thor_agent_requests"] - 54.0 / 1056.0 * 100.0).abs() < 1e-9);
    }
}
