//! The Thor benchmark's Result (DESIGN.md's contract): one mode's figures,
//! the summary over repeats, the whole run. Renderers and the baseline
//! policy import these types, never the orchestrator. The JSON keys are
//! documented in docs/src/reports.md and are added, never renamed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::pods::PodRates;
use crate::metrics::timeline::Timeline;
use crate::metrics::{Percentiles, WindowFigures};
use crate::stats;

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
    /// The Thor identity's calls by purpose (polls apart from one-off
    /// reads: `workload::thor::driver::callplan::purpose`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thor_agent_calls_by_purpose: BTreeMap<String, u64>,
    /// What the plan bound needs: objects per instance and each
    /// instance's life (`callplan::expected` gives the bounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_plan: Option<crate::workload::thor::driver::callplan::PlanInputs>,
    /// eclccserver's requests (its compile Jobs).
    #[serde(default)]
    pub eclccserver_requests: u64,
    /// eclccserver's kubectl calls by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub eclccserver_calls: BTreeMap<String, u64>,
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
    /// The mode as one run: the mean of the repeats, field by field
    /// (bench::thor::typical).
    pub result: ModeResult,
    pub repeats: Vec<ModeResult>,
    /// (max − min) / mean × 100 over repeats, per headline key.
    pub spread_pct: BTreeMap<String, f64>,
    /// Per metric ([`metrics`]) over the repeats: n, median, min, max,
    /// mean, coefficient of variation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stats: BTreeMap<String, stats::Spread>,
    /// Per metric, this mode ÷ the reference mode ([`Statistics`]): the
    /// ratio with its 95 % interval and the verdict (the reference mode
    /// itself has none). Metrics whose reference median is 0 are left
    /// out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vs_reference: BTreeMap<String, stats::Judged>,
}

impl ModeSummary {
    /// The mode's runs: its repeats, or the one result of a run saved
    /// before repeats were kept.
    pub fn runs(&self) -> &[ModeResult] {
        if self.repeats.is_empty() {
            std::slice::from_ref(&self.result)
        } else {
            &self.repeats
        }
    }
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
    /// How the runs were ordered and compared (`--repeat`, `--seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<Statistics>,
    /// The machine the runs were measured on (`crate::machine`): a
    /// baseline keeps it, and latencies are judged only on one alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::Machine>,
}

/// How the modes' runs were ordered and how their ratios were computed:
/// enough to replay the run set (`--seed`) and to read the intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statistics {
    /// The seed of the run order.
    pub seed: u64,
    /// The modes in the order they ran, one list per round (each round's
    /// runs on fresh clusters).
    pub rounds: Vec<Vec<String>>,
    /// The mode every other is divided by.
    pub reference: String,
    /// The interval's method, named.
    pub method: String,
    pub resamples: usize,
    pub confidence: f64,
    /// The bootstrap's seed (fixed: the samples decide the interval).
    pub bootstrap_seed: u64,
    /// The minimum effects: relative for counts, relative + absolute floor
    /// for latencies and times, per metric family.
    pub rule: String,
}

/// The method the `statistics` block names.
pub const METHOD: &str = "percentile bootstrap of the median of per-round ratios (paired by round; rounds assumed exchangeable, no distribution assumed); verdict lower/higher only when the 95 % interval excludes 1 and the effect exceeds the metric's minimum";
/// The minimum effects, as the report states them.
pub const RULE_TEXT: &str = "counts and bytes: 2 %; latencies, times and CPU: 5 % and a noise floor (API p99 50 ms, SLO-class p99 250 ms, pod and instance start-up 1000 ms, wall 5 s, kube-apiserver + etcd CPU 2 s, kube-controller-manager's client-side throttling 1 s)";

/// Seconds kube-controller-manager's requests waited on its own QPS
/// limit (metrics::throttle): a controller manager paced by
/// `--kube-api-qps` makes no more requests, it makes them later.
pub const KCM_WAIT: &str = "kcm_client_wait_s";

/// [`KCM_WAIT`] of a run; None where the provider does not serve the
/// controller manager's metrics.
pub fn kcm_wait_s(r: &ModeResult) -> Option<f64> {
    r.window
        .client_throttle
        .get(crate::metrics::window::KCM)
        .map(|t| t.waited_s)
}

/// The minimum effect of a metric (by its name in [`metrics`] and in
/// baselines): one table for mode ratios and `--compare`.
pub fn rule_of(name: &str) -> stats::Rule {
    if name.starts_with("api_latency_ms.") {
        stats::Rule::latency(50.0)
    } else if name.starts_with("api_slo_p99_ms.") {
        stats::Rule::latency(250.0)
    } else if name.starts_with("pod_startup_ms.")
        || name.starts_with("instance_start_ms.")
        || name.starts_with("gang_start_ms.")
        || name.starts_with("pod_schedule_ms.")
    {
        stats::Rule::latency(1000.0)
    } else if name == "wall_s" {
        stats::Rule::latency(5.0)
    } else if name == "apiserver_etcd_cpu_s" {
        stats::Rule::latency(2.0)
    } else if name == KCM_WAIT {
        stats::Rule::latency(1.0)
    } else {
        stats::Rule::COUNT
    }
}

/// Counts the scenario fixes: every run of unchanged code makes exactly
/// as many (a baseline judges them exactly).
pub fn is_deterministic(name: &str) -> bool {
    matches!(
        name,
        "pods_created"
            | "containers_created"
            | "thor_agent_writes"
            | "instances"
            | "workunits"
            | "graphs"
            | "compile_jobs"
    ) || name.starts_with("objects_created.")
}

/// Every metric that gets a spread and a ratio: the headline, the API
/// latency p99s, and the Thor identity's kubectl calls per kind.
pub fn metrics(r: &ModeResult) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = headline(r)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    for (class, p) in &r.window.api_latency_ms {
        v.push((format!("api_latency_ms.{class}.p99"), p.p99));
    }
    for (call, n) in &r.thor_agent_calls {
        v.push((format!("thor_agent_calls.{call}"), *n as f64));
    }
    for (call, n) in &r.eclccserver_calls {
        v.push((format!("eclccserver_calls.{call}"), *n as f64));
    }
    if let Some(w) = kcm_wait_s(r) {
        v.push((KCM_WAIT.to_string(), w));
    }
    v
}

/// Each metric's values over `runs`, in run order (a run without the
/// metric contributes nothing).
pub fn samples(runs: &[ModeResult]) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (k, v) in metrics(r) {
            out.entry(k).or_default().push(v);
        }
    }
    out
}

impl ThorResult {
    /// A Thor benchmark's Result (not `harness measure`'s figures, which
    /// share the shape but have no Thor instances).
    pub fn is_thor(&self) -> bool {
        self.schema == RESULT_SCHEMA
    }

    /// The mode the others are divided by: baseline when it ran, else
    /// the one `statistics` names, else the first.
    pub fn reference_mode(&self) -> Option<&str> {
        if self.modes.contains_key("baseline") {
            Some("baseline")
        } else if let Some(r) = self
            .statistics
            .as_ref()
            .map(|s| s.reference.as_str())
            .filter(|r| self.modes.contains_key(*r))
        {
            Some(r)
        } else {
            self.modes.keys().next().map(String::as_str)
        }
    }

    /// Fill every mode's `vs_reference` by the one rule (paired by round
    /// when both ran the same rounds).
    pub fn judge_modes(&mut self) {
        let Some(reference) = self.reference_mode().map(str::to_string) else {
            return;
        };
        let base = samples(&self.modes[&reference].repeats);
        for (mode, sum) in self.modes.iter_mut() {
            sum.vs_reference.clear();
            if *mode == reference {
                continue;
            }
            for (metric, b) in samples(&sum.repeats) {
                let Some(a) = base.get(&metric) else { continue };
                if stats::median(a) == 0.0 {
                    continue;
                }
                let paired = a.len() == b.len();
                if let Some(j) = stats::judge(a, &b, paired, rule_of(&metric))
                    && j.ratio.ci_low.is_finite()
                    && j.ratio.ci_high.is_finite()
                {
                    sum.vs_reference.insert(metric, j);
                }
            }
        }
    }
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
        statistics: None,
        machine: None,
        model: Default::default(),
        modes: [(
            "baseline".to_string(),
            ModeSummary {
                result: m.clone(),
                repeats: vec![m],
                spread_pct: Default::default(),
                stats: Default::default(),
                vs_reference: Default::default(),
            },
        )]
        .into(),
    }
}

#[cfg(test)]
mod tests {
    use crate::bench::thor::result::{ModeResult, ModeSummary};
    use crate::bench::thor::typical::summarize;
    use crate::stats::{Direction, synthetic};

    /// Rounds of two modes: jobset makes `shift` × baseline's requests
    /// (each with ±3 % noise of its own), the same pods.
    fn two_modes(rounds: usize, shift: f64) -> super::ThorResult {
        let mut r = super::sample_result(0, 0.0);
        let run = |mode: &str, requests: f64| {
            let mut m = r.modes["baseline"].result.clone();
            m.mode = mode.into();
            m.window.api_requests_total = requests.round() as u64;
            m
        };
        let base = synthetic(2600.0, 0.03, rounds, 11);
        let other = synthetic(2600.0 * shift, 0.03, rounds, 12);
        let b: Vec<ModeResult> = base.iter().map(|x| run("baseline", *x)).collect();
        let j: Vec<ModeResult> = other.iter().map(|x| run("jobset", *x)).collect();
        r.modes.insert("baseline".into(), summarize(b));
        r.modes.insert("jobset".into(), summarize(j));
        r.statistics = Some(super::Statistics {
            seed: 1,
            rounds: vec![vec!["baseline".into(), "jobset".into()]; rounds],
            reference: "baseline".into(),
            method: super::METHOD.into(),
            resamples: crate::stats::RESAMPLES,
            confidence: crate::stats::CONFIDENCE,
            bootstrap_seed: crate::stats::SEED,
            rule: super::RULE_TEXT.into(),
        });
        r.judge_modes();
        r
    }

    #[test]
    fn modes_get_medians_ranges_and_judged_ratios_to_the_reference() {
        let r = two_modes(8, 1.15);
        let j: &ModeSummary = &r.modes["jobset"];
        let req = j.vs_reference["api_requests_total"];
        assert_eq!(req.verdict, Direction::Higher, "{req:?}");
        assert!(req.ratio.paired && req.ratio.n == 8);
        assert!(
            req.ratio.ci_low > 1.05 && req.ratio.ci_high < 1.25,
            "{req:?}"
        );
        // The same pods in every round: a point interval at 1.
        let pods = j.vs_reference["pods_created"];
        assert_eq!(pods.verdict, Direction::Same);
        assert_eq!((pods.ratio.ci_low, pods.ratio.ci_high), (1.0, 1.0));
        // The reference has spreads but no ratios.
        assert!(r.modes["baseline"].vs_reference.is_empty());
        let st = &r.modes["baseline"].stats["api_requests_total"];
        assert_eq!(st.n, 8);
        assert!(st.min < st.median && st.median < st.max && st.cv_pct > 0.5);
        // A metric that is 0 in the reference gets no ratio (x/0).
        assert!(!j.vs_reference.contains_key("eclccserver_requests"));
        // Unshifted: no significant difference.
        let r = two_modes(8, 1.0);
        assert_eq!(
            r.modes["jobset"].vs_reference["api_requests_total"].verdict,
            Direction::Same
        );
        // JSON round trip (dashboards read the added keys).
        let json = serde_json::to_string(&two_modes(4, 1.15)).unwrap();
        let back: super::ThorResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, two_modes(4, 1.15));
        assert!(json.contains("\"vs_reference\"") && json.contains("\"ci_low\""));
        // The report shows it; with 4 rounds it warns the interval is narrow.
        let md = crate::bench::thor::report::markdown(&two_modes(4, 1.15), None);
        assert!(md.contains("4 rounds, interleaved (seed 1"), "{md}");
        assert!(md.contains("↑ higher"), "{md}");
        assert!(md.contains("narrower than its nominal 95 %"), "{md}");
        let html = crate::bench::thor::report::html(&[two_modes(4, 1.15)]);
        assert!(html.contains("class=\"range\""));
        // report.html leads with the answer: the headline table and the
        // verdicts before the first chart, the detail tables after them.
        let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("{what}: {html}"));
        assert!(at("<table>") < at("<svg"));
        assert!(at("↑ higher") < at("<svg"));
        assert!(at("<h3>API requests by client</h3>") > html.rfind("</svg>").unwrap());
    }

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
