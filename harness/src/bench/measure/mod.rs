//! `harness measure`: any workload — a command, a folder of manifests —
//! inside the one measurement window (metrics::window) on a fresh local
//! cluster per run, with the Thor benchmark's Result, report, statistics
//! and baselines (each variant a "mode"): requests per client identity
//! (user and user agent), etcd writes, CPU and memory per component, API
//! latency against the SLOs, pod start-up, a timeline. Variants run
//! interleaved over `--repeat` rounds in an order shuffled from a printed
//! seed.

pub mod apply;
pub mod command;
pub mod kueue_perf;
pub mod report;
pub mod result;
pub mod target;
pub mod workload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::bench::thor::result::{ModeResult, Statistics, ThorResult, peak_rss_kib, summarize};
use crate::cluster::{AnyCluster, Cluster, ClusterSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle;
use crate::metrics::pods::{self, PodTracker};
use crate::metrics::timeline::Timeline;
use crate::metrics::window::{Options, Window};
use crate::progress::Step;
use crate::tools::Component;

use result::{MeasureResult, Overhead, WORKLOAD_ROW, WorkloadRun};
use workload::{Variant, Workload};

/// The Result schema of the figures part (the Thor benchmark's shape).
pub const FIGURES_SCHEMA: &str = "harness.measure-figures/v1";

pub struct MeasureOptions {
    /// `--name`: names the baseline (`measure-NAME`) and the report.
    pub name: String,
    /// One workload, or the A/B variants.
    pub variants: Vec<Variant>,
    pub repeat: u32,
    pub seed: Option<u64>,
    /// The cluster every run gets afresh (its name is replaced per run);
    /// on kind its minor and Kueue only (the rest is the kind config's).
    pub spec: ClusterSpec,
    /// Local or kind (target.rs).
    pub provider: target::Provider,
    pub bins: BTreeMap<Component, PathBuf>,
    /// Name prefix of the clusters.
    pub cluster_prefix: String,
    /// Where result.json, the reports and each run's output go.
    pub out: PathBuf,
    /// How long a command (or an apply's wait) may take.
    pub timeout: Duration,
    /// Also scrape the API server's and etcd's metrics every second.
    pub scrape: bool,
    /// After a command: keep the window open until the cluster has
    /// settled (apply::wait_settled), as the harness.
    pub settle: bool,
}

/// What a run needs before any cluster starts: each command runnable,
/// each folder's manifests loaded, `--out` writable. Returns the
/// manifests per variant, in apply order.
pub fn preflight(
    opts: &MeasureOptions,
    path: &std::ffi::OsStr,
) -> Result<BTreeMap<String, Vec<serde_json::Value>>> {
    workload::check_name("--name", &opts.name)?;
    if opts.repeat == 0 {
        return Err(bad_input("--repeat 0: must be at least 1"));
    }
    if opts.variants.is_empty() {
        return Err(bad_input(
            "nothing to measure: give a command after `--`, --apply DIR, or two --variant",
        ));
    }
    writable(&opts.out)?;
    let mut manifests = BTreeMap::new();
    for v in &opts.variants {
        match &v.workload {
            Workload::Command(argv) => command::check(argv, path)?,
            Workload::Apply(dir) => {
                manifests.insert(v.name.clone(), apply::order(apply::load(dir)?));
            }
            Workload::KueuePerf(config) => {
                crate::input::read_flag("--kueue-perf", config)?;
                if opts.spec.kueue.is_none() {
                    return Err(bad_input(
                        "--kueue-perf needs a cluster with Kueue (--kueue)",
                    ));
                }
            }
        }
    }
    Ok(manifests)
}

fn writable(out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)
        .and_then(|()| tempfile::NamedTempFile::new_in(out).map(|_| ()))
        .map_err(|e| bad_input(format!("--out {}: not writable: {e}", out.display())))
}

/// PATH with the cluster's kubectl first (a link named `kubectl` in
/// `<out>/.bin`): `kubectl` in a measured command is the cluster's own
/// release.
fn path_with(kubectl: &Path, out: &Path) -> Result<std::ffi::OsString> {
    let bin = out.join(".bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    let link = bin.join("kubectl");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(kubectl, &link)
        .with_context(|| format!("linking {}", link.display()))?;
    let mut dirs: Vec<PathBuf> = vec![std::path::absolute(&bin)?];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    Ok(std::env::join_paths(dirs).unwrap_or_default())
}

/// The run order of the variants (stats::interleaved).
pub fn schedule(names: &[String], repeat: u32, seed: u64) -> Vec<Vec<String>> {
    crate::stats::interleaved(names, repeat, seed)
}

/// Every variant × `repeat` on fresh local clusters. `result.json` is
/// rewritten as each run finishes.
pub async fn measure(opts: &MeasureOptions) -> Result<MeasureResult> {
    let k8s = K8sRelease::parse(&opts.spec.k8s_minor)?;
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), Component::Kubectl).await?;
    writable(&opts.out)?;
    let runner = match opts
        .variants
        .iter()
        .any(|v| matches!(v.workload, Workload::KueuePerf(_)))
    {
        true => {
            Some(lifecycle::resolve_tool(k8s, opts.bins.clone(), Component::KueuePerfRunner).await?)
        }
        false => None,
    };
    let path = path_with(&kubectl, &opts.out)?;
    let manifests = preflight(opts, &path)?;
    let seed = opts.seed.unwrap_or_else(crate::stats::clock_seed);
    let names: Vec<String> = opts.variants.iter().map(|v| v.name.clone()).collect();
    let rounds = schedule(&names, opts.repeat, seed);
    eprintln!(
        "run order (seed {seed}; replay with --seed {seed}): {}",
        rounds
            .iter()
            .map(|r| r.join(", "))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let mut model = BTreeMap::from([("workload".to_string(), "measure".to_string())]);
    model.extend(
        opts.spec
            .control_plane
            .describe()
            .into_iter()
            .map(|(k, v)| (format!("control_plane.{k}"), v)),
    );
    let mut result = MeasureResult {
        schema: result::SCHEMA.into(),
        name: opts.name.clone(),
        variants: opts
            .variants
            .iter()
            .map(|v| (v.name.clone(), v.workload.describe()))
            .collect(),
        runs: Vec::new(),
        kueue_runner: Vec::new(),
        figures: ThorResult {
            schema: FIGURES_SCHEMA.into(),
            scenario: format!("measure-{}", opts.name),
            scenario_file: String::new(),
            provider: opts.provider.name().into(),
            k8s_version: k8s.version.into(),
            harness_version: env!("CARGO_PKG_VERSION").into(),
            started: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            num_workers: 0,
            num_workers_per_pod: 0,
            max_graphs: 0,
            graph_duration: String::new(),
            model,
            modes: BTreeMap::new(),
            harness_peak_rss_kib: 0,
            capabilities: None,
            timelines: Vec::new(),
            statistics: Some(Statistics {
                seed,
                rounds: rounds.clone(),
                reference: names[0].clone(),
                method: crate::bench::thor::result::METHOD.into(),
                resamples: crate::stats::RESAMPLES,
                confidence: crate::stats::CONFIDENCE,
                bootstrap_seed: crate::stats::SEED,
                rule: crate::bench::thor::result::RULE_TEXT.into(),
            }),
        },
    };
    let mut runs: BTreeMap<String, Vec<ModeResult>> = BTreeMap::new();
    for (round, order) in rounds.iter().enumerate() {
        for name in order {
            let v = opts
                .variants
                .iter()
                .find(|v| &v.name == name)
                .context("a scheduled variant")?;
            let cluster_name = format!("{}-{}-{round}", opts.cluster_prefix, v.name);
            let cluster =
                target::start(&opts.provider, &opts.spec, &opts.bins, &cluster_name).await?;
            // What the nodes run (a pulled kind image may be another patch).
            if let AnyCluster::Kind(c) = &cluster {
                result.figures.k8s_version = c.state.k8s_version.clone();
            }
            let same = target::same_clients(&cluster);
            let step = Step::start(format!(
                "{} ({}){}",
                v.name,
                v.workload.describe(),
                match opts.repeat {
                    1 => String::new(),
                    n => format!(", round {}/{n}", round + 1),
                }
            ));
            let run_dir = format!("runs/{}-{round}", v.name);
            let ctx = RunContext {
                opts,
                variant: v,
                round: round as u32,
                run_dir: &run_dir,
                path: &path,
                manifests: manifests.get(&v.name).map(Vec::as_slice).unwrap_or(&[]),
                runner: runner.as_deref(),
            };
            let r = lifecycle::while_alive(&cluster, run_one(&cluster, &ctx)).await;
            let (mut mode, mut run, timeline) = match r {
                Ok(r) => {
                    cluster.down(false)?;
                    r
                }
                Err(e) => {
                    let dir = target::state_dir(&cluster).to_path_buf();
                    let down = cluster.down(true);
                    let e = e.context(format!(
                        "{} on cluster {cluster_name} (its state and logs are kept in {}; `harness down --name {cluster_name}` removes them)",
                        v.name,
                        dir.display()
                    ));
                    return Err(match down {
                        Ok(()) => e,
                        Err(d) => e.context(format!("stopping the cluster failed too: {d:#}")),
                    });
                }
            };
            run.cluster = cluster_name;
            mode.window.rename_clients(&same);
            step.done(&format!(
                "exit {}, {:.1} s; {} API requests, {} etcd writes",
                run.exit_code,
                run.wall_s,
                mode.window.api_requests_total,
                mode.window.etcd_writes_total
            ));
            if let Workload::KueuePerf(_) = &v.workload {
                let summary = opts.out.join(&run.output).join("kueue-perf/summary.yaml");
                if run.exit_code == 0 {
                    result.kueue_runner.push(kueue_perf::read_summary(
                        &summary,
                        &v.name,
                        round as u32,
                    )?);
                }
            }
            result.runs.push(run);
            result
                .figures
                .timelines
                .push((v.name.clone(), round, timeline));
            let all = runs.entry(v.name.clone()).or_default();
            all.push(mode);
            result
                .figures
                .modes
                .insert(v.name.clone(), summarize(all.clone()));
            result.figures.judge_modes();
            result.figures.harness_peak_rss_kib = peak_rss_kib();
            report::save_progress(&result, &opts.out)?;
        }
    }
    Ok(result)
}

/// How long the cluster must have been quiet before a window opens, and
/// the longest the harness waits for that.
const QUIET: Duration = Duration::from_secs(2);
const QUIET_AT_MOST: Duration = Duration::from_secs(45);

/// Wait until a fresh cluster has been quiet for `QUIET`: no request in
/// the audit log but the harness's and lease renewals (the controller
/// manager starts its controllers for a while after it is ready; their
/// first LISTs and syncs are not the workload's). Returns the seconds
/// waited; after `QUIET_AT_MOST` the window opens anyway.
pub async fn wait_quiet(cluster: &impl Cluster) -> Result<f64> {
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
            break;
        }
    }
    Ok(started.elapsed().as_secs_f64())
}

struct RunContext<'a> {
    opts: &'a MeasureOptions,
    variant: &'a Variant,
    round: u32,
    run_dir: &'a str,
    path: &'a std::ffi::OsStr,
    manifests: &'a [serde_json::Value],
    /// Kueue's performance runner, for `--kueue-perf`.
    runner: Option<&'a Path>,
}

/// One run on a fresh cluster: the pod watch, the window, the workload,
/// its figures.
async fn run_one(
    cluster: &AnyCluster,
    ctx: &RunContext<'_>,
) -> Result<(ModeResult, WorkloadRun, Timeline)> {
    let admin = cluster.client().await?;
    let identity = target::identity(cluster, ctx.opts.timeout + Duration::from_secs(600)).await?;
    let out = ctx.opts.out.join(ctx.run_dir);
    let run_id = format!("{}-{}-{}", ctx.opts.name, ctx.variant.name, ctx.round);
    let tracker = PodTracker::start_all(admin.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait_quiet(cluster).await?;
    let opts = Options {
        scrape: ctx.opts.scrape,
        agents: true,
        ..Default::default()
    };
    // Pods that were there before (a kind cluster's own: CoreDNS,
    // kube-proxy, controllers) are not the workload's.
    let opened = Instant::now();
    let mut window = Window::open_with(cluster, opts).await?;
    let work = async {
        let started = Instant::now();
        let perf_argv;
        let command = match &ctx.variant.workload {
            Workload::Command(argv) => Some(argv),
            Workload::KueuePerf(config) => {
                let runner = ctx.runner.context("Kueue's performance runner")?;
                let dir = out.join("kueue-perf");
                std::fs::create_dir_all(&dir)?;
                perf_argv = kueue_perf::argv(
                    runner,
                    &std::path::absolute(config)?,
                    &dir,
                    ctx.opts.timeout.as_secs(),
                );
                Some(&perf_argv)
            }
            Workload::Apply(_) => None,
        };
        match command {
            Some(argv) => {
                let mut env = vec![
                    (
                        "KUBECONFIG".to_string(),
                        identity.kubeconfig.display().to_string(),
                    ),
                    ("HARNESS_RUN_ID".to_string(), run_id.clone()),
                    ("PATH".to_string(), ctx.path.to_string_lossy().into_owned()),
                ];
                if let Workload::KueuePerf(_) = &ctx.variant.workload {
                    env.extend(kueue_perf::env(&out));
                }
                let f = command::run(argv, &env, &out, ctx.opts.timeout).await?;
                let mut settled = Vec::new();
                if ctx.opts.settle && !f.timed_out {
                    let left = ctx.opts.timeout.saturating_sub(started.elapsed());
                    let unsettled = || {
                        tracker
                            .snapshot()
                            .into_iter()
                            .filter(|p| p.created >= opened)
                            .filter(|p| p.running.is_none() && p.ended.is_none())
                            .map(|p| p.name)
                            .collect()
                    };
                    match apply::wait_settled(&admin, unsettled, left).await {
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
                Ok::<_, anyhow::Error>((f.exit_code, f.timed_out, f.wall_s, settled))
            }
            None => {
                std::fs::create_dir_all(&out)?;
                let client = &identity.client;
                // A refused apply or a wait past the timeout is the
                // workload's result (exit 1, 124), its message in stderr.log.
                let mut settled = Vec::new();
                let (code, timed_out, text) = match apply::apply(client, &admin, ctx.manifests)
                    .await
                {
                    Err(e) => (1, false, format!("applying: {e:#}\n")),
                    Ok(()) => {
                        match apply::wait_finished(&admin, ctx.manifests, ctx.opts.timeout).await {
                            Ok(s) => {
                                settled = s;
                                (0, false, String::new())
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
    let mode = ModeResult {
        mode: ctx.variant.name.clone(),
        thor_agent_user: String::new(),
        window: w,
        pods_created: pf.pods_created,
        containers_created: pf.containers_created,
        pod_startup_ms: pf.startup_ms,
        pod_schedule_ms: pf.schedule_ms,
        wall_s: closed.elapsed.as_secs_f64(),
        ..Default::default()
    };
    let run = WorkloadRun {
        variant: ctx.variant.name.clone(),
        round: ctx.round,
        cluster: String::new(),
        exit_code,
        timed_out,
        wall_s,
        settled,
        output: ctx.run_dir.to_string(),
        overhead,
    };
    Ok((mode, run, closed.timeline))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_interleave_every_variant_replayably() {
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let r = schedule(&names, 6, 3);
        assert_eq!(r.len(), 6);
        for round in &r {
            let mut s = round.clone();
            s.sort();
            assert_eq!(s, names);
        }
        assert!(r.iter().any(|x| x != &r[0]));
        assert_eq!(schedule(&names, 6, 3), r);
    }
}
