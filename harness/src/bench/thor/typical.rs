//! A mode's figures over its repeats: one typical run, the mean of the
//! repeats field by field, with the spread of each headline metric.
//! The reports' tables (requests by client and by request, objects, CPU
//! and memory per component, latency against the SLOs, start-up
//! percentiles) read a mode's one `result`; with repeats, that must stand
//! for all of them, not for whichever ran first. Counts are rounded means
//! over the repeats (a key missing from a run counts 0 there), so the
//! per-client rows add up to the mean total; percentiles are element-wise
//! means; CPU seconds and memory are means per component. The repeats
//! themselves stay in `ModeSummary::repeats`, and the intervals and
//! verdicts come from them (stats), not from this.

use std::collections::{BTreeMap, BTreeSet};

use crate::bench::thor::result::{ModeResult, ModeSummary, headline, samples};
use crate::metrics::percentiles::Percentiles;
use crate::metrics::pods::PodRates;
use crate::metrics::slo::SloRow;
use crate::metrics::throttle::Throttle;
use crate::metrics::usage::Usage;
use crate::stats;

fn mean(vals: impl Iterator<Item = f64>, n: usize) -> f64 {
    vals.sum::<f64>() / n.max(1) as f64
}

fn mean_u64(vals: impl Iterator<Item = u64>, n: usize) -> u64 {
    mean(vals.map(|v| v as f64), n).round() as u64
}

/// Every key of `maps`, once, in order.
fn keys<'a, V: 'a>(maps: impl Iterator<Item = &'a BTreeMap<String, V>>) -> BTreeSet<&'a String> {
    maps.flat_map(|m| m.keys()).collect()
}

/// Per key: the rounded mean over `maps` (absent = 0).
fn counts<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, u64>> + Clone,
) -> BTreeMap<String, u64> {
    let n = maps.clone().count();
    keys(maps.clone())
        .into_iter()
        .map(|k| {
            let v = mean_u64(maps.clone().map(|m| m.get(k).copied().unwrap_or(0)), n);
            (k.clone(), v)
        })
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// Per outer key, `counts` of the inner maps.
fn nested<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, BTreeMap<String, u64>>> + Clone,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    let empty = BTreeMap::new();
    keys(maps.clone())
        .into_iter()
        .map(|k| {
            // A run without the key is an empty map: it counts 0.
            let c = counts(maps.clone().map(|m| m.get(k).unwrap_or(&empty)));
            (k.clone(), c)
        })
        .filter(|(_, c)| !c.is_empty())
        .collect()
}

/// Element-wise mean of percentiles.
fn percentiles<'a>(ps: impl Iterator<Item = &'a Percentiles> + Clone) -> Percentiles {
    let n = ps.clone().count();
    Percentiles {
        p50: mean(ps.clone().map(|p| p.p50), n),
        p90: mean(ps.clone().map(|p| p.p90), n),
        p99: mean(ps.clone().map(|p| p.p99), n),
        max: mean(ps.clone().map(|p| p.max), n),
    }
}

/// Element-wise mean of the runs that have them; None when none has.
fn some_percentiles<'a>(
    ps: impl Iterator<Item = &'a Option<Percentiles>> + Clone,
) -> Option<Percentiles> {
    let present = ps.clone().flatten();
    present.clone().next()?;
    Some(percentiles(present))
}

/// Per key, the element-wise mean of the runs that measured it.
fn keyed_percentiles<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, Percentiles>> + Clone,
) -> BTreeMap<String, Percentiles> {
    keys(maps.clone())
        .into_iter()
        .map(|k| {
            (
                k.clone(),
                percentiles(maps.clone().filter_map(|m| m.get(k))),
            )
        })
        .collect()
}

/// Per component: mean CPU seconds and memory over the runs.
fn usage<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, Usage>> + Clone,
) -> BTreeMap<String, Usage> {
    let n = maps.clone().count();
    keys(maps.clone())
        .into_iter()
        .map(|k| {
            let of = |f: fn(&Usage) -> f64| mean(maps.clone().filter_map(|m| m.get(k)).map(f), n);
            let u = Usage {
                cpu_s: of(|u| u.cpu_s),
                rss_peak_mib: of(|u| u.rss_peak_mib),
                rss_mean_mib: of(|u| u.rss_mean_mib),
                samples: maps
                    .clone()
                    .filter_map(|m| m.get(k))
                    .map(|u| u.samples)
                    .sum(),
            };
            (k.clone(), u)
        })
        .collect()
}

/// Per component: the mean throttling of the runs that measured it.
fn throttles<'a>(
    maps: impl Iterator<Item = &'a BTreeMap<String, Throttle>> + Clone,
) -> BTreeMap<String, Throttle> {
    keys(maps.clone())
        .into_iter()
        .map(|k| {
            let of = || maps.clone().filter_map(|m| m.get(k));
            let n = of().count();
            let t = Throttle {
                requests: mean_u64(of().map(|t| t.requests), n),
                waited_s: mean(of().map(|t| t.waited_s), n),
                waited_over_1s: mean_u64(of().map(|t| t.waited_over_1s), n),
                waited_s_by_verb: keys(of().map(|t| &t.waited_s_by_verb))
                    .into_iter()
                    .map(|v| {
                        let w = mean(
                            of().map(|t| t.waited_s_by_verb.get(v).copied().unwrap_or(0.0)),
                            n,
                        );
                        (v.clone(), w)
                    })
                    .collect(),
            };
            (k.clone(), t)
        })
        .collect()
}

/// Per SLO row: the mean count and latency of the runs that had it,
/// worst (largest share of its bound) first.
fn slo_rows<'a>(rows: impl Iterator<Item = &'a Vec<SloRow>> + Clone) -> Vec<SloRow> {
    let n = rows.clone().count();
    let mut by_key: BTreeMap<String, Vec<&SloRow>> = BTreeMap::new();
    for r in rows.flatten() {
        by_key.entry(r.key()).or_default().push(r);
    }
    let mut out: Vec<SloRow> = by_key
        .into_values()
        .map(|rs| SloRow {
            count: mean_u64(rs.iter().map(|r| r.count), n),
            latency_ms: percentiles(rs.iter().map(|r| &r.latency_ms)),
            ..rs[0].clone()
        })
        .collect();
    out.sort_by(|a, b| b.load().total_cmp(&a.load()));
    out
}

/// The mean run of `runs` (not empty); fields that describe the run
/// rather than measure it (its mode, identities, plan) are the first's.
pub fn typical(runs: &[ModeResult]) -> ModeResult {
    let mut t = runs[0].clone();
    if runs.len() == 1 {
        return t;
    }
    let n = runs.len();
    let w = || runs.iter().map(|r| &r.window);
    let tw = &mut t.window;
    tw.api_requests_total = mean_u64(w().map(|w| w.api_requests_total), n);
    tw.api_requests = counts(w().map(|w| &w.api_requests));
    tw.api_requests_by_client = counts(w().map(|w| &w.api_requests_by_client));
    tw.api_requests_by_client_request = nested(w().map(|w| &w.api_requests_by_client_request));
    tw.failed_requests = nested(w().map(|w| &w.failed_requests));
    tw.harness_requests = mean_u64(w().map(|w| w.harness_requests), n);
    tw.apiserver_requests_counted = mean_u64(w().map(|w| w.apiserver_requests_counted), n);
    tw.audited_resource_requests = mean_u64(w().map(|w| w.audited_resource_requests), n);
    tw.etcd_writes_total = mean_u64(w().map(|w| w.etcd_writes_total), n);
    let e = || w().map(|w| &w.etcd);
    tw.etcd.puts = mean_u64(e().map(|e| e.puts), n);
    tw.etcd.deletes = mean_u64(e().map(|e| e.deletes), n);
    tw.etcd.txns = mean_u64(e().map(|e| e.txns), n);
    tw.etcd.ranges = mean_u64(e().map(|e| e.ranges), n);
    tw.etcd.writes = mean_u64(e().map(|e| e.writes), n);
    tw.etcd.put_bytes = mean_u64(e().map(|e| e.put_bytes), n);
    tw.etcd.db_size_bytes = mean_u64(e().map(|e| e.db_size_bytes), n);
    tw.etcd.db_in_use_bytes = mean_u64(e().map(|e| e.db_in_use_bytes), n);
    tw.etcd.wal_fsync_ms = some_percentiles(e().map(|e| &e.wal_fsync_ms));
    tw.etcd.backend_commit_ms = some_percentiles(e().map(|e| &e.backend_commit_ms));
    tw.objects_created = counts(w().map(|w| &w.objects_created));
    tw.objects_after = counts(w().map(|w| &w.objects_after));
    tw.api_latency_ms = keyed_percentiles(w().map(|w| &w.api_latency_ms));
    tw.resources = usage(w().map(|w| &w.resources));
    tw.apiserver_etcd_cpu_s = mean(w().map(|w| w.apiserver_etcd_cpu_s), n);
    tw.api_latency_slo = slo_rows(w().map(|w| &w.api_latency_slo));
    tw.client_throttle = throttles(w().map(|w| &w.client_throttle));
    t.pod_startup_ms = percentiles(runs.iter().map(|r| &r.pod_startup_ms));
    t.pod_schedule_ms = percentiles(runs.iter().map(|r| &r.pod_schedule_ms));
    t.instance_start_ms = percentiles(runs.iter().map(|r| &r.instance_start_ms));
    t.gang_start_ms = some_percentiles(runs.iter().map(|r| &r.gang_start_ms));
    t.instance_wall_s = percentiles(runs.iter().map(|r| &r.instance_wall_s));
    t
}

/// A mode's summary over its repeats: the typical run, each headline
/// metric's mean and spread ((max − min) / mean), and the per-metric
/// statistics the intervals and verdicts come from.
pub fn summarize(runs: Vec<ModeResult>) -> ModeSummary {
    let n = runs.len() as f64;
    let mut result = typical(&runs);
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
    let stats = samples(&runs)
        .into_iter()
        .map(|(k, v)| (k, stats::spread(&v)))
        .filter(|(_, s)| s.n > 0)
        .collect();
    ModeSummary {
        result,
        repeats: runs,
        spread_pct,
        stats,
        vs_reference: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(requests: u64, kubectl: u64, p50: f64, cpu: f64) -> ModeResult {
        let mut r = ModeResult::default();
        r.window.api_requests_total = requests;
        r.window.api_requests_by_client = BTreeMap::from([
            ("kubectl".to_string(), kubectl),
            ("job-controller".to_string(), requests - kubectl),
        ]);
        r.window.api_requests_by_client_request = BTreeMap::from([(
            "kubectl".to_string(),
            BTreeMap::from([("create jobs".to_string(), kubectl)]),
        )]);
        r.pod_startup_ms = Percentiles {
            p50,
            p90: p50,
            p99: p50,
            max: p50,
        };
        r.window.resources = BTreeMap::from([(
            "kube-apiserver".to_string(),
            Usage {
                cpu_s: cpu,
                rss_peak_mib: 100.0,
                rss_mean_mib: 90.0,
                samples: 3,
            },
        )]);
        r
    }

    #[test]
    fn the_typical_run_is_the_mean_of_the_repeats_not_the_first() {
        let runs = [
            run(20, 2, 37.0, 1.0),
            run(16, 1, 18.0, 2.0),
            run(18, 3, 20.0, 3.0),
        ];
        let t = typical(&runs);
        assert_eq!(t.window.api_requests_total, 18);
        assert_eq!(t.window.api_requests_by_client["kubectl"], 2);
        assert_eq!(t.window.api_requests_by_client["job-controller"], 16);
        assert_eq!(
            t.window.api_requests_by_client.values().sum::<u64>(),
            t.window.api_requests_total
        );
        assert_eq!(
            t.window.api_requests_by_client_request["kubectl"]["create jobs"],
            2
        );
        assert_eq!(t.pod_startup_ms.p50, 25.0);
        assert!(t.pod_startup_ms.p50 <= t.pod_startup_ms.p99);
        let u = &t.window.resources["kube-apiserver"];
        assert_eq!(u.cpu_s, 2.0);
        assert_eq!(u.samples, 9);
        assert_eq!(typical(&runs[..1]), runs[0]);
    }

    #[test]
    fn a_key_absent_from_a_run_counts_zero_there() {
        let mut a = run(10, 4, 1.0, 1.0);
        let b = run(10, 4, 1.0, 1.0);
        a.window.api_requests_by_client_request.insert(
            "scheduler".into(),
            BTreeMap::from([("create pods/binding".into(), 6)]),
        );
        a.window.objects_created.insert("pods".into(), 4);
        let t = typical(&[a, b]);
        assert_eq!(t.window.objects_created["pods"], 2);
        assert_eq!(
            t.window.api_requests_by_client_request["scheduler"]["create pods/binding"],
            3
        );
    }
}
