//! What one round of `harness bench cron` measured, as a workload of the
//! core (`bench::core::result::Run`): the figures every run has (one
//! window over the K minutes: requests by client, etcd writes, objects)
//! and the scheduled runs in it, so its rounds, shards, merge, reports,
//! baselines and `--compare` are the core's, as Thor's and measure's are
//! (the book's docs/src/benchmarks/cron.md).

use serde::{Deserialize, Serialize};

use crate::bench::core::figures::RunFigures;
use crate::bench::core::metric::{Driver, Metric, Spec, Views};
use crate::bench::core::result::{Results, Run};

/// The one mode a cron run set has.
pub const MODE: &str = "cron";

/// The result's `schema` (Results of [`CronRun`]); the older shape,
/// `harness.cron-load/v1`, is read back by `bench::cron::v1`.
pub const SCHEMA: &str = "harness.cron-load/v2";

/// One round: the window's figures and the runs the CronJob controller
/// scheduled in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CronRun {
    #[serde(flatten)]
    pub figures: RunFigures,
    /// Jobs the CronJob controller created in the window (the audit log).
    pub scheduled_runs: u64,
}

/// The workload every round of a run set ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CronShape {
    pub tenants: u32,
    pub cronjobs: u32,
    pub minutes: u32,
    /// How long each scheduled run's pod runs on its fake node.
    pub pod_seconds: u32,
    /// tenants × cronjobs × minutes.
    pub expected_runs: u64,
}

pub type CronResult = Results<CronRun>;

/// Requests and writes per scheduled run (0 when nothing ran).
pub fn per_run(total: u64, runs: u64) -> f64 {
    if runs == 0 {
        0.0
    } else {
        total as f64 / runs as f64
    }
}

const SHOWN: Views = Views::HEADLINE
    .and(Views::JUDGED)
    .and(Views::KEPT)
    .and(Views::ROW)
    .and(Views::ROUNDS);

/// Why a scheduled run's cost follows the machine: the CronJob and Job
/// controllers' requests and status writes coalesce in their queues.
const COALESCE: &str = "the CronJob and Job controllers' status writes coalesce";

/// The scheduled runs and what each cost, then every common figure.
pub fn metrics() -> Vec<Metric<CronRun>> {
    let mut m = vec![
        Metric::one(
            Spec::new("scheduled_runs", "scheduled runs", "runs")
                .views(SHOWN)
                .driver(Driver::Workload),
            |r: &CronRun| r.scheduled_runs as f64,
        ),
        Metric::one(
            Spec::new(
                "api_requests_per_scheduled_run",
                "API requests / scheduled run",
                "requests",
            )
            .views(SHOWN)
            .driver(Driver::Pace(COALESCE)),
            |r: &CronRun| per_run(r.figures.window.api_requests_total, r.scheduled_runs),
        ),
        Metric::one(
            Spec::new(
                "etcd_writes_per_scheduled_run",
                "etcd writes / scheduled run",
                "writes",
            )
            .views(SHOWN)
            .driver(Driver::Pace(COALESCE)),
            |r: &CronRun| per_run(r.figures.window.etcd_writes_total, r.scheduled_runs),
        ),
    ];
    m.extend(crate::bench::core::figures::common().rest(|r: &CronRun| &r.figures));
    m
}

impl Run for CronRun {
    type Shape = CronShape;
    const SCHEMA: &'static str = SCHEMA;
    const TITLE: &'static str = "CronJob benchmark";

    fn metrics() -> Vec<Metric<Self>> {
        metrics()
    }

    fn figures(&self) -> &RunFigures {
        &self.figures
    }

    fn figures_mut(&mut self) -> &mut RunFigures {
        &mut self.figures
    }

    fn typical(runs: &[&Self]) -> Self {
        crate::metrics::combine::typical!(runs; CronRun { figures, scheduled_runs })
    }

    fn heading(r: &Results<Self>) -> String {
        let s = &r.shape;
        format!(
            "## Scheduled jobs (harness bench cron)\n\n\
             Kubernetes {}: {} tenants × {} CronJobs every minute (Forbid, history 1), \
             pods of {} s, for {} minute(s): {} scheduled runs expected a round.\n\n",
            r.k8s_version, s.tenants, s.cronjobs, s.pod_seconds, s.minutes, s.expected_runs
        )
    }

    fn per_run(_r: &Results<Self>) -> String {
        "per round".to_string()
    }

    /// Each client's requests per scheduled run, largest first (the
    /// typical round's).
    fn after_clients(r: &Results<Self>) -> String {
        let Some(m) = r.modes.get(MODE) else {
            return String::new();
        };
        let run = &m.result;
        let mut s = String::from(
            "\n#### Requests per scheduled run, by client\n\n| client | requests / scheduled run |\n|---|---:|\n",
        );
        for (c, n) in
            crate::metrics::attribution::largest_first(&run.figures.window.api_requests_by_client)
        {
            s.push_str(&format!(
                "| {c} | {:.2} |\n",
                per_run(n, run.scheduled_runs)
            ));
        }
        s.push('\n');
        s
    }

    fn junit_names(_r: &Results<Self>) -> (String, String) {
        ("harness bench cron".into(), "bench.cron".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::merge::{Part, merge};
    use crate::bench::core::result::{ShardOf, Statistics};

    fn run(requests: u64, runs: u64) -> CronRun {
        let mut r = CronRun {
            scheduled_runs: runs,
            ..Default::default()
        };
        r.figures.mode = MODE.into();
        r.figures.window.api_requests_total = requests;
        r.figures
            .window
            .api_requests_by_client
            .insert("cronjob-controller".into(), requests / 4);
        r
    }

    /// Rounds `first..first + n` of a 3-round set, as shard `k` of 2.
    fn shard(k: u32, first: usize, rounds: &[CronRun]) -> CronResult {
        let shape = CronShape {
            tenants: 5,
            cronjobs: 4,
            minutes: 1,
            pod_seconds: 2,
            expected_runs: 20,
        };
        let statistics = Statistics {
            shard: Some(ShardOf {
                k,
                n: 2,
                first,
                of: 3,
            }),
            ..Statistics::new(0, vec![vec![MODE.into()]; rounds.len()], MODE.into())
        };
        let mut r = CronResult::begin(MODE, "local", "1.37.1".into(), shape, statistics);
        for x in rounds {
            r.add_run(MODE, x.clone());
        }
        r
    }

    #[test]
    fn a_cron_run_set_keeps_the_shard_contract_of_every_workload() {
        let (a, b, c) = (run(400, 20), run(420, 20), run(410, 20));
        let s1 = || Part {
            from: "s1".into(),
            result: shard(1, 0, &[a.clone(), b.clone()]),
        };
        let s2 = || Part {
            from: "s2".into(),
            result: shard(2, 2, std::slice::from_ref(&c)),
        };
        let merged = merge(vec![s2(), s1()]).unwrap();
        let m = &merged.modes[MODE];
        assert_eq!(
            m.repeats,
            [a.clone(), b.clone(), c.clone()],
            "in round order"
        );
        assert_eq!(m.stats["api_requests_per_scheduled_run"].median, 20.5);
        // The same shard twice is refused, not counted as more rounds.
        let e = format!("{:#}", merge(vec![s1(), s1()]).unwrap_err());
        assert!(e.contains("given twice"), "{e}");
        // A shard missing: its rounds listed as lost, never dropped silently.
        let merged = merge(vec![s1()]).unwrap();
        assert_eq!(merged.statistics.as_ref().unwrap().lost_rounds, [2]);
        let md = crate::bench::core::report::markdown::markdown(&merged);
        assert!(md.contains("| cronjob-controller | 5.15 |"), "{md}");
    }

    #[test]
    fn the_older_shape_reads_back_as_its_rounds() {
        let v1 = serde_json::json!({
            "schema": "harness.cron-load/v1", "harness_version": "0",
            "k8s_version": "1.37.1", "tenants": 2, "cronjobs": 1, "minutes": 2,
            "pod_seconds": 2, "expected_runs": 4,
            "window_s": 100.0, "scheduled_runs": 4, "api_requests": 40, "etcd_writes": 20,
            "requests_per_run": 10.0, "etcd_writes_per_run": 5.0,
            "api_requests_by_client": {"a": 8}, "objects_created": {"jobs": 4},
            "rounds": [
                {"window_s": 100.0, "scheduled_runs": 4, "api_requests": 36, "etcd_writes": 20,
                 "requests_per_run": 9.0, "etcd_writes_per_run": 5.0,
                 "api_requests_by_client": {"a": 7}, "objects_created": {"jobs": 4}},
                {"window_s": 100.0, "scheduled_runs": 4, "api_requests": 44, "etcd_writes": 20,
                 "requests_per_run": 11.0, "etcd_writes_per_run": 5.0,
                 "api_requests_by_client": {"a": 9}, "objects_created": {"jobs": 4}}
            ]
        });
        let r = crate::bench::cron::v1::read(&v1.to_string()).unwrap();
        let m = &r.modes[MODE];
        assert_eq!(m.repeats.len(), 2);
        assert_eq!(m.stats["api_requests_per_scheduled_run"].min, 9.0);
        assert_eq!(m.stats["api_requests_per_scheduled_run"].max, 11.0);
        assert_eq!(r.shape.expected_runs, 4);
    }
}
