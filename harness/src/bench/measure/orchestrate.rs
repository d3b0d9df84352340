//! `harness measure`: any workload — a command, a folder of manifests —
//! inside the one measurement window (metrics::window) on a fresh local
//! cluster per run, with the Thor benchmark's Result, report, statistics
//! and baselines (each variant a "mode"): requests per client identity
//! (user and user agent), etcd writes, CPU and memory per component, API
//! latency against the SLOs, pod start-up, a timeline. Variants run
//! interleaved over `--repeat` rounds in an order shuffled from a printed
//! seed.

use crate::bench::measure::apply;
use crate::bench::measure::command;
use crate::bench::measure::kueue_perf;
use crate::bench::measure::report;
use crate::bench::measure::result;
use crate::bench::measure::run;
use crate::bench::measure::workload;
use crate::lifecycle::measured::existing;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::{ShardOf, Statistics};
use crate::bench::core::rounds::{announce, plan};
use crate::cluster::{Cluster, ClusterSpec, Provider};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle;
use crate::lifecycle::{OnCluster, Target};
use crate::metrics::timeline::Timeline;
use crate::progress::Step;
use crate::tools::Component;

use result::{Figures, MeasureResult, WorkloadRun};
use workload::{Variant, Workload};

/// The Result schema of the figures part.
pub const FIGURES_SCHEMA: &str = <RunFigures as crate::bench::core::result::Run>::SCHEMA;

pub struct MeasureOptions {
    /// `--name`: names the baseline (`measure-NAME`) and the report.
    pub name: String,
    /// One workload, or the A/B variants.
    pub variants: Vec<Variant>,
    pub repeat: u32,
    pub seed: Option<u64>,
    /// `--shard K/N`: run only this slice of the rounds (needs `seed`).
    pub shard: Option<crate::bench::core::shard::Shard>,
    /// The cluster every run gets afresh (its name is replaced per run);
    /// on kind its minor and Kueue only (the rest is the kind config's).
    pub spec: ClusterSpec,
    /// Local or kind (target.rs).
    pub provider: Provider,
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
    /// A Job or JobSet that ends Failed is measured, not the run's
    /// failure (`--allow-failed`).
    pub allow_failed: bool,
}

/// What a run needs before any cluster starts: each command runnable,
/// each folder's manifests loaded, `--out` writable. Returns the
/// manifests per variant, in apply order.
pub fn preflight(
    opts: &MeasureOptions,
    path: &std::ffi::OsStr,
) -> Result<BTreeMap<String, Vec<serde_json::Value>>> {
    workload::check_name("--name", &opts.name)?;
    crate::bench::core::rounds::check_repeat(opts.repeat)?;
    if let Some(sh) = opts.shard {
        sh.check(opts.repeat, opts.seed)?;
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
/// `<dir>/bin`, `dir` the run set's own temporary directory, so nothing
/// is written into `--out` before the checks): `kubectl` in a measured
/// command is the cluster's own release.
fn path_with(kubectl: &Path, dir: &Path) -> Result<std::ffi::OsString> {
    let bin = dir.join("bin");
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

/// Every variant × `repeat` on the target (a fresh cluster of the
/// provider per run, or the existing cluster attached once).
/// `result.json` is rewritten as each run finishes.
pub async fn measure(opts: &MeasureOptions) -> Result<MeasureResult> {
    writable(&opts.out)?;
    // Where the runs go; an existing cluster is attached to and probed
    // before anything else: its release, not --k8s-version, decides the
    // kubectl the workload gets.
    let target = Target::new(&opts.provider, opts.bins.clone(), &opts.cluster_prefix).await?;
    let caps = match target.attached() {
        Some((c, t)) => {
            let first = opts.variants.first().map_or("", |v| v.name.as_str());
            Some(existing::prepare(c, t, first).await?)
        }
        None => None,
    };
    let tokens = lifecycle::target::token_dir()?;
    let k8s = match &caps {
        Some(caps) => caps.server_release()?,
        None => K8sRelease::parse(&opts.spec.k8s_minor)?,
    };
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), Component::Kubectl).await?;
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
    let path = path_with(&kubectl, tokens.path())?;
    let manifests = preflight(opts, &path)?;
    let seed = opts.seed.unwrap_or_else(crate::stats::clock_seed);
    let names: Vec<String> = opts.variants.iter().map(|v| v.name.clone()).collect();
    let rounds = plan(&names, opts.repeat, seed, opts.shard);
    let mine: Vec<Vec<String>> = rounds.iter().map(|(_, r)| r.clone()).collect();
    announce(&mine, seed);
    let mut result = begin(opts, caps, k8s, seed, &rounds, &names);
    for (round, order) in rounds.iter().map(|(i, r)| (*i, r)) {
        for name in order {
            let v = opts
                .variants
                .iter()
                .find(|v| &v.name == name)
                .context("a scheduled variant")?;
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
            let ctx = run::RunContext {
                name: &opts.name,
                variant: v,
                round: round as u32,
                out: &opts.out,
                run_dir: &run_dir,
                path: &path,
                manifests: manifests.get(&v.name).map(Vec::as_slice).unwrap_or(&[]),
                runner: runner.as_deref(),
                timeout: opts.timeout,
                scrape: opts.scrape,
                settle: opts.settle,
                allow_failed: opts.allow_failed,
            };
            let on = target
                .cluster(&opts.spec, &format!("{}-{round}", v.name), None)
                .await?;
            // What the nodes run (a pulled kind image may be another patch).
            if let Some(release) = on.get().nodes_release() {
                result.figures.k8s_version = release.to_string();
            }
            let Ran {
                figures: mode,
                mut run,
                timeline,
                place,
            } = one_run(on, &ctx, tokens.path()).await?;
            run.cluster = place;
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
            result.figures.add_run(&v.name, mode);
            report::save_progress(&result, &opts.out)?;
        }
    }
    Ok(result)
}

/// The run set's Result before its first run: the variants, the model
/// (the control-plane profile where the harness starts the cluster), the
/// server's release (`caps`' on an existing cluster) and the statistics'
/// order of `rounds` from `seed`.
fn begin(
    opts: &MeasureOptions,
    caps: Option<crate::cluster::needs::Capabilities>,
    k8s: K8sRelease,
    seed: u64,
    rounds: &[(usize, Vec<String>)],
    names: &[String],
) -> MeasureResult {
    let mine: Vec<Vec<String>> = rounds.iter().map(|(_, r)| r.clone()).collect();
    let mut model = BTreeMap::from([("workload".to_string(), "measure".to_string())]);
    // The control-plane profile is the harness's only where it starts it.
    if caps.is_none() {
        model.extend(
            opts.spec
                .control_plane
                .describe()
                .into_iter()
                .map(|(k, v)| (format!("control_plane.{k}"), v)),
        );
    }
    MeasureResult {
        schema: result::SCHEMA.into(),
        name: opts.name.clone(),
        variants: opts
            .variants
            .iter()
            .map(|v| (v.name.clone(), v.workload.describe()))
            .collect(),
        runs: Vec::new(),
        kueue_runner: Vec::new(),
        figures: Figures {
            schema: FIGURES_SCHEMA.into(),
            scenario: format!("measure-{}", opts.name),
            scenario_file: String::new(),
            provider: opts.provider.name().into(),
            k8s_version: match &caps {
                Some(c) => c.server_version.trim_start_matches('v').to_string(),
                None => k8s.version.into(),
            },
            harness_version: env!("CARGO_PKG_VERSION").into(),
            started: crate::bench::core::result::now(),
            shape: Default::default(),
            model,
            modes: BTreeMap::new(),
            harness_peak_rss_kib: 0,
            capabilities: caps,
            timelines: Vec::new(),
            statistics: Some(Statistics {
                shard: opts.shard.map(|sh| ShardOf {
                    k: sh.k,
                    n: sh.n,
                    first: rounds.first().map_or(0, |r| r.0),
                    of: opts.repeat.max(1) as usize,
                }),
                ..Statistics::new(seed, mine, names[0].clone())
            }),
            machine: crate::machine::Machine::this(),
        },
    }
}

/// One finished run.
struct Ran {
    /// What the control plane did in its window.
    figures: RunFigures,
    /// The workload's outcome (exit code, wall time, output).
    run: WorkloadRun,
    timeline: Timeline,
    /// Where it ran: the cluster's name, or "namespace <ns>" on an
    /// existing cluster.
    place: String,
}

/// One run on its cluster: its place there (the workload's identity, and
/// on an existing cluster a namespace of its own: `dir` holds the token
/// kubeconfigs), the run, and the cluster after it (`OnCluster::finish`).
async fn one_run(on: OnCluster<'_>, ctx: &run::RunContext<'_>, dir: &Path) -> Result<Ran> {
    let cluster = on.get();
    let ttl = ctx.timeout + Duration::from_secs(600);
    let ns = match on.attached() {
        Some((_, t)) => Some(existing::namespace_of(
            &t.run_id,
            &ctx.variant.name,
            ctx.round,
        )?),
        None => None,
    };
    let same = lifecycle::same_clients(cluster, ns.as_deref());
    let where_ = match &ns {
        Some(ns) => format!("namespace {ns}"),
        None => cluster.name().to_string(),
    };
    let r = lifecycle::while_alive(cluster, async {
        match (on.attached(), &ns) {
            (Some((c, t)), Some(ns)) => {
                let site = existing::site(c, t, ns, dir, ttl).await?;
                let place = run::Place {
                    identity: &site.identity,
                    pods_in: Some(ns),
                    fresh: false,
                    apf: site.apf.clone(),
                };
                run::run_one(cluster, place, ctx).await
            }
            _ => {
                let identity = crate::lifecycle::measured::identity::identity(cluster, ttl).await?;
                let place = run::Place {
                    identity: &identity,
                    pods_in: None,
                    fresh: true,
                    apf: None,
                };
                run::run_one(cluster, place, ctx).await
            }
        }
    })
    .await;
    let what = match &ns {
        Some(ns) => format!("{} in namespace {ns}", ctx.variant.name),
        None => ctx.variant.name.clone(),
    };
    let (mut mode, run, timeline) = on.finish(r, &what).await?;
    mode.window.rename_clients(same);
    Ok(Ran {
        figures: mode,
        run,
        timeline,
        place: where_,
    })
}

#[cfg(test)]
mod tests {
    use crate::bench::core::rounds::schedule;

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
