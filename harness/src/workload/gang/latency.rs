//! Gang placement latency: for gangs of N pods (an eligible Indexed Job
//! with gang policy), the time from the last pod of the gang created to
//! the last pod bound — how long the scheduler holds a complete gang
//! before placing it — p50/p99 over repeats, with the scheduler's own
//! podgroup metrics where the version exposes them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::k8s::K8sRelease;
use crate::metrics::pods::{PodRates, PodTracker, rates};
use crate::metrics::prom::{Sample, counter_delta, histogram_delta};
use crate::metrics::window::{NOT_MEASURED_ETCD, NOT_MEASURED_REQUESTS, NOT_MEASURED_USAGE};
use crate::metrics::{Options, Percentiles, Window, WindowFigures};
use crate::poll::Poll;
use crate::workload::gang::case::Benchmark;
use crate::workload::gang::trial::{FIELD_MANAGER, Trial, inject, wait_pods_gone};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub sizes: Vec<SizeFigures>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SizeFigures {
    /// Pods per gang.
    pub size: u32,
    pub repeats: u32,
    /// Last pod created → last pod bound, per repeat (ms).
    pub samples_ms: Vec<f64>,
    /// Over the repeats (hdrhistogram, 1 ms resolution).
    pub last_created_to_last_bound_ms: Percentiles,
    /// First pod created → last pod bound (the gang's whole start).
    pub first_created_to_last_bound_ms: Percentiles,
    /// The scheduler's podgroup metrics over this size's repeats; empty
    /// when the version has none.
    pub scheduler: SchedulerFigures,
    /// What the control plane did over this size's repeats (requests per
    /// client, etcd writes): the cost of placing these gangs.
    #[serde(default)]
    pub window: WindowFigures,
    /// Pods per second created, bound and Running over each gang's start
    /// (first created → last to reach the step), mean over the repeats.
    #[serde(default)]
    pub pod_rates: PodRates,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedulerFigures {
    /// scheduler_podgroup_schedule_attempts_total by result.
    pub podgroup_attempts: BTreeMap<String, f64>,
    /// scheduler_podgroup_scheduling_attempt_duration_seconds, in ms.
    pub podgroup_attempt_ms: Option<Percentiles>,
    /// scheduler_podgroup_scheduling_algorithm_duration_seconds, in ms.
    pub podgroup_algorithm_ms: Option<Percentiles>,
}

const ATTEMPTS: &str = "scheduler_podgroup_schedule_attempts_total";
const ATTEMPT_DURATION: &str = "scheduler_podgroup_scheduling_attempt_duration_seconds";
const ALGORITHM_DURATION: &str = "scheduler_podgroup_scheduling_algorithm_duration_seconds";

/// What the scheduler's metrics say happened between two scrapes.
/// The typical figures of one size over several runs (not empty): its
/// percentiles and window combined (`metrics::combine`); the scheduler's
/// podgroup figures, pod rates and samples are each run's own, not
/// combined (left empty).
pub fn typical(runs: &[&SizeFigures]) -> SizeFigures {
    use crate::metrics::combine::Combine;
    let of = |f: fn(&SizeFigures) -> &Percentiles| {
        Percentiles::combine(&runs.iter().map(|r| f(r)).collect::<Vec<_>>())
    };
    SizeFigures {
        size: runs[0].size,
        repeats: runs[0].repeats,
        samples_ms: Vec::new(),
        last_created_to_last_bound_ms: of(|r| &r.last_created_to_last_bound_ms),
        first_created_to_last_bound_ms: of(|r| &r.first_created_to_last_bound_ms),
        scheduler: SchedulerFigures::default(),
        window: WindowFigures::combine(&runs.iter().map(|r| &r.window).collect::<Vec<_>>()),
        pod_rates: PodRates::default(),
    }
}

pub fn scheduler_figures(before: &[Sample], after: &[Sample]) -> SchedulerFigures {
    let mut results: Vec<String> = after
        .iter()
        .filter(|s| s.name == ATTEMPTS)
        .filter_map(|s| s.labels.get("result").cloned())
        .collect();
    results.sort();
    results.dedup();
    let ms = |p: Percentiles| p.scaled(1000.0);
    SchedulerFigures {
        podgroup_attempts: results
            .into_iter()
            .map(|r| {
                let d = counter_delta(before, after, ATTEMPTS, |s| {
                    s.labels.get("result") == Some(&r)
                });
                (r, d)
            })
            .collect(),
        podgroup_attempt_ms: histogram_delta(before, after, ATTEMPT_DURATION, |_| true).map(ms),
        podgroup_algorithm_ms: histogram_delta(before, after, ALGORITHM_DURATION, |_| true).map(ms),
    }
}

/// An eligible gang Job of `size` pods for this minor: Indexed,
/// parallelism = completions = size; on 1.37 with spec.scheduling's gang
/// policy (omitted, 1.37 defaults to basic), on 1.36 gang by default.
pub fn gang_job(release: K8sRelease, name: &str, size: u32) -> Value {
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completionMode": "Indexed",
            "parallelism": size,
            "completions": size,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}],
            }},
        },
    });
    if release.minor_number() >= 37 {
        job["spec"]["scheduling"] = json!({"schedulingPolicy": {"gang": {}}});
    }
    job
}

/// Measure the case's gang sizes in the trial's namespace and pool: per
/// size, `repeats` gangs one after another on an empty pool, inside one
/// measurement window (with the scheduler's metrics where the provider
/// has them).
pub async fn run<C: Cluster>(trial: &mut Trial<'_, C>, b: &Benchmark) -> Result<LatencyReport> {
    let tracker = PodTracker::start(trial.client.clone(), &trial.ns);
    let jobs: Api<kube::api::DynamicObject> = Api::namespaced_with(
        trial.client.clone(),
        &trial.ns,
        &kube::core::ApiResource::erase::<k8s_openapi::api::batch::v1::Job>(&()),
    );
    let pods: Api<Pod> = Api::namespaced(trial.client.clone(), &trial.ns);
    let timeout = Duration::from_secs_f64(b.timeout);
    let mut report = LatencyReport::default();
    for &size in &b.sizes {
        let opts = Options {
            scheduler: true,
            ..Default::default()
        };
        let mut window = Window::open_with(trial.cluster, opts).await?;
        let gangs = async {
            let mut samples = Vec::new();
            let mut whole = Vec::new();
            let mut gang_rates = Vec::new();
            for r in 0..b.repeats {
                let name = format!("gang-{size}-{r}");
                let mut job = gang_job(trial.release, &name, size);
                inject(&mut job, &trial.ns);
                jobs.patch(
                    &name,
                    &PatchParams::apply(FIELD_MANAGER).validation_strict(),
                    &Patch::Apply(&job),
                )
                .await
                .with_context(|| format!("creating Job {name}"))?;
                let (first_created, last_created, last_bound) =
                    Poll::new(format!("gang of {size} (Job {name}) bound whole"), timeout)
                        .every(Duration::from_millis(20))
                        .until_state(|| async {
                            let labels = [("batch.kubernetes.io/job-name", name.as_str())];
                            let (created, bound, _) = tracker.counts_where(&labels);
                            if created < size as usize || bound < size as usize {
                                return Ok(Err(format!("{created} pods created, {bound} bound")));
                            }
                            let mine = tracker.matching_all(&labels);
                            let bound: Vec<Instant> =
                                mine.iter().filter_map(|p| p.scheduled).collect();
                            let created = mine.iter().map(|p| p.created);
                            match (created.clone().min(), created.max(), bound.iter().max()) {
                                (Some(fc), Some(lc), Some(lb)) => Ok(Ok((fc, lc, *lb))),
                                _ => bail!("gang of {size}: no timestamps"),
                            }
                        })
                        .await?;
                samples.push(
                    last_bound
                        .saturating_duration_since(last_created)
                        .as_secs_f64()
                        * 1000.0,
                );
                whole.push(
                    last_bound
                        .saturating_duration_since(first_created)
                        .as_secs_f64()
                        * 1000.0,
                );
                // kwok reports the bound pods Running; the rates need it.
                tracker
                    .wait_running(
                        "batch.kubernetes.io/job-name",
                        &name,
                        size as usize,
                        timeout,
                    )
                    .await?;
                gang_rates.push(rates(
                    &tracker.matching("batch.kubernetes.io/job-name", &name),
                ));
                jobs.delete(&name, &DeleteParams::background())
                    .await
                    .with_context(|| format!("deleting Job {name}"))?;
                // The next gang starts on an empty pool.
                let sel = format!("batch.kubernetes.io/job-name={name}");
                let what = format!("pods of Job {name}");
                wait_pods_gone(&pods, &ListParams::default().labels(&sel), timeout, &what).await?;
            }
            Ok::<_, anyhow::Error>((samples, whole, gang_rates))
        };
        let (samples, whole, gang_rates) = window.during(trial.cluster, gangs).await?;
        let closed = window.close(trial.cluster).await?;
        let fig = SizeFigures {
            size,
            repeats: b.repeats,
            last_created_to_last_bound_ms: Percentiles::of_ms(&samples),
            first_created_to_last_bound_ms: Percentiles::of_ms(&whole),
            samples_ms: samples,
            scheduler: scheduler_figures(&closed.before.scheduler, &closed.after.scheduler),
            window: closed.figures,
            pod_rates: PodRates::mean(&gang_rates),
        };
        trial.observations.push(format!(
            "gang of {size} × {}: last created → last bound p50 {:.0} ms, p99 {:.0} ms; first created → last bound p50 {:.0} ms",
            b.repeats,
            fig.last_created_to_last_bound_ms.p50,
            fig.last_created_to_last_bound_ms.p99,
            fig.first_created_to_last_bound_ms.p50
        ));
        report.sizes.push(fig);
    }
    Ok(report)
}

/// The latency table (Markdown): one row per (server version, gang size).
pub fn latency_table(rows: &[(&str, &SizeFigures)]) -> String {
    let mut out = String::from(
        "Last pod of the gang created → last pod bound (watch-event arrival times, \
         hdrhistogram over the repeats), the whole gang's start (first created → last \
         bound), the scheduler's podgroup metrics over the same repeats, and what the \
         control plane did for them.\n\n\
         | version | gang size | repeats | last created → last bound p50 / p99 (ms) | first created → last bound p50 / p99 (ms) | podgroup attempts | podgroup attempt p50 / p99 (ms) | podgroup algorithm p50 (ms) | pods / s created · bound · Running | API requests / gang | etcd writes / gang | apiserver + etcd CPU s / gang |\n\
         |---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (version, s) in rows {
        let attempts = if s.scheduler.podgroup_attempts.is_empty() {
            "(no metric)".to_string()
        } else {
            s.scheduler
                .podgroup_attempts
                .iter()
                .map(|(k, v)| format!("{k} {v:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let p50_99 = |p: &Option<Percentiles>| {
            p.as_ref()
                .map(|p| format!("{:.1} / {:.1}", p.p50, p.p99))
                .unwrap_or_else(|| "—".into())
        };
        let algo = s
            .scheduler
            .podgroup_algorithm_ms
            .as_ref()
            .map(|p| format!("{:.1}", p.p50))
            .unwrap_or_else(|| "—".into());
        // Figures the cluster did not let the window measure read "—".
        let per = |n: u64, what: &str| match s.window.not_measured.iter().any(|m| m == what) {
            true => "—".to_string(),
            false => format!("{:.0}", n as f64 / f64::from(s.repeats.max(1))),
        };
        out.push_str(&format!(
            "| {version} | {} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {attempts} | {} | {algo} | {:.0} · {:.0} · {:.0} | {} | {} | {} |\n",
            s.size,
            s.repeats,
            s.last_created_to_last_bound_ms.p50,
            s.last_created_to_last_bound_ms.p99,
            s.first_created_to_last_bound_ms.p50,
            s.first_created_to_last_bound_ms.p99,
            p50_99(&s.scheduler.podgroup_attempt_ms),
            s.pod_rates.created_per_s,
            s.pod_rates.bound_per_s,
            s.pod_rates.running_per_s,
            per(s.window.api_requests_total, NOT_MEASURED_REQUESTS),
            per(s.window.etcd_writes_total, NOT_MEASURED_ETCD),
            match s.window.not_measured.iter().any(|m| m == NOT_MEASURED_USAGE) {
                true => "—".to_string(),
                false => format!("{:.2}", s.window.apiserver_etcd_cpu_s / f64::from(s.repeats.max(1))),
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::prom;

    #[test]
    fn the_table_gives_rates_and_costs_per_gang() {
        let s = SizeFigures {
            size: 512,
            repeats: 2,
            pod_rates: PodRates {
                created_per_s: 40.0,
                bound_per_s: 20.0,
                running_per_s: 10.0,
            },
            window: WindowFigures {
                api_requests_total: 1000,
                apiserver_etcd_cpu_s: 3.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let t = latency_table(&[("1.37.1", &s)]);
        let row = t.lines().last().unwrap();
        assert!(row.starts_with("| 1.37.1 | 512 | 2 |"), "{row}");
        assert!(row.contains("| 40 · 20 · 10 | 500 |"), "{row}");
        assert!(row.ends_with("| 1.50 |"), "{row}");
    }

    #[test]
    fn gang_job_per_minor() {
        let r37 = K8sRelease::parse("1.37").unwrap();
        let r36 = K8sRelease::parse("1.36").unwrap();
        let j = gang_job(r37, "g", 8);
        assert_eq!(j["spec"]["parallelism"], 8);
        assert_eq!(j["spec"]["completions"], 8);
        assert_eq!(
            j["spec"]["scheduling"]["schedulingPolicy"],
            json!({"gang": {}})
        );
        assert!(gang_job(r36, "g", 8)["spec"].get("scheduling").is_none());
    }

    #[test]
    fn scheduler_figures_from_two_scrapes() {
        let before = prom::parse(
            "scheduler_podgroup_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 2\n",
        );
        let after = prom::parse(concat!(
            "scheduler_podgroup_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 5\n",
            "scheduler_podgroup_schedule_attempts_total{profile=\"default-scheduler\",result=\"unschedulable\"} 1\n",
            "scheduler_podgroup_scheduling_algorithm_duration_seconds_bucket{le=\"0.001\"} 3\n",
            "scheduler_podgroup_scheduling_algorithm_duration_seconds_bucket{le=\"0.002\"} 3\n",
            "scheduler_podgroup_scheduling_algorithm_duration_seconds_bucket{le=\"+Inf\"} 3\n",
        ));
        let f = scheduler_figures(&before, &after);
        assert_eq!(f.podgroup_attempts["scheduled"], 3.0);
        assert_eq!(f.podgroup_attempts["unschedulable"], 1.0);
        assert!(f.podgroup_algorithm_ms.is_some());
        assert!(f.podgroup_attempt_ms.is_none());
        assert_eq!(scheduler_figures(&[], &[]), SchedulerFigures::default());
    }
}
