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
}

/// Watches the pods of one namespace until dropped.
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
        let pods: Arc<Mutex<HashMap<String, PodTimes>>> = Arc::default();
        let api: Api<Pod> = Api::namespaced(client, namespace);
        let sink = pods.clone();
        let task = tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let now = Instant::now();
                let pods: Vec<Pod> = match ev {
                    Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => vec![p],
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
                }
            }
        });
        PodTracker {
            pods,
            task,
            started: Instant::now(),
        }
    }

    pub fn snapshot(&self) -> Vec<PodTimes> {
        self.pods
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Pods whose label `key` is `value`.
    pub fn matching(&self, key: &str, value: &str) -> Vec<PodTimes> {
        self.snapshot()
            .into_iter()
            .filter(|p| p.labels.get(key).map(String::as_str) == Some(value))
            .collect()
    }

    /// Pods carrying every `key=value` of `labels`.
    pub fn matching_all(&self, labels: &[(&str, &str)]) -> Vec<PodTimes> {
        self.snapshot()
            .into_iter()
            .filter(|p| {
                labels
                    .iter()
                    .all(|(k, v)| p.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect()
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
            let running = self
                .matching_all(labels)
                .iter()
                .filter(|p| p.running.is_some())
                .count();
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

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let pods = vec![pod(0, 10, Some(30)), pod(5, 20, Some(100))];
        let f = figures(&pods);
        assert_eq!((f.pods_created, f.containers_created), (2, 4));
        assert_eq!(f.startup_ms.max, 95.0);
        assert_eq!(group_start_ms(&pods), Some(100.0));
        assert_eq!(group_start_ms(&[pod(0, 1, None)]), None);
    }
}
