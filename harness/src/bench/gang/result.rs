//! What one release's run of `harness bench gang` measured in one round,
//! as a workload of the core (`bench::core::result::Run`): each gang
//! size's placement latencies and cost, and the figures every run has
//! (the sizes' windows added up: requests by client, etcd writes,
//! objects, CPU). Each release is a mode, judged against the oldest
//! asked for, paired by round — so rounds, shards, merge, reports,
//! baselines and `--compare` are the core's (the book's
//! docs/src/suites/gang.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bench::core::figures::{self, MACHINE, RunFigures};
use crate::bench::core::metric::{Driver, Kind, Metric, Spec, Views};
use crate::bench::core::result::{Results, Run};
use crate::metrics::window::WindowFigures;
use crate::workload::gang::latency::{self, SizeFigures};

/// The result's `schema` (Results of [`GangRun`]); the older shape,
/// `harness.gang-latency/v1`, is read back by `bench::gang::v1`.
pub const SCHEMA: &str = "harness.gang-latency/v2";

/// One release's gangs of every size, on a fresh cluster, in one round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GangRun {
    /// The sizes' windows added up; `mode` is the release's version.
    #[serde(flatten)]
    pub figures: RunFigures,
    /// Its minor ("1.37").
    pub minor: String,
    /// The control plane's profile and resolved limits.
    #[serde(default)]
    pub control_plane: BTreeMap<String, String>,
    /// Each size's figures over its gangs.
    pub sizes: Vec<SizeFigures>,
}

/// What every run of a run set placed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GangShape {
    /// Pods per gang, each size's gangs one after another.
    pub gang_sizes: Vec<u32>,
    /// Gangs of each size a run places (`--gangs`).
    pub gangs: u32,
    pub pool_nodes: u32,
    pub node_pods: u32,
}

pub type GangResult = Results<GangRun>;

/// What a window of one size's gangs says that adds up over the sizes:
/// counts and CPU. Latencies, memory and etcd's own counts are the
/// sizes' own (the latency table), said so in `not_measured`.
pub fn added_up(sizes: &[SizeFigures]) -> WindowFigures {
    let mut w = WindowFigures {
        not_measured: vec![PER_SIZE.to_string()],
        ..WindowFigures::default()
    };
    // Saturating: a count a file claims may be anything (a real run's are
    // far from u64::MAX).
    let add = |to: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>| {
        for (k, v) in from {
            let t = to.entry(k.clone()).or_default();
            *t = t.saturating_add(*v);
        }
    };
    let sum = |to: &mut u64, v: u64| *to = to.saturating_add(v);
    for s in sizes {
        let x = &s.window;
        sum(&mut w.api_requests_total, x.api_requests_total);
        sum(&mut w.harness_requests, x.harness_requests);
        sum(&mut w.etcd_writes_total, x.etcd_writes_total);
        sum(&mut w.etcd.put_bytes, x.etcd.put_bytes);
        w.apiserver_etcd_cpu_s += x.apiserver_etcd_cpu_s;
        add(&mut w.api_requests, &x.api_requests);
        add(&mut w.api_requests_by_client, &x.api_requests_by_client);
        add(&mut w.objects_created, &x.objects_created);
        for (c, by) in &x.api_requests_by_client_request {
            add(
                w.api_requests_by_client_request
                    .entry(c.clone())
                    .or_default(),
                by,
            );
        }
    }
    w
}

/// What the added-up window does not hold.
const PER_SIZE: &str = "API latency, memory and etcd's own counts over the whole run (each gang size's are in the latency table)";

/// Why a size's requests and writes differ between machines: the
/// controllers' and the scheduler's status writes coalesce.
const PACE: &str = "controllers' and the scheduler's status writes coalesce";

const SHOWN: Views = Views::HEADLINE
    .and(Views::JUDGED)
    .and(Views::KEPT)
    .and(Views::ROW)
    .and(Views::ROUNDS);

fn per_gang(s: &SizeFigures, n: u64) -> f64 {
    n as f64 / f64::from(s.repeats.max(1))
}

/// Each size's value of `f`, the size its member.
fn by_size(r: &GangRun, f: fn(&SizeFigures) -> f64) -> Vec<(String, f64)> {
    r.sizes.iter().map(|s| (s.size.to_string(), f(s))).collect()
}

/// Each size's latencies and cost per gang (latencies: 5 % and the API
/// latency noise floor of 50 ms; counts: 2 %; CPU: 5 % and 2 s), then
/// the run's requests, writes and CPU over every size.
pub fn metrics() -> Vec<Metric<GangRun>> {
    let latency = |key, label| {
        Spec::new(key, label, "ms")
            .kind(Kind::Latency, 50.0)
            .views(SHOWN)
            .driver(Driver::Pace(MACHINE))
    };
    let mut m = vec![
        Metric::each(
            latency(
                "gang_{}.last_created_to_last_bound_ms.p50",
                "gangs of {}: last created → last bound p50 (ms)",
            ),
            |r: &GangRun| by_size(r, |s| s.last_created_to_last_bound_ms.p50),
        ),
        Metric::each(
            latency(
                "gang_{}.last_created_to_last_bound_ms.p99",
                "gangs of {}: last created → last bound p99 (ms)",
            ),
            |r: &GangRun| by_size(r, |s| s.last_created_to_last_bound_ms.p99),
        ),
        Metric::each(
            latency(
                "gang_{}.first_created_to_last_bound_ms.p99",
                "gangs of {}: first created → last bound p99 (ms)",
            ),
            |r: &GangRun| by_size(r, |s| s.first_created_to_last_bound_ms.p99),
        ),
        Metric::each(
            Spec::new(
                "gang_{}.api_requests_per_gang",
                "gangs of {}: API requests / gang",
                "requests",
            )
            .views(SHOWN)
            .driver(Driver::Pace(PACE)),
            |r: &GangRun| by_size(r, |s| per_gang(s, s.window.api_requests_total)),
        ),
        Metric::each(
            Spec::new(
                "gang_{}.etcd_writes_per_gang",
                "gangs of {}: etcd writes / gang",
                "writes",
            )
            .views(SHOWN)
            .driver(Driver::Pace(PACE)),
            |r: &GangRun| by_size(r, |s| per_gang(s, s.window.etcd_writes_total)),
        ),
        Metric::each(
            Spec::new(
                "gang_{}.apiserver_etcd_cpu_s",
                "gangs of {}: apiserver + etcd CPU s (all its gangs)",
                "cpu-s",
            )
            .kind(Kind::Cpu, 2.0)
            .views(SHOWN)
            .driver(Driver::Pace(MACHINE)),
            |r: &GangRun| by_size(r, |s| s.window.apiserver_etcd_cpu_s),
        ),
    ];
    let mut common = figures::common();
    fn part(r: &GangRun) -> &RunFigures {
        &r.figures
    }
    for spec in [
        figures::API_REQUESTS,
        figures::ETCD_WRITES,
        figures::ETCD_BYTES,
        figures::CPU,
        figures::OBJECTS_SUM,
    ] {
        m.push(common.take(&spec, part));
    }
    m
}

impl Run for GangRun {
    type Shape = GangShape;
    const SCHEMA: &'static str = SCHEMA;
    const TITLE: &'static str = "Gang-scheduling benchmark";

    fn metrics() -> Vec<Metric<Self>> {
        metrics()
    }

    fn figures(&self) -> &RunFigures {
        &self.figures
    }

    fn figures_mut(&mut self) -> &mut RunFigures {
        &mut self.figures
    }

    /// The typical run: the figures combined, each size's by the
    /// latency module's rule (medians of its percentiles, means of its
    /// counts).
    fn typical(runs: &[&Self]) -> Self {
        let figures = crate::metrics::combine::Combine::combine(
            &runs.iter().map(|r| &r.figures).collect::<Vec<_>>(),
        );
        let sizes = runs[0]
            .sizes
            .iter()
            .map(|s| {
                let same: Vec<&SizeFigures> = runs
                    .iter()
                    .filter_map(|r| r.sizes.iter().find(|x| x.size == s.size))
                    .collect();
                latency::typical(&same)
            })
            .collect();
        GangRun {
            figures,
            minor: runs[0].minor.clone(),
            control_plane: runs[0].control_plane.clone(),
            sizes,
        }
    }

    fn heading(r: &Results<Self>) -> String {
        format!(
            "## Gang placement latency (harness bench gang)\n\n\
             Kubernetes {}: gangs of {:?} pods, {} of each size a run, one after another, on {} nodes × {} pods; each release is a mode, on a fresh cluster per round, judged against {}.\n\n",
            r.k8s_version,
            r.shape.gang_sizes,
            r.shape.gangs,
            r.shape.pool_nodes,
            r.shape.node_pods,
            r.reference_mode().unwrap_or("the first"),
        )
    }

    fn per_run(_r: &Results<Self>) -> String {
        "per run (every size)".to_string()
    }

    /// Every run's latency table, each row its release and round.
    fn after_rounds(r: &Results<Self>) -> String {
        let order = r.statistics.as_ref().map(|s| &s.rounds);
        let mut rows: Vec<(String, &SizeFigures)> = Vec::new();
        for (mode, sum) in &r.modes {
            // The i-th run of a mode ran in the i-th round that had it.
            let rounds: Vec<usize> = order.map_or(Vec::new(), |o| {
                o.iter()
                    .enumerate()
                    .filter(|(_, modes)| modes.contains(mode))
                    .map(|(i, _)| i)
                    .collect()
            });
            for (i, run) in sum.runs().iter().enumerate() {
                let label = match (sum.runs().len(), rounds.get(i)) {
                    (1, _) | (_, None) => mode.clone(),
                    (_, Some(k)) => format!("{mode} (round {})", k + 1),
                };
                rows.extend(run.sizes.iter().map(|s| (label.clone(), s)));
            }
        }
        let rows: Vec<(&str, &SizeFigures)> = rows.iter().map(|(l, s)| (l.as_str(), *s)).collect();
        format!(
            "### Each run's gangs\n\n{}\n",
            latency::latency_table(&rows)
        )
    }

    fn junit_names(_r: &Results<Self>) -> (String, String) {
        ("harness bench gang".into(), "bench.gang".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::merge::{Part, merge};
    use crate::bench::core::result::{ShardOf, Statistics};
    use crate::stats::Direction;

    fn run(version: &str, p50: f64, requests: u64) -> GangRun {
        let mut s = SizeFigures {
            size: 8,
            repeats: 2,
            ..Default::default()
        };
        s.last_created_to_last_bound_ms.p50 = p50;
        s.window.api_requests_total = requests;
        s.window
            .api_requests_by_client
            .insert("kube-scheduler".into(), requests / 2);
        GangRun {
            figures: RunFigures {
                mode: version.into(),
                window: added_up(std::slice::from_ref(&s)),
                ..RunFigures::default()
            },
            minor: version[..4].into(),
            control_plane: BTreeMap::new(),
            sizes: vec![s],
        }
    }

    /// Rounds `rounds` of a set of `of`, 1.37 against 1.36 (1.37 places
    /// gangs 200 ms slower with the same requests).
    fn set(rounds: std::ops::Range<usize>, of: usize, shard: Option<u32>) -> GangResult {
        let shape = GangShape {
            gang_sizes: vec![8],
            gangs: 2,
            pool_nodes: 1,
            node_pods: 64,
        };
        let statistics = Statistics {
            shard: shard.map(|k| ShardOf {
                k,
                n: 2,
                first: rounds.start,
                of,
            }),
            ..Statistics::new(
                9,
                rounds
                    .clone()
                    .map(|_| vec!["1.37.1".to_string(), "1.36.4".to_string()])
                    .collect(),
                "1.36.4".into(),
            )
        };
        let mut r = GangResult::begin(
            "gang-latency",
            "local",
            "1.36.4, 1.37.1".into(),
            shape,
            statistics,
        );
        for round in rounds {
            let noise = (round % 2) as f64;
            r.add_run("1.37.1", run("1.37.1", 300.0 + noise, 100));
            r.add_run("1.36.4", run("1.36.4", 100.0 + noise, 100));
        }
        r
    }

    #[test]
    fn each_release_is_judged_against_the_first_paired_by_round() {
        let r = set(0..5, 5, None);
        let vs = &r.modes["1.37.1"].vs_reference;
        let p50 = &vs["gang_8.last_created_to_last_bound_ms.p50"];
        assert_eq!(p50.verdict, Direction::Higher);
        assert!(r.modes["1.36.4"].vs_reference.is_empty());
        let requests = &r.modes["1.37.1"].stats["gang_8.api_requests_per_gang"];
        assert_eq!(requests.median, 50.0, "per gang");
        assert_eq!(vs["gang_8.api_requests_per_gang"].verdict, Direction::Same);
        let md = crate::bench::core::report::markdown::markdown(&r);
        assert!(md.contains("gangs of [8] pods"), "{md}");
        assert!(md.contains("| 1.37.1 (round 5) | 8 |"), "{md}");
        assert!(
            md.contains("gangs of 8: last created → last bound p50 (ms)"),
            "{md}"
        );
        assert!(md.contains("| kube-scheduler |"), "{md}");
    }

    #[test]
    fn a_gang_run_set_keeps_the_shard_contract_of_every_workload() {
        let whole = set(0..3, 3, None);
        let s1 = || Part {
            from: "s1".into(),
            result: set(0..2, 3, Some(1)),
        };
        let s2 = || Part {
            from: "s2".into(),
            result: set(2..3, 3, Some(2)),
        };
        let merged = merge(vec![s2(), s1()]).unwrap();
        for (mode, sum) in &whole.modes {
            assert_eq!(merged.modes[mode].repeats, sum.repeats, "{mode}");
            assert_eq!(merged.modes[mode].vs_reference, sum.vs_reference, "{mode}");
        }
        let e = format!("{:#}", merge(vec![s1(), s1()]).unwrap_err());
        assert!(e.contains("given twice"), "{e}");
        let merged = merge(vec![s1()]).unwrap();
        assert_eq!(merged.statistics.as_ref().unwrap().lost_rounds, [2]);
    }

    #[test]
    fn the_older_shape_reads_back_as_each_release_s_rounds() {
        let release = |v: &str, minor: &str, round: u32, p50: f64| {
            serde_json::json!({
                "k8s_version": v, "minor": minor, "pool_nodes": 1, "node_pods": 64,
                "round": round,
                "sizes": [{"size": 8, "repeats": 2, "samples_ms": [p50, p50],
                  "last_created_to_last_bound_ms": {"p50": p50, "p90": p50, "p99": p50, "max": p50, "count": 2},
                  "first_created_to_last_bound_ms": {"p50": p50, "p90": p50, "p99": p50, "max": p50, "count": 2},
                  "scheduler": {"podgroup_attempts": {}, "podgroup_attempt_ms": null, "podgroup_algorithm_ms": null},
                  "window": {"api_requests_total": 100, "etcd_writes_total": 60}}]
            })
        };
        let v1 = serde_json::json!({
            "schema": "harness.gang-latency/v1", "harness_version": "0", "started": "t",
            "rounds": 2, "seed": 1,
            "releases": [
                release("1.37.1", "1.37", 0, 300.0), release("1.36.4", "1.36", 0, 100.0),
                release("1.36.4", "1.36", 1, 101.0), release("1.37.1", "1.37", 1, 302.0)
            ]
        });
        let r = crate::bench::gang::v1::read(&v1.to_string()).unwrap();
        assert_eq!(r.reference_mode(), Some("1.36.4"));
        assert_eq!(r.modes["1.37.1"].repeats.len(), 2);
        let st = r.statistics.as_ref().unwrap();
        assert_eq!(st.rounds, [["1.37.1", "1.36.4"], ["1.36.4", "1.37.1"]]);
        assert_eq!(
            r.modes["1.36.4"].repeats[0]
                .figures
                .window
                .api_requests_total,
            100
        );
    }
}
