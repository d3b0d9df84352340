//! One measured run: the pod watch, the quiet wait on a fresh cluster,
//! the one measurement window (metrics::window) around the workload — a
//! command, a folder of manifests applied and waited for, or Kueue's
//! performance runner — and the run's figures.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::bench::core::figures::RunFigures;
use crate::bench::measure::apply;
use crate::bench::measure::command;
use crate::bench::measure::kueue_perf;
use crate::bench::measure::result::QuietWait;
use crate::bench::measure::result::{Overhead, WORKLOAD_ROW, WorkloadRun};
use crate::bench::measure::workload::{Variant, Workload};
use crate::cluster::Cluster;
use crate::cluster::apf_flows::ApfFlows;
use crate::lifecycle::measured::identity::Identity;
use crate::metrics::pods::{self, PodTracker};
use crate::metrics::timeline::Timeline;
use crate::metrics::window::{Options, Window};

/// How long the cluster must have been quiet before a window opens, and
/// the longest the harness waits for that.
const QUIET: Duration = Duration::from_secs(2);
const QUIET_AT_MOST: Duration = Duration::from_secs(45);

/// Wait until a fresh cluster has been quiet for `QUIET`: no request in
/// the audit log but the harness's and lease renewals (the controller
/// manager starts its controllers for a while after it is ready; their
/// first LISTs and syncs are not the workload's). After `QUIET_AT_MOST`
/// the window opens anyway, and the run says so (`QuietWait`).
async fn wait_quiet(cluster: &impl Cluster) -> Result<QuietWait> {
    let harness = cluster.harness_users();
    let started = Instant::now();
    let mut offset = cluster.audit_end()?;
    let mut quiet_since = Instant::now();
    while started.elapsed() < QUIET_AT_MOST {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut busy = false;
        offset = cluster.visit_audit(offset, &mut |e| {
            let lease = e
                .object_ref
                .as_ref()
                .is_some_and(|o| o.resource == "leases");
            busy |= !lease && !harness.contains(&e.user.username);
        })?;
        if busy {
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= QUIET {
            return Ok(QuietWait {
                waited_s: started.elapsed().as_secs_f64(),
                quiet: true,
            });
        }
    }
    Ok(QuietWait {
        waited_s: started.elapsed().as_secs_f64(),
        quiet: false,
    })
}

/// What one run is: the workload, where its output goes, how it is
/// bounded, and where it acts.
pub struct RunContext<'a> {
    /// `--name`: with the variant and round, the run's HARNESS_RUN_ID.
    pub name: &'a str,
    pub variant: &'a Variant,
    pub round: u32,
    /// `--out` and the run's folder in it (runs/<variant>-<round>).
    pub out: &'a Path,
    pub run_dir: &'a str,
    pub path: &'a std::ffi::OsStr,
    pub manifests: &'a [serde_json::Value],
    /// Kueue's performance runner, for `--kueue-perf`.
    pub runner: Option<&'a Path>,
    pub timeout: Duration,
    pub scrape: bool,
    pub settle: bool,
    /// A Job or JobSet ending Failed is measured as it is, not the run's
    /// failure.
    pub allow_failed: bool,
}

/// Where the run acts on its cluster: the workload's identity, the
/// namespace its pods are watched in (every namespace on a fresh cluster:
/// a workload may make its own), whether the cluster is fresh (its
/// start-up churn is waited out before the window opens), and the
/// FlowSchemas that count requests by client where there is no audit log.
pub struct Place<'a> {
    pub identity: &'a Identity,
    pub pods_in: Option<&'a str>,
    pub fresh: bool,
    pub apf: Option<ApfFlows>,
}

/// One run: the pod watch, the window, the workload, its figures.
pub async fn run_one(
    cluster: &impl Cluster,
    place: Place<'_>,
    ctx: &RunContext<'_>,
) -> Result<(RunFigures, WorkloadRun, Timeline)> {
    let admin = cluster.client().await?;
    let identity = place.identity;
    let out = ctx.out.join(ctx.run_dir);
    let run_id = format!("{}-{}-{}", ctx.name, ctx.variant.name, ctx.round);
    let tracker = match place.pods_in {
        Some(ns) => PodTracker::start(admin.clone(), ns),
        None => PodTracker::start_all(admin.clone()),
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let quiet_wait = match place.fresh {
        true => Some(wait_quiet(cluster).await?),
        false => None,
    };
    let opts = Options {
        scrape: ctx.scrape,
        agents: true,
        apf: place.apf,
        ..Default::default()
    };
    // Pods that were there before (a kind cluster's own: CoreDNS,
    // kube-proxy, controllers) are not the workload's.
    let opened = Instant::now();
    let mut window = Window::open_with(cluster, opts).await?;
    let work = async {
        match &ctx.variant.workload {
            Workload::Apply(_) => run_apply(ctx, identity, &admin, &out).await,
            Workload::Command(_) | Workload::KueuePerf(_) => {
                let spawned = Spawned {
                    identity,
                    admin: &admin,
                    tracker: &tracker,
                    out: &out,
                    run_id: &run_id,
                    opened,
                };
                run_command(ctx, &spawned).await
            }
        }
    };
    let outcome = window.during(cluster, work).await;
    let closed = window.close(cluster).await?;
    let (exit_code, timed_out, wall_s, settled) = outcome?;
    let mut w = closed.figures;
    // The harness's waited-for children are the command and its tree.
    if let Some(u) = w.resources.remove(crate::metrics::usage::KUBECTL) {
        w.resources.insert(WORKLOAD_ROW.to_string(), u);
    }
    let workload_pods: Vec<_> = tracker
        .snapshot()
        .into_iter()
        .filter(|p| p.created >= opened)
        .collect();
    let pf = pods::figures(&workload_pods);
    let overhead = Overhead::of(&w);
    let mode = RunFigures {
        mode: ctx.variant.name.clone(),
        window: w,
        pods_created: pf.pods_created,
        containers_created: pf.containers_created,
        pod_startup_ms: pf.startup_ms,
        pod_schedule_ms: pf.schedule_ms,
        wall_s: closed.elapsed.as_secs_f64(),
    };
    let run = WorkloadRun {
        variant: ctx.variant.name.clone(),
        round: ctx.round,
        cluster: String::new(),
        exit_code,
        timed_out,
        wall_s,
        settled,
        quiet_wait,
        output: ctx.run_dir.to_string(),
        overhead,
    };
    Ok((mode, run, closed.timeline))
}

/// How a run's workload ended: its exit code (124 past its timeout),
/// whether it timed out, its wall seconds, and the objects or pods it
/// waited to settle.
type Outcome = (i32, bool, f64, Vec<String>);

/// What a measured command runs beside: its identity, the admin client,
/// the pods seen since the window `opened`, its out dir and run id.
struct Spawned<'a> {
    identity: &'a Identity,
    admin: &'a kube::Client,
    tracker: &'a PodTracker,
    out: &'a Path,
    run_id: &'a str,
    opened: Instant,
}

/// The variant's command (or Kueue's performance runner) as the workload's
/// identity, then with --settle the wait for the pods it made to run or
/// end; a wait past the timeout is exit 124, said in its stderr.log.
async fn run_command(ctx: &RunContext<'_>, sp: &Spawned<'_>) -> Result<Outcome> {
    let (out, tracker, opened) = (sp.out, sp.tracker, sp.opened);
    let started = Instant::now();
    let perf_argv;
    let argv = match &ctx.variant.workload {
        Workload::Command(argv) => argv,
        Workload::KueuePerf(config) => {
            let runner = ctx.runner.context("Kueue's performance runner")?;
            let dir = out.join("kueue-perf");
            std::fs::create_dir_all(&dir)?;
            perf_argv = kueue_perf::argv(
                runner,
                &std::path::absolute(config)?,
                &dir,
                ctx.timeout.as_secs(),
            );
            &perf_argv
        }
        Workload::Apply(_) => bail!("run_command: a folder of manifests is applied (run_apply)"),
    };
    let mut env = vec![
        (
            "KUBECONFIG".to_string(),
            sp.identity.kubeconfig.display().to_string(),
        ),
        ("HARNESS_RUN_ID".to_string(), sp.run_id.to_string()),
        ("PATH".to_string(), ctx.path.to_string_lossy().into_owned()),
    ];
    if let Workload::KueuePerf(_) = &ctx.variant.workload {
        env.extend(kueue_perf::env(out));
    }
    let f = command::run(argv, &env, out, ctx.timeout).await?;
    let mut settled = Vec::new();
    if ctx.settle && !f.timed_out {
        let left = ctx.timeout.saturating_sub(started.elapsed());
        let unsettled = || {
            tracker
                .snapshot()
                .into_iter()
                .filter(|p| p.created >= opened)
                .filter(|p| p.running.is_none() && p.ended.is_none())
                .map(|p| p.name)
                .collect()
        };
        match apply::wait_settled(sp.admin, unsettled, left).await {
            Ok(s) => settled = s,
            Err(e) => {
                let msg = format!("harness: {e:#}\n");
                let mut log = std::fs::OpenOptions::new()
                    .append(true)
                    .open(out.join("stderr.log"))?;
                std::io::Write::write_all(&mut log, msg.as_bytes())?;
                return Ok((124, true, f.wall_s, settled));
            }
        }
    }
    Ok((f.exit_code, f.timed_out, f.wall_s, settled))
}

/// The variant's manifests applied as the workload's identity, then the
/// wait for what they made to finish. A refused apply or a wait past the
/// timeout is the workload's result (exit 1, 124), its message in
/// stderr.log.
async fn run_apply(
    ctx: &RunContext<'_>,
    identity: &Identity,
    admin: &kube::Client,
    out: &Path,
) -> Result<Outcome> {
    let started = Instant::now();
    std::fs::create_dir_all(out)?;
    let client = &identity.client;
    let mut settled = Vec::new();
    let (code, timed_out, text) = match apply::apply(client, admin, ctx.manifests).await {
        Err(e) => (1, false, format!("applying: {e:#}\n")),
        Ok(()) => {
            let ns = client.default_namespace();
            match apply::wait_finished(admin, ctx.manifests, ns, ctx.timeout).await {
                Ok(s) => {
                    let failed = apply::failed_of(&s);
                    settled = s;
                    match failed.is_empty() || ctx.allow_failed {
                        true => (0, false, String::new()),
                        false => (
                            1,
                            false,
                            format!(
                                "the workload failed: {} (--allow-failed measures a failing workload as it is)\n",
                                failed.join(", ")
                            ),
                        ),
                    }
                }
                Err(e) => {
                    let msg = format!("{e:#}");
                    let timed_out = msg.contains("not reached within");
                    (if timed_out { 124 } else { 1 }, timed_out, msg + "\n")
                }
            }
        }
    };
    std::fs::write(out.join("stdout.log"), "")?;
    std::fs::write(out.join("stderr.log"), text)?;
    Ok((code, timed_out, started.elapsed().as_secs_f64(), settled))
}
