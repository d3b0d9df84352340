//! The Thor manager process (thorlcr/master): started when its pod runs,
//! it creates the workers (baseline: thmastermain.cpp `main` replaces the
//! worker NetworkPolicy, then the worker Job), waits for every worker to
//! register (after each idle minute a one-pass waitJob on the workers:
//! `CRegistryServer::connect`), lists pods once with a stale selector at
//! its first graph (thgraphmanager.cpp `CPodInfo::ensureCollected`), runs
//! graphs and lingers `lingerPeriod` for more (the timer restarts after
//! every graph), then shuts the workers down and exits. After it exits,
//! `k8s_postjob_clearup.sh` deletes the worker Job (`--grace-period=120`,
//! keepJobs none only) and the worker NetworkPolicy, in that order. The
//! pod succeeds when the postrun sidecar notices, up to 10 s later.
//!
//! A manager whose workers have not all registered within
//! `maxWorkerRegistrationMins` (checked after each idle minute, before the
//! look at the workers) throws, and so does one whose look finds the
//! worker Job failed: the process exits with an error, the post-job script
//! cleans up as above, and the pod fails.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::workload::thor::driver::dispatch::Graph;
use crate::workload::thor::driver::env::{COMPONENT_LABEL, JOB_LABEL, Plan, ThorEnv};
use crate::workload::thor::driver::kubelet;
use crate::workload::thor::driver::waitjob::{self, Watched};
use crate::workload::thor::template::Mode;

/// HPCC's registration receive timeout: one idle minute.
pub const REGISTRATION_WAIT: Duration = Duration::from_secs(60);

/// The Job the manager looks at while its workers register: the worker
/// Job it created (baseline) or the JobSet's workers Job.
pub fn worker_watch(mode: Mode, job: &str) -> Watched {
    match mode {
        Mode::Baseline => Watched::Job {
            name: format!("thorworker-job-{job}"),
        },
        Mode::Jobset | Mode::JobsetGang | Mode::JobsetKueue => Watched::Job {
            name: format!("{job}-workers-0"),
        },
    }
}

/// How the manager process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagerEnd {
    /// It ran this many graphs.
    Ran(u32),
    /// It threw, with HPCC's message.
    Failed(String),
}

/// What the manager of one instance creates (baseline), by role.
pub struct WorkerDocs<'a> {
    pub network_policy: &'a Value,
    pub job: &'a Value,
}

/// Run the manager process of instance `job` from its first graph to its
/// pod's end.
pub async fn run(
    env: &ThorEnv,
    plan: &Plan,
    job: &str,
    workers: Option<WorkerDocs<'_>>,
    first: Graph,
) -> Result<ManagerEnd> {
    let (k, log) = (&env.thor, &env.calls);
    if let Some(w) = &workers {
        k.replace(log, w.network_policy).await?;
        k.replace(log, w.job).await?;
    }
    let worker_job = worker_watch(plan.mode, job);
    // Registration: workers report over HPCC's own messaging once their
    // pods run; each idle minute the manager looks at the worker Job.
    let worker_pods = plan.worker_pods() as usize;
    let registering = std::time::Instant::now();
    loop {
        let registered = env
            .tracker
            .wait_running_where(
                &[(JOB_LABEL, job), (COMPONENT_LABEL, "thorworker")],
                worker_pods,
                REGISTRATION_WAIT,
            )
            .await;
        if registered.is_ok() {
            break;
        }
        if registering.elapsed() >= plan.max_registration {
            let why = format!(
                "Timeout waiting for all workers to register within timeout period ({} mins)",
                plan.max_registration.as_secs() / 60
            );
            exit(env, plan, job, false).await?;
            return Ok(ManagerEnd::Failed(why));
        }
        // A fresh waitJob each time: its scheduling clock never runs out.
        let mut state = waitjob::PassState::new(None);
        let ended = waitjob::pass(k, log, &worker_job, &mut state).await?;
        if let Some(why) = ended.as_ref().and_then(|e| e.failure()) {
            let why = why.to_string();
            exit(env, plan, job, false).await?;
            return Ok(ManagerEnd::Failed(why));
        }
        // The harness's safety net: HPCC would wait out the registration
        // period.
        if env.started.elapsed() > env.step_timeout {
            anyhow::bail!("workers of {job} did not all register");
        }
    }
    // The stale LIST at the first graph: a selector built from the
    // workunit and graph names, which no pod carries.
    let stale = format!(
        "job-name=thorworker-job-w20261123-{:06}-graph{}",
        first.workunit, first.index
    );
    k.list_pods(
        log,
        &stale,
        "{range .items[*]}{.metadata.name},{.spec.nodeName}{'\\n'}{end}",
    )
    .await?;
    // Graphs, then linger for more.
    let mut graphs = 0;
    let mut next = Some(first);
    while let Some(g) = next {
        tokio::time::sleep(plan.graph).await;
        let _ = g.done.send(());
        graphs += 1;
        next = env.dispatcher.linger(plan.linger).await;
    }
    // Shutdown: workers exit; their sidecars end their pods a little later.
    kubelet::finish_later(
        env,
        kubelet::role_selector(job, "thorworker"),
        plan.postrun_exit,
    )
    .await
    .with_context(|| format!("the workers of {job} exiting"))?;
    exit(env, plan, job, true).await?;
    Ok(ManagerEnd::Ran(graphs))
}

/// The manager process has exited (`ok`: cleanly): the post-job script's
/// deletions (baseline), then the postrun sidecar ends the pod.
async fn exit(env: &ThorEnv, plan: &Plan, job: &str, ok: bool) -> Result<()> {
    let (k, log) = (&env.thor, &env.calls);
    if plan.mode == Mode::Baseline {
        // k8s_postjob_clearup.sh, after thormaster_lcr exits.
        if plan.keep_jobs == crate::workload::thor::scenario::KeepJobs::None {
            k.delete(log, "job", &format!("thorworker-job-{job}"), Some(120))
                .await?;
        }
        k.delete(
            log,
            "networkpolicy",
            &format!("thorworker-networkpolicy-{job}"),
            None,
        )
        .await?;
    }
    // The post-job script ran in the manager's container: it exits now.
    let sel = kubelet::role_selector(job, "thormanager");
    kubelet::exit_processes(env, &sel, ok)
        .await
        .with_context(|| format!("the manager of {job} exiting"))?;
    tokio::time::sleep(plan.postrun_exit).await;
    kubelet::end_pods(env, &sel, ok)
        .await
        .with_context(|| format!("ending the manager pod of {job}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::thor::api_usage;

    /// The manager's registration look must be inside the Role of every
    /// mode: a 1024-worker jobset run failed with Forbidden when it was not
    /// (registration took over a minute; the smoke runs never get there).
    #[test]
    fn the_registration_look_at_the_workers_is_granted_in_every_mode() {
        for mode in Mode::ALL {
            let (group, resource) = match worker_watch(mode, "thor-1") {
                Watched::Job { .. } => ("batch", "jobs"),
                Watched::JobSet { .. } => ("jobset.x-k8s.io", "jobsets"),
            };
            let granted = api_usage(mode)
                .iter()
                .any(|u| u.group == group && u.resource == resource && u.verbs.contains(&"get"));
            assert!(granted, "{mode:?}: get {group}/{resource} not granted");
        }
    }
}
