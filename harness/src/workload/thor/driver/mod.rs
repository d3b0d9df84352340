//! Drivers that put the same Kubernetes API traffic on a cluster as HPCC's
//! processes do, call for call (docs/thor-model.md has the table of every
//! modelled call and where HPCC makes it):
//! - workunits (up to the Thor eclagent's maxActive at once) each compile
//!   through eclccserver's compile Jobs (`compile`), then queue their
//!   graphs one after another on the Thor queue (`dispatch`);
//! - thoragent launches an instance for a graph no lingering manager takes
//!   (`agent`), runs waitJob for its whole life (`waitjob`) and deletes it;
//! - the manager process creates its workers, waits for them, runs graphs
//!   and lingers, then exits and its post-job script cleans up (`manager`);
//! - processes end when HPCC's would (`kubelet`), as the nodes show it
//!   (`exits`: a fake kubelet's status PATCH or a real container's exit).
//!
//! Every Kubernetes call is a forked kubectl as HPCC's identity (`calls`),
//! recorded by kind so the server's count can be checked against the
//! modelled cost of the call list.

pub mod agent;
pub mod callplan;
pub mod calls;
pub mod compile;
pub mod dispatch;
pub mod env;
pub mod exits;
pub mod kubelet;
pub mod manager;
pub mod waitjob;

use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};

pub use env::{COMPONENT_LABEL, InstanceResult, JOB_LABEL, POD_RUNTIME, Plan, ThorEnv};

use crate::poll::Poll;
use crate::workload::thor::driver::compile::Eclccserver;

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

/// Wait until nothing the driver created is left in the namespace: no
/// pods, Jobs, NetworkPolicies or JobSets (the setup's own objects stay).
pub async fn wait_all_gone(env: &ThorEnv, keep: &[String], timeout: Duration) -> Result<()> {
    let ns = env.namespace.as_str();
    let pods: Api<Pod> = Api::namespaced(env.admin.clone(), ns);
    let jobs: Api<Job> = Api::namespaced(env.admin.clone(), ns);
    let nps: Api<NetworkPolicy> = Api::namespaced(env.admin.clone(), ns);
    let jobsets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.admin.clone(), ns, &crate::k8s::jobset::api_resource());
    Poll::new(format!("everything the driver made in {ns} gone"), timeout)
        .every(Duration::from_millis(500))
        .until_state(|| async {
            // One object per answer and the server's count of the rest, and
            // the pods first (they go last): the harness's own requests and
            // their cost to the API server stay small inside the window.
            let lp = ListParams::default().limit(1);
            let pods_left = listed(&pods.list_metadata(&lp).await?);
            if pods_left > 0 {
                return Ok(Err(format!("{pods_left} pods left")));
            }
            let jobs_left = listed(&jobs.list_metadata(&lp).await?);
            // No JobSet CRD (baseline clusters): no JobSets.
            let jobsets_left = jobsets.list_metadata(&lp).await.map_or(0, |l| listed(&l));
            // NetworkPolicies: the setup's own stay, so these are named.
            let nps_left = nps
                .list_metadata(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .filter(|n| !keep.contains(n))
                .count();
            let left = [
                ("jobs", jobs_left),
                ("networkpolicies", nps_left as u64),
                ("jobsets", jobsets_left),
            ];
            Ok(if left.iter().all(|(_, n)| *n == 0) {
                Ok(())
            } else {
                Err(format!("left: {left:?}"))
            })
        })
        .await
}

/// How many objects a list holds: those in this page and the server's
/// count of the rest (set when the list was limited and not filtered).
fn listed<K: Clone>(l: &kube::api::ObjectList<K>) -> u64 {
    let rest = l.metadata.remaining_item_count.unwrap_or(0).max(0) as u64;
    l.items.len() as u64 + rest
}
