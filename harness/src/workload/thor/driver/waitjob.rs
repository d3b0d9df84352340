//! HPCC's `waitJob` (system/jlib/jcontainerized.cpp `k8s::waitJob`), the
//! loop thoragent and eclccserver run for the whole life of the Job they
//! launched, and the Thor manager runs once per idle minute while workers
//! register. Per pass:
//! - A: `get jobs J -o jsonpath={.status.active}`;
//! - B: only when A is empty or 0, the Job's conditions: Complete or
//!   SuccessCriteriaMet ends the wait, Failed or FailureTarget lists the
//!   pods for exit codes (C) and fails, no condition goes on;
//! - E: until the pod is seen scheduled, `get pods --selector=job-name=J`
//!   for its PodScheduled status.
//!
//! - E also fails the wait when the output is exactly `False` (one pod,
//!   unscheduled) for longer than `schedulingTimeoutSecs` since the loop
//!   began: it reads the reason (D) and throws "pod not scheduled". A
//!   worker Job of several pods prints several words and never matches;
//!   the manager's one-pass looks start their clock anew each time, so
//!   only thoragent's and eclccserver's whole loops can time out.
//!
//! Between passes the delay starts at 100 ms and doubles while below 10 s
//! (so it settles at 12.8 s) and is never reset. In JobSet mode the same
//! pattern reads the JobSet: its manager replicated Job's `active`, the
//! JobSet's conditions (Completed / Failed), the manager Job's pods.

use std::time::Duration;

use anyhow::{Result, bail};

use crate::poll::Poll;
use crate::workload::thor::driver::calls::{CallLog, Kubectl};
use crate::workload::thor::scenario::KeepJobs;

/// What a waitJob loop reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// A batch Job (thormanager, compile, or the worker Job).
    Job { name: String },
    /// The proof of concept's JobSet; its manager Job is `<name>-manager-0`.
    JobSet { name: String },
}

impl Watched {
    /// The Job whose pods E lists.
    fn pod_job(&self) -> String {
        match self {
            Watched::Job { name } => name.clone(),
            Watched::JobSet { name } => format!("{name}-manager-0"),
        }
    }
}

/// How a watched Job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Complete,
    Failed(String),
    /// Its pod stayed unscheduled past the scheduling timeout; HPCC then
    /// deletes the Job even under keepJobs podfailures.
    NotScheduled(String),
}

impl Ended {
    /// Whether waitJob deletes the Job as it returns (jcontainerized.cpp
    /// `waitJob`'s end): never under keepJobs all; otherwise after success,
    /// after a scheduling timeout, and after a failure unless keepJobs
    /// podfailures keeps it for inspection.
    pub fn deletes_job(&self, keep: KeepJobs) -> bool {
        !matches!(
            (keep, self),
            (KeepJobs::All, _) | (KeepJobs::Podfailures, Ended::Failed(_))
        )
    }

    /// HPCC's message when the Job did not complete.
    pub fn failure(&self) -> Option<&str> {
        match self {
            Ended::Complete => None,
            Ended::Failed(why) | Ended::NotScheduled(why) => Some(why),
        }
    }
}

/// HPCC's default `schedulingTimeoutSecs` (jcontainerized.cpp
/// `defaultPendingTimeSecs`), for the components a scenario does not set.
pub const DEFAULT_SCHEDULING_TIMEOUT: Duration = Duration::from_secs(600);

/// What E carries across passes.
#[derive(Debug, Clone)]
pub struct PassState {
    pub scheduled: bool,
    /// When the loop began and how long a lone pod may stay unscheduled;
    /// None for the manager's one-pass looks.
    pub pending_limit: Option<(std::time::Instant, Duration)>,
}

impl PassState {
    pub fn new(pending_limit: Option<Duration>) -> PassState {
        PassState {
            scheduled: false,
            pending_limit: pending_limit.map(|d| (std::time::Instant::now(), d)),
        }
    }
}

/// The delays between passes: 100 ms doubling while below 10 s.
pub const FIRST_DELAY: Duration = Duration::from_millis(100);
pub const SETTLED_DELAY: Duration = Duration::from_millis(12_800);

/// One pass; Some when the Job has ended. `scheduled` carries E's state
/// across passes.
pub async fn pass(
    k: &Kubectl,
    log: &CallLog,
    w: &Watched,
    state: &mut PassState,
) -> Result<Option<Ended>> {
    let (jobset, name, active_path, done): (bool, &str, &str, &[&str]) = match w {
        Watched::Job { name } => (
            false,
            name,
            "{.status.active}",
            &["Complete: True", "SuccessCriteriaMet: True"],
        ),
        Watched::JobSet { name } => (
            true,
            name,
            "{.status.replicatedJobsStatus[?(@.name==\"manager\")].active}",
            &["Completed: True"],
        ),
    };
    let selector = format!("job-name={}", w.pod_job());
    // A
    let active = k.get(log, jobset, name, active_path).await?;
    let active = active.trim();
    if active.is_empty() || active == "0" {
        // B
        let conds = k
            .get(
                log,
                jobset,
                name,
                "{range .status.conditions[*]}{.type}: {.status} - {.message}|{end}",
            )
            .await?;
        if conds.contains("Failed: True") || conds.contains("FailureTarget: True") {
            // C: the pods' exit codes, for the operator's message, with
            // the kubelet's reason (a container it could not start ends
            // `128` with reason StartError and the runtime's message: a
            // node's fault, not the process's).
            let codes = k
                .list_pods(
                    log,
                    &selector,
                    "{range .items[*].status.containerStatuses[*]}{.state.terminated.exitCode},{.name},{.state.terminated.reason},{.state.terminated.message}|{end}",
                )
                .await?;
            return Ok(Some(Ended::Failed(format!(
                "{}; exit codes {}",
                conds.trim(),
                codes.trim()
            ))));
        }
        if done.iter().any(|c| conds.contains(c)) {
            return Ok(Some(Ended::Complete));
        }
        // A JobSet Kueue holds is suspended ("Suspended: True"): waiting,
        // not ended. HPCC's Job loop would throw "completed with unknown
        // status condition" on a suspended Job (k8sFailOnUnknownErr is
        // true by default), so a queued Thor needs this much changed.
        let suspended = jobset && conds.contains("Suspended: True");
        if !conds.trim().is_empty() && !conds.contains(": False") && !suspended {
            bail!(
                "{name} ended with unknown status condition: {}",
                conds.trim()
            );
        }
    }
    // E
    if !state.scheduled {
        let s = k
            .list_pods(
                log,
                &selector,
                "{.items[*].status.conditions[?(@.type=='PodScheduled')].status}",
            )
            .await?;
        let timed_out = state
            .pending_limit
            .is_some_and(|(start, limit)| start.elapsed() > limit);
        if s.trim() == "False" && timed_out {
            // D: why, for the message.
            let why = k
                .list_pods(
                    log,
                    &selector,
                    "{range .items[*].status.conditions[?(@.type=='PodScheduled')]}{.reason}{': '}{.message}{end}",
                )
                .await?;
            let secs = state.pending_limit.map_or(0, |(_, l)| l.as_secs());
            return Ok(Some(Ended::NotScheduled(format!(
                "Failed to run {} - pod not scheduled after {secs} seconds: {}",
                w.pod_job(),
                why.trim()
            ))));
        }
        if s.trim() == "True" {
            state.scheduled = true;
        }
    }
    Ok(None)
}

/// The whole loop: passes with HPCC's backoff until the Job ends, its
/// lone pod stays unscheduled past `pending_limit`, or `timeout` (the
/// harness's safety net: HPCC waits forever).
pub async fn wait(
    k: &Kubectl,
    log: &CallLog,
    w: &Watched,
    pending_limit: Option<Duration>,
    timeout: Duration,
) -> Result<Ended> {
    let scheduled = tokio::sync::Mutex::new(PassState::new(pending_limit));
    Poll::new(format!("waitJob {w:?}"), timeout)
        .backoff(FIRST_DELAY, SETTLED_DELAY)
        .until(|| async {
            let mut s = scheduled.lock().await;
            pass(k, log, w, &mut s).await
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// jcontainerized.cpp waitJob: `keepJob != all` and (no exception,
    /// or keepJobs not podfailures, or a scheduling timeout).
    #[test]
    fn waitjob_deletes_the_job_as_keepjobs_says() {
        let failed = Ended::Failed("Job failed".into());
        let unscheduled = Ended::NotScheduled("pod not scheduled".into());
        for (keep, [complete, fail, timeout]) in [
            (KeepJobs::None, [true, true, true]),
            (KeepJobs::Podfailures, [true, false, true]),
            (KeepJobs::All, [false, false, false]),
        ] {
            assert_eq!(Ended::Complete.deletes_job(keep), complete, "{keep:?}");
            assert_eq!(failed.deletes_job(keep), fail, "{keep:?}");
            assert_eq!(unscheduled.deletes_job(keep), timeout, "{keep:?}");
        }
        assert_eq!(Ended::Complete.failure(), None);
        assert_eq!(unscheduled.failure(), Some("pod not scheduled"));
    }
}
