//! One run of the drivers: thoragent's launcher, the workunits (each
//! compiled, then its graphs queued in turn) and eclccserver's compile
//! Jobs, side by side until the plan is done; what the run did.

use anyhow::{Context, Result, anyhow};
use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::workload::thor::driver::agent;
use crate::workload::thor::driver::compile::{self, Eclccserver};
use crate::workload::thor::driver::env::{InstanceResult, Plan, ThorEnv};

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct DriverReport {
    pub instances: Vec<InstanceResult>,
    /// Compile Jobs launched.
    pub compile_jobs: u32,
    /// Workunits that failed: a graph's instance failed, so the workunit's
    /// later graphs never ran.
    pub failed_workunits: u32,
}

/// thoragent's launcher: an instance for every graph no lingering manager
/// takes, up to maxGraphs, until the queue closes.
async fn thoragent(env: &ThorEnv, plan: &Plan) -> Result<Vec<InstanceResult>> {
    let mut running = FuturesUnordered::new();
    let mut results = Vec::new();
    let mut n = 0;
    loop {
        tokio::select! {
            next = env.dispatcher.next_launch() => match next {
                Some(first) => {
                    n += 1;
                    let k = n;
                    running.push(async move {
                        let r = agent::run_instance(env, plan, k, first).await;
                        env.dispatcher.instance_ended();
                        r
                    });
                }
                None => break,
            },
            Some(done) = running.next(), if !running.is_empty() => results.push(done?),
        }
    }
    while let Some(done) = running.next().await {
        results.push(done?);
    }
    Ok(results)
}

/// Every workunit: its compile, then its graphs in turn; a graph whose
/// instance failed fails its workunit (HPCC runs none of its later
/// graphs). How many workunits failed.
async fn workunits(env: &ThorEnv, plan: &Plan, eclcc: &Eclccserver) -> Result<u32> {
    let one = |w: u32| async move {
        if plan.compile.is_some() {
            eclcc
                .queue
                .submit(w, 0)
                .await
                .map_err(|_| anyhow!("the compile of workunit {w} was dropped"))?;
        }
        for g in 0..plan.graphs_per_workunit {
            // Dropped unrun: its instance failed (and said why).
            if env.dispatcher.submit(w, g).await.is_err() {
                return anyhow::Ok(1);
            }
        }
        anyhow::Ok(0)
    };
    let results: Vec<Result<u32>> = futures::stream::iter(1..=plan.workunits)
        .map(one)
        .buffer_unordered(plan.max_jobs.max(1) as usize)
        .collect()
        .await;
    env.dispatcher.close();
    eclcc.queue.close();
    results.into_iter().sum()
}

/// Run the plan: every workunit compiled and its graphs run, every
/// instance cleaned up by HPCC's own calls.
pub async fn run(env: &ThorEnv, plan: &Plan) -> Result<DriverReport> {
    let eclcc = Eclccserver::new(plan.compile.as_ref().map_or(1, |c| c.max_active));
    let serving = async {
        match plan.compile {
            Some(_) => compile::serve(env, plan, &eclcc).await,
            None => Ok(0),
        }
    };
    // The first error ends the run: an instance's or a compile's own comes
    // before the workunits see their graph or compile dropped, and the
    // rest would otherwise wait for what will never come.
    let (instances, compile_jobs, failed_workunits) =
        tokio::try_join!(thoragent(env, plan), serving, workunits(env, plan, &eclcc))?;
    let report = DriverReport {
        instances,
        compile_jobs,
        failed_workunits,
    };
    let background: Vec<_> = env
        .background
        .lock()
        .map(|mut b| std::mem::take(&mut *b))
        .unwrap_or_default();
    for h in background {
        h.await.context("a pod-ending task panicked")??;
    }
    Ok(report)
}
