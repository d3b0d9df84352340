//! What the scenario's plan implies the Thor identity's kubectl calls are,
//! by purpose, independent of the calls the driver made: the objects an
//! instance replaces and deletes (its templates and `keepJobs`), one stale
//! pod LIST per manager, and the waitJob polls HPCC's backoff allows over
//! each instance's measured life. The measured = predicted check prices
//! the driver's own call list, so it cannot see more calls; this can.
//!
//! Bounds per completed instance (life W s from its start to its last
//! delete, pods started within s s of the first being created):
//! - `replace`, `delete`, `list.stale`: exact;
//! - `poll.active` (waitJob's A): 1 ..= n(W), where n(t) is how many
//!   passes start by t with HPCC's delays (100 ms doubling to 12.8 s) and
//!   no time spent in the calls: an upper bound that assumes nothing;
//! - `poll.scheduled` (E, until the pod is seen scheduled): 1 ..= n(s + 2);
//! - `poll.conditions` (B, while the Job reports no active pod: before the
//!   controller counts the new pod, and at the end): 1 ..= n(s + 2) + 2;
//! - `look.workers` (the manager's one-pass look at its workers after each
//!   idle minute of registration, A + B + E): 0 ..= 3 × ⌊W / 60⌋;
//! - the failure paths' reads (`list.exit-codes`, `list.unscheduled`): 0.
//!
//! Assumptions, stated: the job controller counts a created pod as active
//! within 2 s of the instance's pods starting; a Job (JobSet) reports done
//! within two passes of its manager pod ending. A run with a failed
//! instance is not compared (its calls depend on where it failed).

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::workload::thor::driver::calls::{CallLog, Who};
use crate::workload::thor::driver::env::{InstanceResult, Plan};
use crate::workload::thor::driver::waitjob::{FIRST_DELAY, SETTLED_DELAY};
use crate::workload::thor::kubectl::Call;
use crate::workload::thor::scenario::KeepJobs;
use crate::workload::thor::template::{Mode, render, templates_for};

/// Slack of the "active within" assumption, seconds.
const ACTIVE_WITHIN_S: f64 = 2.0;
/// Passes after the manager pod ended before the Job reports done.
const DONE_WITHIN_PASSES: u64 = 2;
/// The manager's registration wait between looks.
const IDLE_MINUTE_S: f64 = 60.0;

/// The purpose of one of the Thor identity's calls (finer than
/// `Call::kind`: polls apart from the one-off reads).
pub fn purpose(c: &Call) -> &'static str {
    let workers = |name: &str| name.starts_with("thorworker-job-") || name.ends_with("-workers-0");
    match c {
        Call::Replace => "replace",
        Call::Delete { .. } => "delete",
        Call::GetJob { name, .. } | Call::GetJobSet { name, .. } if workers(name) => "look.workers",
        Call::GetJob { jsonpath, .. } | Call::GetJobSet { jsonpath, .. } => {
            if jsonpath.contains(".active}") {
                "poll.active"
            } else {
                "poll.conditions"
            }
        }
        Call::ListPods { jsonpath, .. } if jsonpath.contains("nodeName") => "list.stale",
        Call::ListPods { jsonpath, .. } if jsonpath.contains("exitCode") => "list.exit-codes",
        Call::ListPods { jsonpath, .. } if jsonpath.contains(".reason") => "list.unscheduled",
        Call::ListPods { selector, .. } if workers(selector.trim_start_matches("job-name=")) => {
            "look.workers"
        }
        Call::ListPods { .. } => "poll.scheduled",
    }
}

/// How many calls of each purpose `who` made.
pub fn count_by_purpose(log: &CallLog, who: Who) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (w, c) in log.calls() {
        if w == who {
            *out.entry(purpose(&c).to_string()).or_default() += 1;
        }
    }
    out
}

/// Every purpose the plan bounds.
pub const PURPOSES: &[&str] = &[
    "replace",
    "delete",
    "list.stale",
    "poll.active",
    "poll.conditions",
    "poll.scheduled",
    "look.workers",
    "list.exit-codes",
    "list.unscheduled",
];

/// One instance's measured life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Life {
    /// From its first call to its last delete, seconds.
    pub wall_s: f64,
    /// First pod created → last pod Running, seconds (None: not seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
}

/// What the plan bound needs of a run: the scenario's per-instance
/// objects and each instance's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanInputs {
    /// Objects one instance replaces (thoragent's and its manager's).
    pub replaces: u64,
    /// Objects one completed instance deletes (keepJobs decides).
    pub deletes: u64,
    pub lives: Vec<Life>,
    /// Instances that failed: the run is then not compared.
    pub failed: u32,
}

impl PlanInputs {
    /// The inputs of a run of `plan` on Kubernetes 1.`minor` whose
    /// instances ended as `instances` say.
    pub fn of(plan: &Plan, minor: u32, instances: &[InstanceResult]) -> Result<PlanInputs> {
        let docs = templates_for(plan.mode, minor)
            .iter()
            .map(|t| render(t, &plan.params(0)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        let job_like = docs
            .iter()
            .filter(|d| {
                matches!(
                    d["kind"].as_str(),
                    Some("Job" | "JobSet" | "Workload" | "PodGroup")
                )
            })
            .count() as u64;
        let all = docs.len() as u64;
        let deletes = match (plan.mode, plan.keep_jobs) {
            (_, KeepJobs::All) => all - job_like,
            // The manager's post-job script deletes the worker Job only
            // under keepJobs none; thoragent deletes its own Job after a
            // success either way.
            (Mode::Baseline, KeepJobs::Podfailures) => all - 1,
            _ => all,
        };
        Ok(PlanInputs {
            replaces: all,
            deletes,
            lives: instances
                .iter()
                .map(|i| Life {
                    wall_s: i.wall_ms / 1000.0,
                    start_s: i.start_ms.map(|s| s / 1000.0),
                })
                .collect(),
            failed: instances.iter().filter(|i| i.failed.is_some()).count() as u32,
        })
    }
}

/// How many waitJob passes start within `t` seconds of the loop's start
/// when the calls take no time: the delays before pass k sum to S_k =
/// 0.1 + 0.2 + … (doubling to 12.8 s, then 12.8 s each).
pub fn passes_within(t: f64) -> u64 {
    if t < 0.0 {
        return 0;
    }
    let (mut at, mut delay, mut n) = (0.0, FIRST_DELAY, 0u64);
    while at <= t {
        n += 1;
        at += delay.as_secs_f64();
        delay = (delay * 2).min(SETTLED_DELAY);
    }
    n
}

/// Inclusive [low, high] per purpose, summed over the instances; None
/// when an instance failed (not compared).
pub fn expected(p: &PlanInputs) -> Option<BTreeMap<String, [u64; 2]>> {
    if p.failed > 0 {
        return None;
    }
    let mut out: BTreeMap<String, [u64; 2]> =
        PURPOSES.iter().map(|k| (k.to_string(), [0, 0])).collect();
    let mut add = |k: &str, lo: u64, hi: u64| {
        let e = out.entry(k.to_string()).or_default();
        e[0] += lo;
        e[1] += hi;
    };
    for l in &p.lives {
        let start = l.start_s.unwrap_or(l.wall_s).min(l.wall_s) + ACTIVE_WITHIN_S;
        add("replace", p.replaces, p.replaces);
        add("delete", p.deletes, p.deletes);
        add("list.stale", 1, 1);
        add("poll.active", 1, passes_within(l.wall_s));
        add("poll.scheduled", 1, passes_within(start));
        add(
            "poll.conditions",
            1,
            passes_within(start) + DONE_WITHIN_PASSES,
        );
        add(
            "look.workers",
            0,
            3 * (l.wall_s / IDLE_MINUTE_S).floor() as u64,
        );
    }
    Some(out)
}

/// Each purpose whose count lies outside the plan: (purpose, count,
/// [low, high]). A purpose the plan does not name is outside [0, 0].
pub fn outside(
    counts: &BTreeMap<String, u64>,
    plan: &BTreeMap<String, [u64; 2]>,
) -> Vec<(String, u64, [u64; 2])> {
    let mut keys: Vec<&String> = plan.keys().chain(counts.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let n = counts.get(k).copied().unwrap_or(0);
            let [lo, hi] = plan.get(k).copied().unwrap_or([0, 0]);
            (n < lo || n > hi).then(|| (k.clone(), n, [lo, hi]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str, jsonpath: &str) -> Call {
        Call::GetJob {
            name: name.into(),
            jsonpath: jsonpath.into(),
        }
    }

    fn list(selector: &str, jsonpath: &str) -> Call {
        Call::ListPods {
            selector: selector.into(),
            jsonpath: jsonpath.into(),
        }
    }

    #[test]
    fn passes_follow_hpccs_doubling_delays() {
        // Passes start at 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 25.5, 38.3 s.
        assert_eq!(passes_within(0.0), 1);
        assert_eq!(passes_within(0.05), 1);
        assert_eq!(passes_within(0.1), 2);
        assert_eq!(passes_within(1.0), 4);
        assert_eq!(passes_within(12.0), 7);
        assert_eq!(passes_within(20.0), 8);
        assert_eq!(passes_within(26.0), 9);
        assert_eq!(passes_within(39.0), 10);
        assert_eq!(passes_within(-1.0), 0);
    }

    #[test]
    fn calls_are_told_apart_by_what_they_read() {
        let mgr = "thormanager-job-thor-x-1";
        assert_eq!(purpose(&get(mgr, "{.status.active}")), "poll.active");
        assert_eq!(
            purpose(&Call::GetJobSet {
                name: "thor-x-1".into(),
                jsonpath: "{.status.replicatedJobsStatus[?(@.name==\"manager\")].active}".into()
            }),
            "poll.active"
        );
        assert_eq!(
            purpose(&get(mgr, "{range .status.conditions[*]}{.type}{end}")),
            "poll.conditions"
        );
        assert_eq!(
            purpose(&get("thorworker-job-thor-x-1", "{.status.active}")),
            "look.workers"
        );
        assert_eq!(
            purpose(&get("thor-x-1-workers-0", "{.status.active}")),
            "look.workers"
        );
        let sched = "{.items[*].status.conditions[?(@.type=='PodScheduled')].status}";
        assert_eq!(
            purpose(&list(&format!("job-name={mgr}"), sched)),
            "poll.scheduled"
        );
        assert_eq!(
            purpose(&list("job-name=thorworker-job-thor-x-1", sched)),
            "look.workers"
        );
        assert_eq!(
            purpose(&list(
                "job-name=thorworker-job-w20261123-000001-graph1",
                "{range .items[*]}{.metadata.name},{.spec.nodeName}{'\\n'}{end}"
            )),
            "list.stale"
        );
        assert_eq!(
            purpose(&list("job-name=x", "{.state.terminated.exitCode}")),
            "list.exit-codes"
        );
        assert_eq!(
            purpose(&list("job-name=x", "{.reason}{': '}{.message}")),
            "list.unscheduled"
        );
        assert_eq!(purpose(&Call::Replace), "replace");
    }

    /// Two baseline instances of 20 s each, pods up in 0.5 s.
    fn two_instances() -> PlanInputs {
        PlanInputs {
            replaces: 4,
            deletes: 4,
            lives: vec![
                Life {
                    wall_s: 20.0,
                    start_s: Some(0.5),
                };
                2
            ],
            failed: 0,
        }
    }

    /// What one such instance calls when HPCC's loop runs as modelled:
    /// the calls' own time makes the last pass one fewer than the bound.
    fn calls_of(instances: u64, polls: u64) -> BTreeMap<String, u64> {
        [
            ("replace", 4),
            ("delete", 4),
            ("list.stale", 1),
            ("poll.active", polls),
            ("poll.scheduled", 2),
            ("poll.conditions", 2),
        ]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n * instances))
        .collect()
    }

    #[test]
    fn a_run_as_planned_is_inside_and_thirty_percent_more_polls_is_not() {
        let plan = expected(&two_instances()).unwrap();
        assert_eq!(plan["poll.active"], [2, 16]);
        assert_eq!(plan["replace"], [8, 8]);
        assert_eq!(plan["poll.scheduled"], [2, 10]);
        assert_eq!(plan["poll.conditions"], [2, 14]);
        assert!(outside(&calls_of(2, 7), &plan).is_empty());
        assert!(outside(&calls_of(2, 8), &plan).is_empty());
        // The Thor identity's calls +30 % as polls (7 → 13 per instance:
        // 20 → 26 calls), nothing else moved.
        let worse = calls_of(2, 13);
        assert_eq!(
            outside(&worse, &plan),
            vec![("poll.active".to_string(), 26, [2, 16])]
        );
        // One replace more, or a read of the failure path, is outside too.
        let mut more = calls_of(2, 7);
        *more.get_mut("replace").unwrap() += 1;
        more.insert("list.exit-codes".into(), 1);
        let names: Vec<String> = outside(&more, &plan).into_iter().map(|x| x.0).collect();
        assert_eq!(names, ["list.exit-codes", "replace"]);
        // A purpose the plan never heard of is outside [0, 0].
        let mut odd = calls_of(2, 7);
        odd.insert("something-else".into(), 1);
        assert_eq!(outside(&odd, &plan).len(), 1);
    }

    #[test]
    fn failed_runs_are_not_compared_and_long_registrations_allow_looks() {
        let mut p = two_instances();
        p.failed = 1;
        assert!(expected(&p).is_none());
        let p = PlanInputs {
            lives: vec![Life {
                wall_s: 130.0,
                start_s: None,
            }],
            ..two_instances()
        };
        let plan = expected(&p).unwrap();
        assert_eq!(plan["look.workers"], [0, 6]);
        // No start seen: the pods' start is bounded by the life itself.
        assert_eq!(plan["poll.scheduled"][1], passes_within(132.0));
    }
}
