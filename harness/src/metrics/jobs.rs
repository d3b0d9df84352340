//! Job and JobSet lifecycle latency from a watch, per Job and per JobSet,
//! as clusterloader2's JobLifecycleLatency (perf-tests,
//! clusterloader2/pkg/measurement/common/job_lifecycle_latency.go:
//! created → `status.startTime` → `status.completionTime`) and
//! kube-burner's jobLatency (pkg/measurements/job_latency.go: created →
//! `status.startTime`, created → the Complete condition) measure it — but
//! by the arrival of watch events, in milliseconds, where both read the
//! API's one-second timestamps:
//! - **created → started**: a Job first seen → first seen with
//!   `status.startTime` (the Job controller's first sync: a Job held by
//!   the controller's request limit or by a queue waits here);
//! - **created → ready**: → first seen with `status.ready` > 0 (its first
//!   pod Ready: Running, for pods without readiness checks);
//! - **started → finished**: → first seen with a Complete or Failed
//!   condition True.
//!
//! A JobSet is created when first seen, started and ready when its first
//! child Job is (children carry `jobset.sigs.k8s.io/jobset-name`,
//! sigs.k8s.io/jobset api/jobset/v1alpha2 `JobSetNameKey`), finished at
//! its own Completed or Failed condition. Objects that existed when the
//! watch began are not the window's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use serde::{Deserialize, Serialize};

use crate::metrics::percentiles::Percentiles;

/// The label a JobSet's child Jobs carry with its name.
const JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";

/// One kind's lifecycle over the window's objects of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobLifecycle {
    /// Objects created in the window, and of them those seen started and
    /// finished.
    pub created: u64,
    pub started: u64,
    pub finished: u64,
    pub create_to_start_ms: Percentiles,
    pub create_to_ready_ms: Percentiles,
    pub start_to_finish_ms: Percentiles,
}

/// The kinds' names in figures.
pub const JOB: &str = "job";
pub const JOBSET: &str = "jobset";

#[derive(Debug, Clone)]
struct Times {
    kind: &'static str,
    /// Seen first in the watch's initial list: there before the window.
    before: bool,
    created: Instant,
    started: Option<Instant>,
    ready: Option<Instant>,
    finished: Option<Instant>,
    /// A child Job's JobSet, "namespace/name".
    jobset: Option<String>,
}

type Seen = Arc<Mutex<HashMap<String, Times>>>;

/// Watches Jobs and JobSets (where the cluster serves them) until dropped.
pub struct JobTracker {
    seen: Seen,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for JobTracker {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn key(ns: Option<&String>, name: Option<&String>) -> String {
    format!(
        "{}/{}",
        ns.map_or("", String::as_str),
        name.map_or("", String::as_str)
    )
}

/// Whether condition `types` of an object's `status.conditions` is True.
fn condition(status: Option<&serde_json::Value>, types: &[&str]) -> bool {
    status
        .and_then(|s| s.get("conditions"))
        .and_then(|c| c.as_array())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("status").and_then(|s| s.as_str()) == Some("True")
                    && c.get("type")
                        .and_then(|t| t.as_str())
                        .is_some_and(|t| types.contains(&t))
            })
        })
}

impl JobTracker {
    /// Watch every namespace's Jobs, and JobSets when `jobsets` (the API
    /// is served).
    pub fn start(client: kube::Client, jobsets: bool) -> JobTracker {
        let seen: Seen = Arc::default();
        let mut tasks = vec![tokio::spawn(watch_jobs(
            Api::all(client.clone()),
            seen.clone(),
        ))];
        if jobsets {
            let ar = crate::k8s::jobset::api_resource();
            let api: Api<DynamicObject> = Api::all_with(client, &ar);
            tasks.push(tokio::spawn(watch_jobsets(api, seen.clone())));
        }
        JobTracker { seen, tasks }
    }

    /// Each kind's lifecycle over the objects created since the watch
    /// began.
    pub fn figures(&self) -> BTreeMap<String, JobLifecycle> {
        let Ok(seen) = self.seen.lock() else {
            return BTreeMap::new();
        };
        lifecycle(&seen)
    }
}

async fn watch_jobs(api: Api<Job>, seen: Seen) {
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    while let Some(ev) = stream.next().await {
        let now = Instant::now();
        let (job, before) = match ev {
            Ok(watcher::Event::Apply(j)) => (j, false),
            Ok(watcher::Event::InitApply(j)) => (j, true),
            _ => continue,
        };
        let Ok(mut map) = seen.lock() else { return };
        let m = &job.metadata;
        let jobset = m
            .labels
            .as_ref()
            .and_then(|l| l.get(JOBSET_NAME))
            .map(|js| key(m.namespace.as_ref(), Some(js)));
        let t = map
            .entry(key(m.namespace.as_ref(), m.name.as_ref()))
            .or_insert(Times {
                kind: JOB,
                before,
                created: now,
                started: None,
                ready: None,
                finished: None,
                jobset,
            });
        let status = job.status.as_ref();
        if status.is_some_and(|s| s.start_time.is_some()) {
            t.started.get_or_insert(now);
        }
        if status.and_then(|s| s.ready).unwrap_or(0) > 0 {
            t.ready.get_or_insert(now);
        }
        let value = status.and_then(|s| serde_json::to_value(s).ok());
        if condition(value.as_ref(), &["Complete", "Failed"]) {
            t.finished.get_or_insert(now);
        }
    }
}

async fn watch_jobsets(api: Api<DynamicObject>, seen: Seen) {
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    while let Some(ev) = stream.next().await {
        let now = Instant::now();
        let (js, before) = match ev {
            Ok(watcher::Event::Apply(j)) => (j, false),
            Ok(watcher::Event::InitApply(j)) => (j, true),
            _ => continue,
        };
        let Ok(mut map) = seen.lock() else { return };
        let m = &js.metadata;
        let t = map
            .entry(format!(
                "jobset:{}",
                key(m.namespace.as_ref(), m.name.as_ref())
            ))
            .or_insert(Times {
                kind: JOBSET,
                before,
                created: now,
                started: None,
                ready: None,
                finished: None,
                jobset: None,
            });
        if condition(js.data.get("status"), &["Completed", "Failed"]) {
            t.finished.get_or_insert(now);
        }
    }
}

fn ms(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64() * 1000.0
}

/// The figures of what was seen: a JobSet's start and readiness are its
/// first child Job's.
fn lifecycle(seen: &HashMap<String, Times>) -> BTreeMap<String, JobLifecycle> {
    let first = |of: fn(&Times) -> Option<Instant>, jobset: &str| {
        seen.values()
            .filter(|t| t.jobset.as_deref() == Some(jobset))
            .filter_map(of)
            .min()
    };
    let mut by_kind: BTreeMap<String, Vec<Times>> = BTreeMap::new();
    for (k, t) in seen.iter().filter(|(_, t)| !t.before) {
        let mut t = t.clone();
        if t.kind == JOBSET {
            let name = k.trim_start_matches("jobset:");
            t.started = first(|c| c.started, name);
            t.ready = first(|c| c.ready, name);
        }
        by_kind.entry(t.kind.to_string()).or_default().push(t);
    }
    by_kind
        .into_iter()
        .map(|(kind, ts)| {
            let of = |f: &dyn Fn(&Times) -> Option<f64>| {
                Percentiles::of_ms(&ts.iter().filter_map(f).collect::<Vec<_>>())
            };
            let l = JobLifecycle {
                created: ts.len() as u64,
                started: ts.iter().filter(|t| t.started.is_some()).count() as u64,
                finished: ts.iter().filter(|t| t.finished.is_some()).count() as u64,
                create_to_start_ms: of(&|t| Some(ms(t.created, t.started?))),
                create_to_ready_ms: of(&|t| Some(ms(t.created, t.ready?))),
                start_to_finish_ms: of(&|t| Some(ms(t.started?, t.finished?))),
            };
            (kind, l)
        })
        .collect()
}

/// Per kind: counts and percentiles combined as every figure is.
impl crate::metrics::combine::Combine for JobLifecycle {
    fn combine(runs: &[&Self]) -> Self {
        crate::metrics::combine::typical!(runs; JobLifecycle {
            created,
            started,
            finished,
            create_to_start_ms,
            create_to_ready_ms,
            start_to_finish_ms,
        })
    }
}

/// Per kind, the runs that had it.
impl crate::metrics::combine::Combine for BTreeMap<String, JobLifecycle> {
    fn combine(runs: &[&Self]) -> Self {
        let kinds: std::collections::BTreeSet<&String> =
            runs.iter().flat_map(|m| m.keys()).collect();
        kinds
            .into_iter()
            .map(|k| {
                let present: Vec<&JobLifecycle> = runs.iter().filter_map(|m| m.get(k)).collect();
                (
                    k.clone(),
                    crate::metrics::combine::Combine::combine(&present),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_jobset_starts_with_its_first_child_and_what_was_there_before_is_not_counted() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let job = |created: u64,
                   started: Option<u64>,
                   ready: Option<u64>,
                   finished: Option<u64>,
                   jobset: Option<&str>,
                   before: bool| Times {
            kind: JOB,
            before,
            created: at(created),
            started: started.map(at),
            ready: ready.map(at),
            finished: finished.map(at),
            jobset: jobset.map(str::to_string),
        };
        let seen = HashMap::from([
            (
                "ns/a".to_string(),
                job(0, Some(100), Some(300), Some(1300), None, false),
            ),
            (
                "ns/b".to_string(),
                job(0, Some(500), None, None, None, false),
            ),
            (
                "ns/old".to_string(),
                job(0, Some(1), Some(1), Some(1), None, true),
            ),
            (
                "ns/s-w-0".to_string(),
                job(50, Some(250), Some(450), None, Some("ns/s"), false),
            ),
            (
                "ns/s-m-0".to_string(),
                job(60, Some(150), Some(900), None, Some("ns/s"), false),
            ),
            (
                "jobset:ns/s".to_string(),
                Times {
                    kind: JOBSET,
                    before: false,
                    created: at(0),
                    started: None,
                    ready: None,
                    finished: Some(at(2150)),
                    jobset: None,
                },
            ),
        ]);
        let f = lifecycle(&seen);
        let jobs = &f[JOB];
        assert_eq!((jobs.created, jobs.started, jobs.finished), (4, 4, 1));
        assert_eq!(jobs.start_to_finish_ms.max, 1200.0);
        assert_eq!(jobs.create_to_start_ms.max, 500.0);
        let js = &f[JOBSET];
        assert_eq!((js.created, js.started, js.finished), (1, 1, 1));
        // Its first child started at 150 ms, the first ready at 450 ms.
        assert_eq!(js.create_to_start_ms.p50, 150.0);
        assert_eq!(js.create_to_ready_ms.p50, 450.0);
        assert_eq!(js.start_to_finish_ms.p50, 2000.0);
    }

    #[test]
    fn a_condition_counts_only_when_true() {
        let s = serde_json::json!({"conditions": [
            {"type": "Complete", "status": "False"},
            {"type": "Failed", "status": "True"}
        ]});
        assert!(condition(Some(&s), &["Complete", "Failed"]));
        assert!(!condition(Some(&s), &["Complete"]));
        assert!(!condition(None, &["Complete"]));
    }
}
