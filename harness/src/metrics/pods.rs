//! Pod lifecycle timing from a watch: the moment each pod is first seen,
//! bound to a node, and Running, by arrival time of watch events (finer
//! than the API's one-second timestamps).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::watcher;
use serde::{Deserialize, Serialize};

use crate::metrics::percentiles::Percentiles;

#[derive(Debug, Clone)]
pub struct PodTimes {
    pub name: String,
    pub labels: std::collections::BTreeMap<String, String>,
    pub containers: u32,
    pub created: Instant,
    pub scheduled: Option<Instant>,
    pub running: Option<Instant>,
    /// First seen Succeeded or Failed, or deleted: no longer holding its
    /// node's room.
    pub ended: Option<Instant>,
}

fn has_all(p: &PodTimes, labels: &[(&str, &str)]) -> bool {
    labels
        .iter()
        .all(|(k, v)| p.labels.get(*k).map(String::as_str) == Some(*v))
}

/// Watches the pods of one namespace (or of all) until dropped.
pub struct PodTracker {
    pods: Arc<Mutex<HashMap<String, PodTimes>>>,
    task: tokio::task::JoinHandle<()>,
    pub started: Instant,
}

impl Drop for PodTracker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PodTracker {
    pub fn start(client: kube::Client, namespace: &str) -> PodTracker {
        Self::watch(Api::namespaced(client, namespace))
    }

    /// The pods of every namespace (`measure`: a workload may make its
    /// own namespaces).
    pub fn start_all(client: kube::Client) -> PodTracker {
        Self::watch(Api::all(client))
    }

    fn watch(api: Api<Pod>) -> PodTracker {
        let pods: Arc<Mutex<HashMap<String, PodTimes>>> = Arc::default();
        let sink = pods.clone();
        let task = tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let now = Instant::now();
                let (pods, deleted): (Vec<Pod>, bool) = match ev {
                    Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => {
                        (vec![p], false)
                    }
                    Ok(watcher::Event::Delete(p)) => (vec![p], true),
                    _ => continue,
                };
                let Ok(mut map) = sink.lock() else { return };
                for p in pods {
                    let Some(uid) = p.metadata.uid.clone() else {
                        continue;
                    };
                    let entry = map.entry(uid).or_insert_with(|| PodTimes {
                        name: p.metadata.name.clone().unwrap_or_default(),
                        labels: p.metadata.labels.clone().unwrap_or_default(),
                        containers: p.spec.as_ref().map_or(0, |s| s.containers.len() as u32),
                        created: now,
                        scheduled: None,
                        running: None,
                        ended: None,
                    });
                    let bound = p.spec.as_ref().is_some_and(|s| s.node_name.is_some());
                    if bound && entry.scheduled.is_none() {
                        entry.scheduled = Some(now);
                    }
                    let running =
                        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                    if running && entry.running.is_none() {
                        entry.running = Some(now);
                    }
                    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                    let done = deleted || matches!(phase, Some("Succeeded" | "Failed"));
                    if done && entry.ended.is_none() {
                        entry.ended = Some(now);
                    }
                }
            }
        });
        PodTracker {
            pods,
            task,
            started: Instant::now(),
        }
    }

    /// The pods `f` picks, mapped, read under the lock: the polls (every
    /// 20–50 ms, several at once, over thousands of pods) copy only what
    /// they ask for.
    fn select<T>(&self, mut f: impl FnMut(&PodTimes) -> Option<T>) -> Vec<T> {
        self.pods
            .lock()
            .map(|m| m.values().filter_map(&mut f).collect())
            .unwrap_or_default()
    }

    pub fn snapshot(&self) -> Vec<PodTimes> {
        self.select(|p| Some(p.clone()))
    }

    /// Pods whose label `key` is `value`.
    pub fn matching(&self, key: &str, value: &str) -> Vec<PodTimes> {
        self.matching_all(&[(key, value)])
    }

    /// Pods carrying every `key=value` of `labels`.
    pub fn matching_all(&self, labels: &[(&str, &str)]) -> Vec<PodTimes> {
        self.select(|p| has_all(p, labels).then(|| p.clone()))
    }

    /// How many pods carrying every label of `labels` have been created,
    /// bound and seen Running, counted without copying any.
    pub fn counts_where(&self, labels: &[(&str, &str)]) -> (usize, usize, usize) {
        let Ok(map) = self.pods.lock() else {
            return (0, 0, 0);
        };
        map.values()
            .filter(|p| has_all(p, labels))
            .fold((0, 0, 0), |(c, b, r), p| {
                (
                    c + 1,
                    b + usize::from(p.scheduled.is_some()),
                    r + usize::from(p.running.is_some()),
                )
            })
    }

    /// Wait until `count` pods carrying every label of `labels` have been
    /// seen Running.
    pub async fn wait_running_where(
        &self,
        labels: &[(&str, &str)],
        count: usize,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let what: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        crate::poll::Poll::new(
            format!("{count} pods with {} Running", what.join(",")),
            timeout,
        )
        .every(Duration::from_millis(50))
        .until_state(|| async {
            let (_, _, running) = self.counts_where(labels);
            Ok(if running >= count {
                Ok(())
            } else {
                Err(format!("{running} of {count} running"))
            })
        })
        .await
    }

    /// Wait until `count` pods labelled key=value have been seen Running.
    pub async fn wait_running(
        &self,
        key: &str,
        value: &str,
        count: usize,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        self.wait_running_where(&[(key, value)], count, timeout)
            .await
    }
}

/// Start-up figures of a set of pods, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PodFigures {
    pub pods_created: u64,
    pub containers_created: u64,
    /// created → Running
    pub startup_ms: Percentiles,
    /// created → bound
    pub schedule_ms: Percentiles,
    /// bound → Running
    pub scheduled_to_running_ms: Percentiles,
}

fn ms(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64() * 1000.0
}

pub fn figures(pods: &[PodTimes]) -> PodFigures {
    let startup: Vec<f64> = pods
        .iter()
        .filter_map(|p| p.running.map(|r| ms(p.created, r)))
        .collect();
    let schedule: Vec<f64> = pods
        .iter()
        .filter_map(|p| p.scheduled.map(|s| ms(p.created, s)))
        .collect();
    let s2r: Vec<f64> = pods
        .iter()
        .filter_map(|p| Some(ms(p.scheduled?, p.running?)))
        .collect();
    PodFigures {
        pods_created: pods.len() as u64,
        containers_created: pods.iter().map(|p| u64::from(p.containers)).sum(),
        startup_ms: Percentiles::of_ms(&startup),
        schedule_ms: Percentiles::of_ms(&schedule),
        scheduled_to_running_ms: Percentiles::of_ms(&s2r),
    }
}

/// First pod of a set created → last pod Running, in ms (None if any is
/// not Running).
pub fn group_start_ms(pods: &[PodTimes]) -> Option<f64> {
    let first = pods.iter().map(|p| p.created).min()?;
    let last = pods
        .iter()
        .map(|p| p.running)
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .max()?;
    Some(ms(first, last))
}

/// Pods per second through each step for one group of pods (a gang): the
/// pods that reached the step ÷ the time from the group's first pod
/// created to the last one reaching it. 0 where no pod reached it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PodRates {
    pub created_per_s: f64,
    pub bound_per_s: f64,
    pub running_per_s: f64,
}

pub fn rates(pods: &[PodTimes]) -> PodRates {
    let Some(first) = pods.iter().map(|p| p.created).min() else {
        return PodRates::default();
    };
    let per_s = |at: Vec<Instant>| match at.iter().max() {
        Some(last) if *last > first => at.len() as f64 / (ms(first, *last) / 1000.0),
        _ => 0.0,
    };
    PodRates {
        created_per_s: per_s(pods.iter().map(|p| p.created).collect()),
        bound_per_s: per_s(pods.iter().filter_map(|p| p.scheduled).collect()),
        running_per_s: per_s(pods.iter().filter_map(|p| p.running).collect()),
    }
}

impl crate::metrics::combine::Combine for PodRates {
    fn combine(runs: &[&Self]) -> Self {
        PodRates::mean(&runs.iter().map(|r| **r).collect::<Vec<_>>())
    }
}

impl PodRates {
    /// The mean of several groups' rates (repeats of one size).
    pub fn mean(all: &[PodRates]) -> PodRates {
        let n = all.len().max(1) as f64;
        PodRates {
            created_per_s: all.iter().map(|r| r.created_per_s).sum::<f64>() / n,
            bound_per_s: all.iter().map(|r| r.bound_per_s).sum::<f64>() / n,
            running_per_s: all.iter().map(|r| r.running_per_s).sum::<f64>() / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_count_each_step_from_the_first_pod_created() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let pod = |c: u64, s: Option<u64>, r: Option<u64>| PodTimes {
            name: "p".into(),
            labels: Default::default(),
            containers: 1,
            created: at(c),
            scheduled: s.map(at),
            running: r.map(at),
            ended: None,
        };
        // 4 pods created over 1 s, bound by 2 s, 3 of them Running by 4 s.
        let pods = vec![
            pod(0, Some(500), Some(1000)),
            pod(250, Some(1000), Some(2000)),
            pod(500, Some(1500), Some(4000)),
            pod(1000, Some(2000), None),
        ];
        let r = rates(&pods);
        assert_eq!(r.created_per_s, 4.0);
        assert_eq!(r.bound_per_s, 2.0);
        assert_eq!(r.running_per_s, 0.75);
        assert_eq!(rates(&[]), PodRates::default());
        // One pod: no interval, no rate.
        assert_eq!(rates(&pods[..1]).created_per_s, 0.0);
        let m = PodRates::mean(&[r, PodRates::default()]);
        assert_eq!(m.created_per_s, 2.0);
    }

    #[test]
    fn figures_and_group_start() {
        let t0 = Instant::now();
        let pod = |c: u64, s: u64, r: Option<u64>| PodTimes {
            name: "p".into(),
            labels: Default::default(),
            containers: 2,
            created: t0 + Duration::from_millis(c),
            scheduled: Some(t0 + Duration::from_millis(s)),
            running: r.map(|r| t0 + Duration::from_millis(r)),
            ended: None,
        };
        let pods = vec![pod(0, 10, Some(30)), pod(5, 20, Some(100))];
        let f = figures(&pods);
        assert_eq!((f.pods_created, f.containers_created), (2, 4));
        assert_eq!(f.startup_ms.max, 95.0);
        assert_eq!(group_start_ms(&pods), Some(100.0));
        assert_eq!(group_start_ms(&[pod(0, 1, None)]), None);
    }
}
