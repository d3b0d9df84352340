//! eclccserver compiling a workunit as a Kubernetes Job (the chart's
//! default `useChildProcesses: false`; ecl/eclccserver/eclccserver.cpp
//! `compileViaK8sJob` → jcontainerized.cpp `runJob("compile")`): a pool of
//! `maxActive` threads, each replacing Job `compile-job-eclcc-<server>-<
//! agent suffix>-<k>` (k its thread number, reused), running waitJob
//! until the Job ends and deleting it. The compile pod
//! (`EclccLingeringCompiler`) compiles, then lingers `lingerPeriod` for
//! more compiles from the server's internal queue before it exits — so a
//! compile that arrives while one lingers is taken there, like Thor graphs.

use std::collections::BTreeSet;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

use crate::workload::thor::driver::dispatch::{Dispatcher, Graph};
use crate::workload::thor::driver::env::{Plan, ThorEnv};
use crate::workload::thor::driver::kubelet;
use crate::workload::thor::driver::waitjob::{self, Watched};
use crate::workload::thor::template::{compile_job, render};

/// The eclccserver of the chart's default values.
pub const SERVER: &str = "myeclccserver";
/// The label the Job controller puts on a Job's pods (compile pods carry
/// no `job` label of the chart's).
pub const JOB_NAME_LABEL: &str = "job-name";

/// The eclccserver: its queue of compiles and its thread numbers.
pub struct Eclccserver {
    pub queue: Dispatcher,
    free: Mutex<BTreeSet<u32>>,
}

impl Eclccserver {
    pub fn new(max_active: u32) -> Eclccserver {
        Eclccserver {
            queue: Dispatcher::new(max_active),
            free: Mutex::new((1..=max_active.max(1)).collect()),
        }
    }

    fn take_slot(&self) -> Result<u32> {
        let mut f = self
            .free
            .lock()
            .map_err(|_| anyhow::anyhow!("slot list poisoned"))?;
        let k = *f.iter().next().context("no free eclccserver thread")?;
        f.remove(&k);
        Ok(k)
    }

    fn give_slot(&self, k: u32) {
        if let Ok(mut f) = self.free.lock() {
            f.insert(k);
        }
    }
}

/// One compile Job, launched for `first` by thread `k`: replace, the
/// compiler lingering for more, waitJob, delete. How many compiles it ran.
async fn run_job(env: &ThorEnv, plan: &Plan, server: &Eclccserver, first: Graph) -> Result<u32> {
    let Some(c) = &plan.compile else {
        bail!("compile Jobs are off in this scenario");
    };
    let k = server.take_slot()?;
    let mut p = plan.params(0);
    p.job_name = format!("eclcc-{SERVER}-{}-{k}", plan.agent_suffix);
    let job = format!("compile-job-{}", p.job_name);
    let mut docs = render(&compile_job(), &p)?;
    plan.adapt_pods(&mut docs);
    let doc = docs
        .first()
        .context("the compile template renders nothing")?;
    let (kc, log) = (&env.eclcc, &env.calls);
    kc.replace(log, doc).await?;
    let compiler = async {
        env.tracker
            .wait_running_where(&[(JOB_NAME_LABEL, &job)], 1, env.step_timeout)
            .await?;
        let mut n = 0;
        let mut next = Some(first);
        while let Some(item) = next {
            tokio::time::sleep(c.duration).await;
            let _ = item.done.send(());
            n += 1;
            next = server.queue.linger(c.linger).await;
        }
        tokio::time::sleep(plan.postrun_exit).await;
        kubelet::exit_and_end(env, &format!("{JOB_NAME_LABEL}={job}"), true).await?;
        anyhow::Ok(n)
    };
    let watched = Watched::Job { name: job.clone() };
    let (compiled, ended) = tokio::join!(
        compiler,
        waitjob::wait(
            kc,
            log,
            &watched,
            Some(waitjob::DEFAULT_SCHEDULING_TIMEOUT),
            env.step_timeout
        )
    );
    let n = compiled.with_context(|| format!("compile Job {job}"))?;
    let ended = ended?;
    if let Some(why) = ended.failure() {
        bail!("compile Job {job} failed: {why}");
    }
    if ended.deletes_job(plan.keep_jobs) {
        kc.delete(log, "job", &job, None).await?;
    }
    server.give_slot(k);
    server.queue.instance_ended();
    Ok(n)
}

/// The eclccserver's launcher: a compile Job for every compile no lingering
/// compiler takes, up to maxActive at once, until the queue closes.
pub async fn serve(env: &ThorEnv, plan: &Plan, server: &Eclccserver) -> Result<u32> {
    let mut jobs = futures::stream::FuturesUnordered::new();
    let mut launched = 0;
    loop {
        tokio::select! {
            next = server.queue.next_launch() => match next {
                Some(first) => {
                    launched += 1;
                    jobs.push(run_job(env, plan, server, first));
                }
                None => break,
            },
            Some(done) = futures::StreamExt::next(&mut jobs), if !jobs.is_empty() => {
                done?;
            }
        }
    }
    while let Some(done) = futures::StreamExt::next(&mut jobs).await {
        done?;
    }
    Ok(launched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_numbered_from_one_and_reused() {
        let s = Eclccserver::new(2);
        assert_eq!(s.take_slot().unwrap(), 1);
        assert_eq!(s.take_slot().unwrap(), 2);
        assert!(s.take_slot().is_err());
        s.give_slot(1);
        assert_eq!(s.take_slot().unwrap(), 1);
    }
}
