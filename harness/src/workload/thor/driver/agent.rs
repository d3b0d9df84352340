//! The thoragent's side of one Thor instance (ecl/agentexec/agentexec.cpp
//! `WaitThread::threadmain` → jcontainerized.cpp `runJob`): replace the
//! manager's NetworkPolicy and Job (JobSet mode: both NetworkPolicies, the
//! gang objects and the JobSet), run waitJob for the instance's whole life
//! while the manager process runs in its pod, then delete the Job (keepJobs
//! none) and the NetworkPolicy.
//!
//! An instance fails as HPCC's would: its manager throws (workers not
//! registered in time), or waitJob sees the Job failed or its lone pod
//! unscheduled past `schedulingTimeoutSecs`. runJob then deletes the Job
//! unless keepJobs keeps it (podfailures keeps a failed one, but not one
//! that never got scheduled) and the workunit's graph fails.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::metrics::pods::{group_start_ms, rates};
use crate::workload::thor::driver::dispatch::Graph;
use crate::workload::thor::driver::env::{
    COMPONENT_LABEL, InstanceResult, JOB_LABEL, Plan, ThorEnv,
};
use crate::workload::thor::driver::manager::{self, ManagerEnd, WorkerDocs};
use crate::workload::thor::driver::waitjob::{self, Ended, Watched};
use crate::workload::thor::template::{Mode, ThorParams, render, templates_for};

fn name_of(doc: &Value) -> String {
    doc["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn kind_of(doc: &Value) -> &str {
    doc["kind"].as_str().unwrap_or_default()
}

/// `kubectl delete` resource names by kind.
fn resource_of(kind: &str) -> Result<&'static str> {
    Ok(match kind {
        "NetworkPolicy" => "networkpolicy",
        "Job" => "job",
        // Singular kind names, as HPCC writes `job/…`.
        "JobSet" => "jobset",
        "Workload" => "workload",
        "PodGroup" => "podgroup",
        other => bail!("the driver does not delete {other}"),
    })
}

/// Run instance number `n` for its first graph, start to finish.
pub async fn run_instance(
    env: &ThorEnv,
    plan: &Plan,
    n: u32,
    first: Graph,
) -> Result<InstanceResult> {
    let started = Instant::now();
    let p = plan.params(n);
    let job = p.job_name.clone();
    let docs = rendered_docs(env, plan, &p)?;
    let (k, log) = (&env.thor, &env.calls);
    let (own, workers, watched) = roles(plan.mode, &docs)?;
    for d in &own {
        k.replace(log, d).await?;
    }
    // The manager process starts when its pod runs.
    let mgr = async {
        env.tracker
            .wait_running_where(
                &[(JOB_LABEL, &job), (COMPONENT_LABEL, "thormanager")],
                1,
                env.step_timeout,
            )
            .await?;
        manager::run(env, plan, &job, workers, first).await
    };
    let wait = waitjob::wait(
        k,
        log,
        &watched,
        Some(plan.scheduling_timeout),
        env.step_timeout,
    );
    tokio::pin!(mgr, wait);
    // Both finish; a Job that fails (or never gets its pod scheduled)
    // ends the wait, and the manager process with it.
    let mut threw = None;
    let (graphs, ended) = tokio::select! {
        m = &mut mgr => {
            let graphs = match m.with_context(|| format!("the manager of {job}"))? {
                ManagerEnd::Ran(n) => n,
                ManagerEnd::Failed(why) => {
                    threw = Some(why);
                    0
                }
            };
            (graphs, wait.await?)
        }
        w = &mut wait => {
            let ended = w?;
            if ended == Ended::Complete {
                bail!("{job} completed before its manager process ended");
            }
            (0, ended)
        }
    };
    // thoragent: the Job's outcome, then its deletion and the NetworkPolicy's.
    let delete_jobs = ended.deletes_job(plan.keep_jobs);
    let failed = failure(threw, &ended);
    delete_own(env, &own, delete_jobs).await?;
    Ok(instance_result(env, &job, graphs, started, failed))
}

/// The instance's documents: its mode's templates rendered, its pods
/// adapted to the plan and queued as the mode queues them.
fn rendered_docs(env: &ThorEnv, plan: &Plan, p: &ThorParams) -> Result<Vec<Value>> {
    let mut docs: Vec<Value> = templates_for(plan.mode, env.k8s_minor)
        .iter()
        .map(|t| render(t, p))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    plan.adapt_pods(&mut docs);
    plan.mode.queue(&mut docs);
    Ok(docs)
}

/// What thoragent applies, what the manager applies (baseline), and what
/// waitJob watches, of the rendered `docs`.
fn roles(mode: Mode, docs: &[Value]) -> Result<(Vec<&Value>, Option<WorkerDocs<'_>>, Watched)> {
    Ok(match mode {
        Mode::Baseline => {
            let [mgr_np, mgr_job, wrk_np, wrk_job] = docs else {
                bail!(
                    "baseline templates render {} documents, expected 4",
                    docs.len()
                );
            };
            (
                vec![mgr_np, mgr_job],
                Some(WorkerDocs {
                    network_policy: wrk_np,
                    job: wrk_job,
                }),
                Watched::Job {
                    name: name_of(mgr_job),
                },
            )
        }
        Mode::Jobset | Mode::JobsetGang | Mode::JobsetKueue => {
            let js = docs
                .iter()
                .find(|d| kind_of(d) == "JobSet")
                .context("JobSet templates render no JobSet")?;
            (
                docs.iter().collect(),
                None,
                Watched::JobSet { name: name_of(js) },
            )
        }
    })
}

/// Why the instance failed, if it did: the operator sees both why the
/// manager threw and what waitJob saw.
fn failure(threw: Option<String>, ended: &Ended) -> Option<String> {
    let failed = ended.failure().map(str::to_string);
    match (threw, failed) {
        (Some(m), Some(w)) => Some(format!("the manager threw \"{m}\"; waitJob: {w}")),
        (Some(m), None) => Some(format!("the manager threw \"{m}\"")),
        (None, w) => w,
    }
}

/// Delete what thoragent applied, last first; the Job (or JobSet and gang
/// objects) only when `delete_jobs`.
async fn delete_own(env: &ThorEnv, own: &[&Value], delete_jobs: bool) -> Result<()> {
    let (k, log) = (&env.thor, &env.calls);
    for d in own.iter().rev() {
        let kind = kind_of(d);
        let is_job = matches!(kind, "Job" | "JobSet" | "Workload" | "PodGroup");
        if is_job && !delete_jobs {
            continue;
        }
        k.delete(log, resource_of(kind)?, &name_of(d), None).await?;
    }
    Ok(())
}

/// The instance's result from its pods as the tracker saw them.
fn instance_result(
    env: &ThorEnv,
    job: &str,
    graphs: u32,
    started: Instant,
    failed: Option<String>,
) -> InstanceResult {
    let pods = env.tracker.matching(JOB_LABEL, job);
    let workers: Vec<_> = pods
        .iter()
        .filter(|p| p.labels.get(COMPONENT_LABEL).map(String::as_str) == Some("thorworker"))
        .cloned()
        .collect();
    InstanceResult {
        job_name: job.to_string(),
        graphs,
        wall_ms: started.elapsed().as_secs_f64() * 1000.0,
        start_ms: group_start_ms(&pods),
        worker_rates: rates(&workers),
        failed,
    }
}
