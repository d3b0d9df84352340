//! Thor instances competing for room, read from the pods' own timeline
//! (bound, ended) as the cluster reported it through the watch:
//! - a **deadlock** is a stretch of at least `STALL` in which no Thor pod
//!   was bound or ended while pods waited, no instance had all its pods
//!   placed, and some instance held bound pods — every instance waits for
//!   room another holds. It lasts until a pod binds or ends (HPCC's
//!   registration timeout failing a manager, or the run's end);
//! - **wasted** pod-seconds are those a bound pod spent before every pod
//!   of its instance was bound: room held by an instance that could not
//!   run yet (or ever).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::output::markdown_table_head;

use crate::metrics::pods::PodTimes;
use crate::workload::thor::driver::{COMPONENT_LABEL, JOB_LABEL};

/// How long nothing may move before waiting instances count as a
/// deadlock: well past the scheduler's longest retry backoff (10 s) and
/// the time a freed node takes to be seen, far below HPCC's timeouts.
pub const STALL: Duration = Duration::from_secs(20);

/// One instance's pods at the deadlock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub instance: String,
    pub bound: u32,
    pub pods: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deadlock {
    /// Seconds from the first Thor pod to the last move before the stall.
    pub at_s: f64,
    /// How long nothing moved.
    pub lasted_s: f64,
    /// false: still stuck when the run ended.
    pub broken: bool,
    pub placement: Vec<Placement>,
}

/// What contention did to a mode's instances.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Contention {
    /// Room the nodes had, in whole instances' CPU.
    pub room_for_instances: Option<f64>,
    pub instances_completed: u32,
    pub instances_failed: u32,
    /// Why each failed instance failed, as HPCC reports it.
    pub failures: Vec<String>,
    pub workunits_failed: u32,
    pub deadlock: Option<Deadlock>,
    /// Pod-seconds bound to instances not yet (or never) fully placed.
    pub wasted_pod_seconds: f64,
    /// The cure's own API requests: the scheduler's and Kueue's.
    pub scheduler_requests: u64,
    pub kueue_requests: u64,
    /// The most instances with a Thor pod alive at one moment (from the
    /// pod timeline): 1 when a queue ran them one at a time (instance B's
    /// first pod created after A's pods ended).
    #[serde(default)]
    pub most_instances_at_once: u32,
}

struct Instance<'a> {
    pods: Vec<&'a PodTimes>,
    /// When its `expected`-th pod was bound.
    full: Option<Instant>,
}

fn instances(pods: &[PodTimes], expected: u32) -> BTreeMap<String, Instance<'_>> {
    let mut out: BTreeMap<String, Instance<'_>> = BTreeMap::new();
    for p in pods {
        let role = p.labels.get(COMPONENT_LABEL).map(String::as_str);
        if !matches!(role, Some("thormanager" | "thorworker")) {
            continue;
        }
        let Some(job) = p.labels.get(JOB_LABEL) else {
            continue;
        };
        out.entry(job.clone())
            .or_insert(Instance {
                pods: vec![],
                full: None,
            })
            .pods
            .push(p);
    }
    for i in out.values_mut() {
        let mut bound: Vec<Instant> = i.pods.iter().filter_map(|p| p.scheduled).collect();
        bound.sort();
        i.full = bound.get(expected.max(1) as usize - 1).copied();
    }
    out
}

/// The first deadlock among the Thor pods of `pods` (instances of
/// `expected` pods each), looking until `end`.
pub fn deadlock(pods: &[PodTimes], expected: u32, end: Instant) -> Option<Deadlock> {
    let all = instances(pods, expected);
    let first = all
        .values()
        .flat_map(|i| &i.pods)
        .map(|p| p.created)
        .min()?;
    let mut moves: Vec<Instant> = all
        .values()
        .flat_map(|i| &i.pods)
        .flat_map(|p| [p.scheduled, p.ended])
        .flatten()
        .filter(|t| *t <= end)
        .collect();
    moves.push(first);
    moves.sort();
    moves.dedup();
    for (k, &t) in moves.iter().enumerate() {
        let next = moves.get(k + 1).copied();
        let until = next.unwrap_or(end);
        if until.saturating_duration_since(t) < STALL {
            continue;
        }
        // The state at the end of the stretch: pods created during it
        // (a manager's workers, a Job's later pods) wait too.
        let probe = until
            .checked_sub(Duration::from_millis(1))
            .unwrap_or(until)
            .max(t);
        let mut placement = Vec::new();
        let (mut waiting, mut holding, mut running) = (false, false, false);
        for (name, i) in &all {
            let live = |p: &&&PodTimes| p.created <= probe && p.ended.is_none_or(|e| e > probe);
            let alive: Vec<_> = i.pods.iter().filter(live).collect();
            if alive.is_empty() {
                continue;
            }
            let bound = alive
                .iter()
                .filter(|p| p.scheduled.is_some_and(|s| s <= probe))
                .count() as u32;
            waiting |= bound < alive.len() as u32;
            holding |= bound > 0;
            running |= i.full.is_some_and(|f| f <= probe);
            placement.push(Placement {
                instance: name.clone(),
                bound,
                pods: expected,
            });
        }
        if waiting && holding && !running {
            return Some(Deadlock {
                at_s: t.duration_since(first).as_secs_f64(),
                lasted_s: until.duration_since(t).as_secs_f64(),
                broken: next.is_some(),
                placement,
            });
        }
    }
    None
}

/// The most instances alive at one moment: an instance lives from its
/// first Thor pod's creation to its last pod's end (`end` for a pod that
/// had not ended). Touching ends do not overlap.
pub fn most_instances_at_once(pods: &[PodTimes], expected: u32, end: Instant) -> u32 {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for i in instances(pods, expected).values() {
        let Some(from) = i.pods.iter().map(|p| p.created).min() else {
            continue;
        };
        let to = i
            .pods
            .iter()
            .map(|p| p.ended.unwrap_or(end))
            .max()
            .unwrap_or(end)
            .max(from);
        edges.push((from, 1));
        edges.push((to, -1));
    }
    // An end before a start at the same instant.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as u32
}

/// Pod-seconds bound before their instance was fully placed.
pub fn wasted_pod_seconds(pods: &[PodTimes], expected: u32, end: Instant) -> f64 {
    instances(pods, expected)
        .values()
        .flat_map(|i| i.pods.iter().map(move |p| (i.full, *p)))
        .filter_map(|(full, p)| {
            let from = p.scheduled?;
            let to = [p.ended, full, Some(end)].into_iter().flatten().min()?;
            Some(to.saturating_duration_since(from).as_secs_f64())
        })
        .sum()
}

/// One mode's row source: its first run's figures, its wall time in
/// seconds, and every run's figures (`--repeat`).
pub type ModeFigures<'a> = (&'a str, &'a Contention, f64, Vec<&'a Contention>);

/// The contention table of the modes that have figures (empty when none
/// has): what a Thor operator compares before turning gang scheduling or
/// a queue on. With repeats, how many runs deadlocked and failed
/// instances, since placement order can differ from run to run.
pub fn markdown(modes: &[ModeFigures<'_>]) -> String {
    if modes.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n### Contention\n\n");
    let names: Vec<&str> = modes.iter().map(|(m, _, _, _)| *m).collect();
    markdown_table_head(&mut s, "", &names);
    type Cell = fn(&Contention, f64) -> String;
    let rows: [(&str, Cell); 8] = [
        ("room (instances)", |c, _| {
            c.room_for_instances
                .map_or("—".into(), |r| format!("{r:.2}"))
        }),
        ("instances completed", |c, _| {
            c.instances_completed.to_string()
        }),
        ("instances failed", |c, _| c.instances_failed.to_string()),
        ("deadlock", |c, _| match &c.deadlock {
            None => "none".into(),
            Some(d) => {
                let placed: Vec<String> = d
                    .placement
                    .iter()
                    .map(|p| format!("{}/{}", p.bound, p.pods))
                    .collect();
                format!(
                    "at {:.0} s, {} for {:.0} s; pods bound {}",
                    d.at_s,
                    if d.broken { "broken" } else { "unbroken" },
                    d.lasted_s,
                    placed.join(" + ")
                )
            }
        }),
        ("time to finish all (s)", |_, wall| format!("{wall:.1}")),
        ("wasted pod-seconds", |c, _| {
            format!("{:.1}", c.wasted_pod_seconds)
        }),
        ("scheduler requests", |c, _| {
            c.scheduler_requests.to_string()
        }),
        ("Kueue requests", |c, _| c.kueue_requests.to_string()),
    ];
    for (label, f) in rows {
        let _ = write!(s, "| {label} |");
        for (_, c, wall, _) in modes {
            let _ = write!(s, " {} |", f(c, *wall));
        }
        s.push('\n');
    }
    if modes.iter().any(|(_, _, _, runs)| runs.len() > 1) {
        let _ = write!(s, "| runs that deadlocked / failed an instance |");
        for (_, _, _, runs) in modes {
            let dead = runs.iter().filter(|c| c.deadlock.is_some()).count();
            let failed = runs.iter().filter(|c| c.instances_failed > 0).count();
            let _ = write!(s, " {dead} / {failed} of {} |", runs.len());
        }
        s.push('\n');
    }
    for (m, c, _, _) in modes {
        for f in &c.failures {
            let _ = writeln!(s, "- {m}: {f}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(t0: Instant, job: &str, role: &str, bound: Option<u64>, ended: Option<u64>) -> PodTimes {
        let at = |s: u64| t0 + Duration::from_secs(s);
        PodTimes {
            name: format!("{job}-{role}"),
            labels: [(JOB_LABEL, job), (COMPONENT_LABEL, role)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            containers: 1,
            created: t0,
            scheduled: bound.map(at),
            running: bound.map(at),
            ended: ended.map(at),
        }
    }

    /// Issue 30: serialisation is read from the pod timeline — B's first
    /// pod after A's last ended is one at a time; any overlap is two.
    #[test]
    fn instances_at_once_from_the_pod_timeline() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(100);
        let later = |mut p: PodTimes, s: u64| {
            p.created = t0 + Duration::from_secs(s);
            p
        };
        let serial = vec![
            pod(t0, "a", "thormanager", Some(1), Some(30)),
            pod(t0, "a", "thorworker", Some(2), Some(30)),
            later(pod(t0, "b", "thormanager", Some(31), Some(60)), 30),
            later(pod(t0, "b", "thorworker", Some(32), None), 31),
        ];
        assert_eq!(most_instances_at_once(&serial, 2, end), 1);
        let mut overlapping = serial.clone();
        // B's manager created one second before A's last pod ended.
        overlapping[2].created = t0 + Duration::from_secs(29);
        assert_eq!(most_instances_at_once(&overlapping, 2, end), 2);
        // A pod that never ended keeps its instance alive to the end.
        let mut stuck = serial;
        stuck[1].ended = None;
        assert_eq!(most_instances_at_once(&stuck, 2, end), 2);
        assert_eq!(most_instances_at_once(&[], 2, end), 0);
    }

    /// Room for one instance of three pods, two managers first: each
    /// instance holds pods and waits for more until a manager gives up.
    #[test]
    fn two_partly_placed_instances_are_a_deadlock_until_one_gives_up() {
        let t0 = Instant::now();
        let pods = vec![
            pod(t0, "a", "thormanager", Some(1), Some(70)),
            pod(t0, "a", "thorworker", Some(3), Some(70)),
            pod(t0, "a", "thorworker", None, Some(70)),
            pod(t0, "b", "thormanager", Some(1), None),
            pod(t0, "b", "thorworker", Some(71), None),
            pod(t0, "b", "thorworker", Some(72), None),
        ];
        let end = t0 + Duration::from_secs(100);
        let d = deadlock(&pods, 3, end).expect("a deadlock");
        assert_eq!((d.at_s, d.lasted_s, d.broken), (3.0, 67.0, true));
        let bound: Vec<u32> = d.placement.iter().map(|p| p.bound).collect();
        assert_eq!(bound, vec![2, 1]);
        // a: 69 + 67 s held, never placed; b's manager 71 s, a worker 1 s.
        assert_eq!(wasted_pod_seconds(&pods, 3, end), 69.0 + 67.0 + 71.0 + 1.0);
    }

    /// Baseline's order: both managers bound, then each manager's workers
    /// created, one bound; the other workers are created after the last
    /// bind and wait from then on.
    #[test]
    fn workers_created_after_the_last_bind_still_wait() {
        let t0 = Instant::now();
        let late = |job: &str, bound: Option<u64>| {
            let mut p = pod(t0, job, "thorworker", bound, None);
            p.created = t0 + Duration::from_secs(2);
            p
        };
        let pods = vec![
            pod(t0, "a", "thormanager", Some(1), None),
            pod(t0, "b", "thormanager", Some(1), None),
            late("a", Some(2)),
            late("a", None),
            late("b", None),
            late("b", None),
        ];
        let d = deadlock(&pods, 3, t0 + Duration::from_secs(60)).expect("a deadlock");
        assert_eq!((d.at_s, d.broken), (2.0, false));
        let bound: Vec<u32> = d.placement.iter().map(|p| p.bound).collect();
        assert_eq!(bound, vec![2, 1]);
    }

    #[test]
    fn the_table_counts_the_runs_that_deadlocked() {
        let calm = Contention {
            instances_completed: 2,
            ..Default::default()
        };
        let stuck = Contention {
            instances_failed: 2,
            failures: vec!["i-1: the manager threw".into()],
            deadlock: Some(Deadlock {
                at_s: 1.0,
                lasted_s: 60.0,
                broken: true,
                placement: vec![],
            }),
            ..Default::default()
        };
        let md = markdown(&[("jobset", &calm, 30.0, vec![&calm, &stuck, &calm])]);
        assert!(
            md.contains("| runs that deadlocked / failed an instance | 1 / 1 of 3 |"),
            "{md}"
        );
        assert!(md.contains("| deadlock | none |"), "{md}");
        let one = markdown(&[("baseline", &stuck, 66.0, vec![&stuck])]);
        assert!(!one.contains("runs that deadlocked"), "{one}");
        assert!(one.contains("- baseline: i-1: the manager threw"), "{one}");
        assert_eq!(markdown(&[]), "");
    }

    /// One instance runs whole while the other waits unbound: queueing,
    /// not a deadlock.
    #[test]
    fn a_running_instance_beside_a_waiting_one_is_no_deadlock() {
        let t0 = Instant::now();
        let pods = vec![
            pod(t0, "a", "thormanager", Some(1), Some(60)),
            pod(t0, "a", "thorworker", Some(1), Some(60)),
            pod(t0, "b", "thormanager", Some(61), None),
            pod(t0, "b", "thorworker", Some(62), None),
        ];
        let end = t0 + Duration::from_secs(100);
        assert_eq!(deadlock(&pods, 2, end), None);
        // b's manager waited a second for its worker.
        assert_eq!(wasted_pod_seconds(&pods, 2, end), 1.0);
    }

    /// Pods that nothing else moved for a while, but all of one instance
    /// bound: a slow graph, not a deadlock.
    #[test]
    fn a_long_graph_is_no_deadlock() {
        let t0 = Instant::now();
        let pods = vec![
            pod(t0, "a", "thormanager", Some(1), None),
            pod(t0, "a", "thorworker", Some(2), None),
        ];
        assert_eq!(deadlock(&pods, 2, t0 + Duration::from_secs(300)), None);
    }
}
