//! What drives a metric from one run to the next ([`Driver`], declared
//! by every metric; [`Drive`], resolved for one), and each request class
//! in particular — a client's requests of one verb and
//! resource ("job-controller: create pods") — from one run to the next,
//! so that a baseline judged on another machine holds what the workload
//! fixes to its recorded runs and gives what the machine's timing moves
//! the allowance machines showed (`bench::core::verdict`). From how the
//! clients work upstream:
//!
//! - **creates are the workload's**: a controller creates what the
//!   objects it reconciles ask for — the job controller a pod per
//!   missing one (kubernetes `pkg/controller/job/job_controller.go`,
//!   `manageJob`), JobSet a Job per replicated Job, the scheduler one
//!   binding per pod (`pkg/scheduler/schedule_one.go`, `bind`), a
//!   recorder an Event per transition it reports (client-go
//!   `tools/record`; repeats within its window are patched, not
//!   created) — however fast the machine;
//! - **kwok's pod status patches** are the workload's: one per stage a
//!   pod passes (kwok's stage controller applies a stage's `next` as one
//!   status patch, `pkg/kwok/controllers/stage_controller.go`);
//! - **leases follow the clock**: renewed every few seconds (client-go
//!   `tools/leaderelection`, the node lease controller);
//! - **everything else follows the pace**: status updates (a controller
//!   writes once per sync, and its work queue coalesces the events that
//!   arrive while one sync runs), gets and lists (cache misses, polls,
//!   retries), deletes (the garbage collector's attempts, kwok's, with
//!   retries on conflict: `pkg/controller/garbagecollector`,
//!   `attemptToDeleteItem`), discovery (per kubectl call, and the
//!   controllers' periodic resyncs).
//!
//! The smoke baseline's stored runs bear it out: every class held to the
//! workload here made the same number of requests in every recorded run
//! and every run on the other machines (a test below reads them).

/// What drives a metric from one run to the next, and so how a stored
/// baseline judges it on a machine that is not the one that recorded it
/// (`bench::core::verdict`). Every metric declares one; a test fails on
/// one that does not ([`Driver::Undeclared`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Not declared (what `metric::Spec::new` starts from).
    Undeclared,
    /// The workload alone (objects created, an identity's writes, a call
    /// the scenario makes): the same on any machine, judged against the
    /// recorded runs anywhere.
    Workload,
    /// The workload's pace on the machine (polls with backoff, controllers'
    /// requests coalesced in their queues, status updates; every time and
    /// latency): on a machine unlike the baseline's, or a busy one, judged
    /// against the band measured across machines and loads.
    Pace(&'static str),
    /// The clock (lease renewals and their watch events, resyncs): grows
    /// with the window, so judged per second of the window it was counted
    /// in.
    Clock(&'static str),
    /// A family of kubectl calls: the polls (`get-…`, `list-pods…`) are
    /// paced ([`POLLS`]), every other call is the workload's.
    Calls,
    /// Watch events per resource: a lease's follow the clock
    /// ([`LEASES`]), every other resource's the pace ([`WATCHERS`]).
    Watches,
    /// A family of request classes ("client: verb resource"): each class
    /// by what drives it ([`of_class`]).
    Requests,
    /// A family whose members are named by what drives them: `workload`,
    /// `pace`, `clock` ([`Drive::name`]).
    Named,
}

/// What drives one metric, a family member's resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    Workload,
    Pace(&'static str),
    Clock(&'static str),
}

impl Drive {
    /// Its name as a member of a family named by drives.
    pub fn name(self) -> &'static str {
        match self {
            Drive::Workload => "workload",
            Drive::Pace(_) => "pace",
            Drive::Clock(_) => "clock",
        }
    }
}

/// Why kubectl polls are paced.
pub const POLLS: &str = "polls follow the run's length";
/// Why a lease's watch events follow the clock.
pub const LEASES: &str = "leases are renewed every few seconds";
/// Why other watch events follow the pace.
pub const WATCHERS: &str = "a change reaches every watcher, and status updates coalesce";

impl Driver {
    /// What drives `member` of a family declared so (or the metric
    /// itself); None where nothing was declared.
    pub fn resolve(self, member: &str) -> Option<Drive> {
        Some(match self {
            Driver::Undeclared => return None,
            Driver::Workload => Drive::Workload,
            Driver::Pace(why) => Drive::Pace(why),
            Driver::Clock(why) => Drive::Clock(why),
            Driver::Calls => {
                if ["get-", "list-pods"].iter().any(|p| member.starts_with(p)) {
                    Drive::Pace(POLLS)
                } else {
                    Drive::Workload
                }
            }
            Driver::Watches => {
                if member.starts_with("leases.") {
                    Drive::Clock(LEASES)
                } else {
                    Drive::Pace(WATCHERS)
                }
            }
            Driver::Requests => of_class(member),
            Driver::Named => match member {
                "workload" => Drive::Workload,
                "clock" => Drive::Clock(LEASES),
                _ => Drive::Pace(PACED),
            },
        })
    }
}

/// Why a paced class moves.
pub const PACED: &str =
    "a client's status writes, reads, deletes and resyncs follow the machine's timing";

/// What drives the request class `class` ("client: verb resource"; the
/// client part may be absent).
pub fn of_class(class: &str) -> Drive {
    let (client, request) = class.rsplit_once(": ").unwrap_or(("", class));
    let (verb, resource) = request.split_once(' ').unwrap_or((request, ""));
    if resource == "leases" || resource.starts_with("leases/") {
        return Drive::Clock(LEASES);
    }
    match verb {
        "create" => Drive::Workload,
        "patch" if resource == "pods/status" && client.starts_with("kwok") => Drive::Workload,
        _ => Drive::Pace(PACED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_and_kwoks_stages_are_the_workloads_leases_the_clocks() {
        for c in [
            "system:serviceaccount:kube-system:job-controller: create pods",
            "system:kube-scheduler: create pods/binding",
            "jobset-controller: create events",
            "kwok-controller: patch pods/status",
        ] {
            assert_eq!(of_class(c), Drive::Workload, "{c}");
        }
        for c in [
            "kwok-controller: update leases",
            "system:apiserver: update leases",
        ] {
            assert_eq!(of_class(c), Drive::Clock(LEASES), "{c}");
        }
        for c in [
            "jobset-controller: update jobsets/status",
            "system:serviceaccount:kube-system:job-controller: patch pods",
            "system:kube-scheduler: patch pods/status",
            "kwok-controller: delete pods",
            "thor-agent: get discovery",
            "jobset-controller: list pods",
        ] {
            assert!(matches!(of_class(c), Drive::Pace(_)), "{c}");
        }
    }

    /// Every class held to the workload made the same number of requests
    /// in every run the smoke baseline stores — recorded, and on the
    /// other machines and loads of its band.
    #[test]
    fn the_stored_runs_bear_out_the_workloads_classes() {
        let path = crate::paths::repo_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .join("baselines/local/1.37/smoke.json");
        // Inline, not a `use`: baselines lie above what drives a metric.
        let b: crate::bench::core::baseline::Baseline =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let prefix = "api_requests_by_client_request.";
        let mut held = 0;
        for (mode, metrics) in &b.modes {
            for (name, m) in metrics {
                let Some(class) = name.strip_prefix(prefix) else {
                    continue;
                };
                if of_class(class) != Drive::Workload {
                    continue;
                }
                held += 1;
                let all: Vec<f64> = m.samples.iter().chain(&m.across).copied().collect();
                assert!(all.iter().all(|x| *x == all[0]), "{mode} {class}: {all:?}");
            }
        }
        assert!(held >= 30, "only {held} classes held to the workload");
    }
}
