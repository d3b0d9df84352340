//! The Thor benchmark's runs: what each run of a mode measured beyond
//! the figures every run has (HPCC's identities and their kubectl calls,
//! instances and their start, the call plan, contention), and the run
//! set's shape. Their metrics and what the benchmark core needs of them
//! are `bench::thor::metrics`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::Results;
use crate::metrics::Percentiles;
use crate::metrics::pods::PodRates;

/// One run of one mode (the headline keys are those of docs/src/reports.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    /// What every run has: its mode, the window's figures, pods created
    /// and their start-up, its wall time.
    #[serde(flatten)]
    pub run: RunFigures,
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
    /// pprof files taken during this run (`--profile`), in profiles/.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<String>,
    /// Instances competing for room: those that failed or deadlocked, the
    /// room held in vain (`bench::thor::contention`). Present when the
    /// scenario gives `capacity` or an instance failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<crate::bench::thor::contention::Contention>,
}

/// What a Thor result says of its whole run set: the scenario's shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThorShape {
    pub num_workers: u32,
    pub num_workers_per_pod: u32,
    pub max_graphs: u32,
    pub graph_duration: String,
}

/// A Thor benchmark's Result.
pub type ThorResult = Results<ModeResult>;
pub use crate::bench::core::result::{ModeSummary, Statistics};

pub const RESULT_SCHEMA: &str = "harness.thor-result/v1";

/// API requests of every client but HPCC's (the Thor agent and
/// eclccserver identities).
pub const OTHERS: &str = "api_requests_others";

fn thor_agent_user() -> String {
    crate::workload::thor::THOR_AGENT_USER.to_string()
}

/// A one-mode result for tests of the renderers and the baseline policy.
#[cfg(test)]
pub fn sample_result(requests: u64, p99: f64) -> ThorResult {
    let mut m = ModeResult {
        run: RunFigures {
            mode: "baseline".into(),
            window: crate::metrics::WindowFigures {
                api_requests_total: requests,
                etcd_writes_total: 200,
                ..Default::default()
            },
            pods_created: 12,
            containers_created: 24,
            wall_s: 20.0,
            ..Default::default()
        },
        instances: 4,
        thor_agent_requests: 100,
        thor_agent_writes: 12,
        ..Default::default()
    };
    m.run.pod_startup_ms.p99 = p99;
    m.instance_start_ms.p99 = 500.0;
    m.run.window.objects_created.insert("jobs".into(), 8);
    ThorResult {
        schema: RESULT_SCHEMA.into(),
        scenario: "smoke".into(),
        scenario_file: "suites/thor/smoke.yaml".into(),
        provider: "local".into(),
        k8s_version: "1.37.1".into(),
        harness_version: "0.1.0".into(),
        started: "2026-11-21T00:00:00Z".into(),
        shape: ThorShape {
            num_workers: 2,
            num_workers_per_pod: 1,
            max_graphs: 2,
            graph_duration: "3s".into(),
        },
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
    use crate::bench::core::result::summarize;
    use crate::bench::thor::result::{ModeResult, ModeSummary};
    use crate::stats::{Direction, synthetic};

    /// Rounds of two modes: jobset makes `shift` × baseline's requests
    /// (each with ±3 % noise of its own), the same pods.
    fn two_modes(rounds: usize, shift: f64) -> super::ThorResult {
        let mut r = super::sample_result(0, 0.0);
        let run = |mode: &str, requests: f64| {
            let mut m = r.modes["baseline"].result.clone();
            m.run.mode = mode.into();
            m.run.window.api_requests_total = requests.round() as u64;
            m
        };
        let base = synthetic(2600.0, 0.03, rounds, 11);
        let other = synthetic(2600.0 * shift, 0.03, rounds, 12);
        let b: Vec<ModeResult> = base.iter().map(|x| run("baseline", *x)).collect();
        let j: Vec<ModeResult> = other.iter().map(|x| run("jobset", *x)).collect();
        r.modes.insert("baseline".into(), summarize(b));
        r.modes.insert("jobset".into(), summarize(j));
        r.statistics = Some(super::Statistics::new(
            1,
            vec![vec!["baseline".into(), "jobset".into()]; rounds],
            "baseline".into(),
        ));
        r.judge_modes();
        r
    }

    #[test]
    fn modes_get_medians_ranges_and_judged_ratios_to_the_reference() {
        let r = two_modes(8, 1.15);
        let j: &ModeSummary<ModeResult> = &r.modes["jobset"];
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
        // The report shows it, with the test's p, n and what it could see.
        let md = crate::bench::core::report::markdown::markdown(&two_modes(4, 1.15));
        assert!(md.contains("4 rounds, interleaved (seed 1"), "{md}");
        assert!(md.contains("↑ +") && md.contains(" n=4)"), "{md}");
        assert!(md.contains("could see ±"), "{md}");
        assert!(
            md.contains("jobset ÷ baseline: Family-wise (Holm over the ")
                && md.contains("differ: `api_requests_total`"),
            "{md}"
        );
        let html = crate::bench::core::report::markdown::html(&[two_modes(4, 1.15)]);
        assert!(html.contains("class=\"range\""));
        // report.html leads with the answer: the headline table and the
        // verdicts before the first chart, the detail tables after them.
        let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("{what}: {html}"));
        assert!(at("<table>") < at("<svg"));
        assert!(at("↑ +") < at("<svg"));
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
            m.run.window.etcd.put_bytes = bytes;
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
        assert_eq!(r.run.window.etcd.put_bytes, 200);
        assert!((s.spread_pct["thor_agent_requests"] - 54.0 / 1056.0 * 100.0).abs() < 1e-9);
    }
}

/// The core's checks of what a saved result claims (`Statistics::check`)
/// and its re-judging of an older shape, on Thor's results (here, so the
/// core does not import a workload).
#[cfg(test)]
mod core_reading {
    use crate::bench::core::result::*;
    use crate::bench::thor::result::{ThorResult, sample_result};
    use crate::stats;

    /// `r` written and read back with `edit` applied to its JSON: the
    /// reader's error, or the result.
    fn read_edited(
        r: &ThorResult,
        edit: impl FnOnce(&mut serde_json::Value),
    ) -> Result<ThorResult, String> {
        let mut v = serde_json::to_value(r).unwrap();
        edit(&mut v);
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    fn a_shard() -> ThorResult {
        let mut r = sample_result(100, 0.5);
        r.statistics = Some(Statistics {
            shard: Some(ShardOf {
                k: 1,
                n: 2,
                first: 0,
                of: 4,
            }),
            ..Statistics::new(7, vec![vec!["baseline".into()]; 2], "baseline".into())
        });
        r
    }

    #[test]
    fn a_result_claiming_counts_that_do_not_fit_is_refused_naming_the_field() {
        let r = a_shard();
        assert!(read_edited(&r, |_| {}).is_ok());
        let big = serde_json::json!(u64::MAX);
        let cases: Vec<(&str, serde_json::Value, &str)> = vec![
            (
                "/statistics/shard/n",
                0.into(),
                "statistics.shard.n: 0 shards",
            ),
            (
                "/statistics/shard/k",
                0.into(),
                "statistics.shard.k: shard 0 of 2",
            ),
            (
                "/statistics/shard/k",
                3.into(),
                "statistics.shard.k: shard 3 of 2",
            ),
            (
                "/statistics/shard/of",
                (1u64 << 32).into(),
                "statistics.shard.of",
            ),
            (
                "/statistics/shard/first",
                3.into(),
                "statistics.shard.first: rounds from 3 on",
            ),
            (
                "/statistics/shard/of",
                1.into(),
                "statistics.shard.n: 2 shards of 1",
            ),
            (
                "/statistics/shard/first",
                big.clone(),
                "statistics.shard.first",
            ),
            (
                "/statistics/lost_rounds",
                serde_json::json!([big]),
                "statistics.lost_rounds[0]",
            ),
            ("/statistics/confidence", 0.into(), "statistics.confidence"),
        ];
        for (at, value, says) in cases {
            let (parent, key) = at.rsplit_once('/').unwrap();
            let e = read_edited(&r, |v| {
                v.pointer_mut(parent).unwrap()[key] = value.clone();
            })
            .expect_err(at);
            assert!(e.contains(says), "{at}: {e}");
        }
        let mut merged = sample_result(100, 0.5);
        merged.statistics = Some(Statistics::new(
            7,
            vec![vec!["baseline".into()]; 2],
            "b".into(),
        ));
        let e =
            read_edited(
                &merged,
                |v| {
                    v["statistics"]["merged"] =
                        serde_json::json!([{"k": 1, "rounds": [0, 2], "started": "", "from": "a"}])
                },
            )
            .unwrap_err();
        assert!(e.contains("statistics.merged[0].rounds[1]: round 2"), "{e}");
        let e =
            read_edited(
                &merged,
                |v| {
                    v["statistics"]["merged"] =
                        serde_json::json!([{"k": 0, "rounds": [0], "started": "", "from": "a"}])
                },
            )
            .unwrap_err();
        assert!(e.contains("statistics.merged[0].k"), "{e}");
    }

    /// A result saved before repeats were kept (`repeats: []`) is judged
    /// again without a panic, keeping the ratios it was saved with.
    #[test]
    fn a_result_without_repeats_is_judged_again_keeping_its_ratios() {
        let mut r = sample_result(100, 0.5);
        let mut other = r.modes["baseline"].clone();
        other.vs_reference.insert(
            "api_requests_total".into(),
            stats::judge(&[1.0, 1.1, 0.9], &[2.0, 2.1, 1.9], true, stats::Rule::COUNT).unwrap(),
        );
        r.modes.insert("jobset".into(), other);
        for m in r.modes.values_mut() {
            m.repeats.clear();
        }
        let before = r.clone();
        for sum in r.modes.values_mut() {
            let fresh = summarize(sum.repeats.clone());
            assert!(fresh.stats.is_empty() && fresh.spread_pct.is_empty());
        }
        r.judge_modes();
        assert_eq!(r, before);
    }
}
