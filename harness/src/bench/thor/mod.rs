//! `harness bench thor`: each mode of a scenario on a fresh local cluster,
//! the Thor drivers inside one measurement window, as one Result
//! (`result`), rendered by `report` and judged against a stored baseline by
//! `baseline`.

pub mod baseline;
pub mod charts;
pub mod compare;
pub mod contention;
pub mod cost;
pub mod dry_run;
pub mod existing;
pub mod report;
pub mod result;
pub mod run;
pub mod summary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::bench::thor::result::{
    ModeResult, RESULT_SCHEMA, Statistics, ThorResult, peak_rss_kib, summarize,
};
use crate::cluster::{Cluster, ClusterSpec, NodeSpec};
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::pprof;
use crate::progress::Step;
use crate::tools::Component;
use crate::workload::thor::Mode;
use crate::workload::thor::scenario::{self, ThorScenario};

pub struct ThorBenchOptions {
    pub scenario: PathBuf,
    /// None: the scenario's modes.
    pub modes: Option<Vec<Mode>>,
    pub repeat: u32,
    /// Seed of the run order (`--seed`); None: one from the clock, printed
    /// and kept in the Result.
    pub seed: Option<u64>,
    pub bins: BTreeMap<Component, PathBuf>,
    /// Name prefix of the clusters (each mode gets a fresh one).
    pub cluster_prefix: String,
    /// `--set key.path=value` overrides of the scenario.
    pub overrides: Vec<String>,
    /// Where `result.json` is written as each mode finishes (so a later
    /// failure loses nothing); None: nowhere.
    pub out: Option<PathBuf>,
    /// Also scrape the API server's and etcd's metrics every second into
    /// each run's timeline (`--scrape-metrics`; costs API server CPU).
    pub scrape: bool,
    /// pprof profiles of kube-apiserver and etcd to take in each run
    /// (into `<out>/profiles/`), and the CPU profile's length in seconds.
    pub profiles: Option<(Vec<pprof::Kind>, u32)>,
    /// Run on this cluster the harness did not start (`--provider
    /// existing`) instead of fresh local clusters.
    pub existing: Option<existing::ExistingTarget>,
    /// Thor's pods on real nodes (`--real-node`), whatever the scenario
    /// says.
    pub real_node: bool,
}

/// What `bench thor` checks before it starts any cluster: the scenario
/// (every rule `validate` applies), `--out` writable, the baseline to
/// compare with loadable, the one to record inside `baselines/`.
pub struct Preflight {
    pub scenario: ThorScenario,
}

/// Check everything a benchmark needs before a cluster starts; errors are
/// bad input naming what and where.
pub fn preflight(
    opts: &ThorBenchOptions,
    root: Option<&Path>,
    compare: bool,
    record: bool,
) -> Result<Preflight> {
    let mut s = scenario::load_with(&opts.scenario, &scenario::parse_overrides(&opts.overrides)?)?;
    s.cluster.real_node |= opts.real_node;
    if let Some(out) = &opts.out {
        std::fs::create_dir_all(out)
            .and_then(|()| tempfile::NamedTempFile::new_in(out).map(|_| ()))
            .map_err(|e| {
                crate::error::bad_input(format!("--out {}: not writable: {e}", out.display()))
            })?;
    }
    if compare || record {
        let root = root.ok_or_else(|| {
            crate::error::bad_input(
                "--compare/--record need the repository (baselines/): run from inside it",
            )
        })?;
        let profile = baseline::variant(&s.cluster.control_plane.label(), s.cluster.real_node);
        let provider = match opts.existing {
            Some(_) => crate::cluster::existing::PROVIDER,
            None => "local",
        };
        let path = baseline::path_of(root, provider, &s.cluster.k8s_minor, &s.name, &profile);
        if !path.starts_with(root.join("baselines")) {
            return Err(crate::error::bad_input(format!(
                "{}: outside baselines/",
                path.display()
            )));
        }
        if compare {
            baseline::load(&path)?;
        }
    }
    Ok(Preflight { scenario: s })
}

/// The cluster a mode runs on: the scenario's nodes, and for gang mode the
/// release's gang feature set.
fn mode_cluster(s: &ThorScenario, k8s: K8sRelease, mode: Mode, name: String) -> ClusterSpec {
    let gang = mode == Mode::JobsetGang;
    ClusterSpec {
        name,
        k8s_minor: k8s.minor.into(),
        feature_gates: if gang {
            k8s.gang_feature_gates()
        } else {
            Default::default()
        },
        runtime_config: if gang {
            k8s.gang_runtime_config()
        } else {
            Default::default()
        },
        nodes: NodeSpec {
            count: s.cluster.nodes as usize,
            cpu: s.node_cpu(),
            memory: s.cluster.node_memory.clone(),
            pods: s.cluster.node_pods,
        },
        kubelet: s.kubelet,
        control_plane: s.cluster.control_plane.clone(),
        kueue: mode
            .needs_kueue()
            .then(crate::cluster::spec::KueueSpec::default),
        real_node: s.cluster.real_node,
    }
}

/// The kubectl binary a scenario's HPCC forks: HPCC's own (1.29.7) or the
/// cluster's.
fn kubectl_component(s: &ThorScenario) -> Component {
    if s.kubectl.version.trim_start_matches('v') == crate::tools::versions::HPCC_KUBECTL_VERSION {
        Component::HpccKubectl
    } else {
        Component::Kubectl
    }
}

/// How the scenario models HPCC and the nodes, for the Result.
fn model_of(s: &ThorScenario) -> BTreeMap<String, String> {
    let control_plane = s.cluster.control_plane.describe().into_iter();
    let mut model = BTreeMap::from([
        ("kubectl".to_string(), s.kubectl.version.clone()),
        (
            "kubectl_discovery_cache".to_string(),
            format!("{:?}", s.kubectl.discovery_cache).to_lowercase(),
        ),
        (
            baseline::KUBELET_KEY.to_string(),
            match s.cluster.real_node {
                true => baseline::REAL_KUBELET.to_string(),
                false => s.kubelet.name().to_string(),
            },
        ),
        (
            "jobset_dns_hostnames".to_string(),
            s.jobset.enable_dns_hostnames.to_string(),
        ),
        ("compile_jobs".to_string(), s.compile.enabled.to_string()),
        ("linger_period".to_string(), s.thor.linger_period.clone()),
        ("workunits".to_string(), s.workunits.to_string()),
        (
            "graphs_per_workunit".to_string(),
            s.graphs_per_workunit.to_string(),
        ),
    ]);
    model.extend(control_plane.map(|(k, v)| (format!("control_plane.{k}"), v)));
    model
}

/// `--dry-run` on an existing cluster: the probe, then what each mode
/// would create and call (bench::thor::dry_run); nothing is created.
pub async fn plan_only(opts: &ThorBenchOptions) -> Result<String> {
    let s = preflight(opts, None, false, false)?.scenario;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    let target = opts.existing.as_ref().ok_or_else(|| {
        crate::error::bad_input(
            "--dry-run is for --provider existing (a local run creates its own cluster)",
        )
    })?;
    dry_run::dry_run(target, &s, &modes).await
}

/// Run every mode (× repeats), each on a fresh cluster torn down after
/// (or in a fresh namespace of an existing cluster, removed after).
pub async fn bench_thor(opts: &ThorBenchOptions) -> Result<ThorResult> {
    let mut s = preflight(opts, None, false, false)?.scenario;
    let modes: Vec<Mode> = match &opts.modes {
        Some(m) => m.clone(),
        None => s.modes.iter().filter_map(|m| Mode::parse(m)).collect(),
    };
    if let Some(target) = &opts.existing {
        if let Some(m) = modes.iter().find(|m| m.needs_kueue()) {
            return Err(crate::error::bad_input(format!(
                "{} runs on the local provider only: it creates cluster-wide Kueue queues",
                m.name()
            )));
        }
        let r = on_existing(opts, target, &mut s, &modes).await;
        if r.is_err() {
            // Nothing that carries the run id stays behind.
            if let Err(e) = existing::cleanup(target).await {
                return r.map_err(|r| r.context(format!("cleaning up failed too: {e:#}")));
            }
        }
        return r;
    }
    let k8s = K8sRelease::parse(&s.cluster.k8s_minor)?;
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), kubectl_component(&s)).await?;
    let started = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut result = ThorResult {
        schema: RESULT_SCHEMA.into(),
        scenario: s.name.clone(),
        scenario_file: opts.scenario.display().to_string(),
        provider: "local".into(),
        k8s_version: k8s.version.into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started,
        num_workers: s.thor.num_workers,
        num_workers_per_pod: s.thor.num_workers_per_pod,
        max_graphs: s.thor.max_graphs,
        graph_duration: s.graph_duration.clone(),
        model: model_of(&s),
        modes: BTreeMap::new(),
        harness_peak_rss_kib: 0,
        capabilities: None,
        timelines: Vec::new(),
        statistics: None,
    };
    let profile_req = match (&opts.profiles, &opts.out) {
        (Some((kinds, seconds)), Some(out)) => Some(pprof::Request {
            kinds: kinds.clone(),
            seconds: *seconds,
            dir: out.join("profiles"),
        }),
        (Some(_), None) => return Err(crate::error::bad_input("--profile needs --out")),
        _ => None,
    };
    let rounds = schedule(&modes, opts.repeat, seed_of(opts));
    result.statistics = Some(statistics(&rounds, seed_of(opts), &modes));
    announce(&rounds, seed_of(opts));
    let mut runs: BTreeMap<Mode, Vec<ModeResult>> = BTreeMap::new();
    for (round, order) in rounds.iter().enumerate() {
        let rep = round as u32;
        for &mode in order {
            let profile = profile_req
                .as_ref()
                .map(|r| (r, format!("{}-{rep}", mode.name())));
            let name = format!("{}-{}-{rep}", opts.cluster_prefix, mode.name());
            let cluster = lifecycle::up(&UpOptions {
                spec: mode_cluster(&s, k8s, mode, name.clone()),
                bins: opts.bins.clone(),
                timeout: Duration::from_secs(180),
            })
            .await?;
            let step = step_of(&s, mode, rep, opts.repeat, "");
            let r = lifecycle::while_alive(&cluster, async {
                let site = run::Site::local(&cluster, mode).await?;
                run::run_mode(&cluster, &site, &s, mode, &kubectl, opts.scrape, profile).await
            })
            .await;
            let r = match r {
                Ok((r, timeline)) => {
                    cluster.down(false)?;
                    result
                        .timelines
                        .push((mode.name().to_string(), rep as usize, timeline));
                    r
                }
                Err(e) => {
                    // Keep the logs: they say why.
                    let dir = cluster.layout.root.clone();
                    let down = cluster.down(true);
                    let e = e.context(format!(
                        "{} mode on cluster {name} (its state and logs are kept in {}; `harness down --name {name}` removes them)",
                        mode.name(),
                        dir.display()
                    ));
                    return Err(match down {
                        Ok(()) => e,
                        Err(d) => e.context(format!("stopping the cluster failed too: {d:#}")),
                    });
                }
            };
            step.done(&format!(
                "{} API requests, {} etcd writes",
                r.window.api_requests_total, r.window.etcd_writes_total
            ));
            add_run(&mut result, &mut runs, mode, r);
            save_progress(&mut result, opts.out.as_deref())?;
        }
    }
    Ok(result)
}

/// The run order: `repeat` rounds (at least one), each every mode once in
/// an order shuffled from `seed` — so slow drift of a shared machine falls
/// on every mode alike, and the same seed replays the same order.
pub fn schedule(modes: &[Mode], repeat: u32, seed: u64) -> Vec<Vec<Mode>> {
    let mut rng = crate::stats::Prng::new(seed);
    (0..repeat.max(1))
        .map(|_| {
            let mut order = modes.to_vec();
            rng.shuffle(&mut order);
            order
        })
        .collect()
}

/// `--seed`, or one from the clock (printed, and kept in the Result).
fn seed_of(opts: &ThorBenchOptions) -> u64 {
    static CLOCK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    opts.seed.unwrap_or_else(|| {
        *CLOCK.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64 % 1_000_000_000)
        })
    })
}

fn statistics(rounds: &[Vec<Mode>], seed: u64, modes: &[Mode]) -> Statistics {
    Statistics {
        seed,
        rounds: rounds
            .iter()
            .map(|r| r.iter().map(|m| m.name().to_string()).collect())
            .collect(),
        reference: match modes.contains(&Mode::Baseline) {
            true => Mode::Baseline.name().to_string(),
            false => modes
                .iter()
                .min()
                .map_or(String::new(), |m| m.name().to_string()),
        },
        method: result::METHOD.into(),
        resamples: crate::stats::RESAMPLES,
        confidence: crate::stats::CONFIDENCE,
        bootstrap_seed: crate::stats::SEED,
        rule: result::RULE_TEXT.into(),
    }
}

fn announce(rounds: &[Vec<Mode>], seed: u64) {
    let order: Vec<String> = rounds
        .iter()
        .map(|r| r.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "))
        .collect();
    eprintln!(
        "run order (seed {seed}; replay with --seed {seed}): {}",
        order.join(" | ")
    );
}

/// A finished run: into its mode's summary, every ratio recomputed.
fn add_run(
    result: &mut ThorResult,
    runs: &mut BTreeMap<Mode, Vec<ModeResult>>,
    mode: Mode,
    r: ModeResult,
) {
    let all = runs.entry(mode).or_default();
    all.push(r);
    result
        .modes
        .insert(mode.name().to_string(), summarize(all.clone()));
    result.judge_modes();
}

/// The step line of one run of a mode.
fn step_of(s: &ThorScenario, mode: Mode, rep: u32, repeat: u32, where_: &str) -> Step {
    Step::start(format!(
        "{} workunits × Thor {} ({} workers, {} at a time) in {} mode{}{where_}",
        s.workunits,
        s.name,
        s.thor.num_workers,
        s.thor.max_graphs,
        mode.name(),
        if repeat > 1 {
            format!(", round {}/{repeat}", rep + 1)
        } else {
            String::new()
        }
    ))
}

/// Keep what the modes so far measured, in `out` (a later failure loses
/// nothing).
fn save_progress(result: &mut ThorResult, out: Option<&Path>) -> Result<()> {
    result.harness_peak_rss_kib = peak_rss_kib();
    if let Some(out) = out {
        crate::output::write_atomic(
            &out.join("result.json"),
            serde_json::to_string_pretty(&result)? + "\n",
        )?;
        report::write_timelines(result, out)?;
    }
    Ok(())
}

/// Every mode on an existing cluster: probe first (nothing is created
/// when something is missing), then each run in its own namespace,
/// removed after it.
async fn on_existing(
    opts: &ThorBenchOptions,
    target: &existing::ExistingTarget,
    s: &mut ThorScenario,
    modes: &[Mode],
) -> Result<ThorResult> {
    if modes.is_empty() {
        return Err(crate::error::bad_input("no modes to run"));
    }
    let (cluster, caps) = existing::prepare(target, s, modes).await?;
    // The templates follow the server's release, not the scenario's.
    let k8s = existing::server_release(&caps)?;
    s.cluster.k8s_minor = k8s.minor.to_string();
    let kubectl = lifecycle::resolve_tool(k8s, opts.bins.clone(), kubectl_component(s)).await?;
    let mut result = ThorResult {
        schema: RESULT_SCHEMA.into(),
        scenario: s.name.clone(),
        scenario_file: opts.scenario.display().to_string(),
        provider: crate::cluster::existing::PROVIDER.into(),
        k8s_version: caps.server_version.trim_start_matches('v').to_string(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        started: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        num_workers: s.thor.num_workers,
        num_workers_per_pod: s.thor.num_workers_per_pod,
        max_graphs: s.thor.max_graphs,
        graph_duration: s.graph_duration.clone(),
        model: model_of(s),
        modes: BTreeMap::new(),
        harness_peak_rss_kib: 0,
        capabilities: Some(caps),
        timelines: Vec::new(),
        statistics: None,
    };
    let tokens = existing::token_dir()?;
    let rounds = schedule(modes, opts.repeat, seed_of(opts));
    result.statistics = Some(statistics(&rounds, seed_of(opts), modes));
    announce(&rounds, seed_of(opts));
    let mut runs: BTreeMap<Mode, Vec<ModeResult>> = BTreeMap::new();
    for (round, order) in rounds.iter().enumerate() {
        let rep = round as u32;
        for &mode in order {
            let site = existing::site(
                &cluster,
                target,
                mode,
                rep,
                tokens.path(),
                s.cluster.real_node,
            )
            .await?;
            let step = step_of(
                s,
                mode,
                rep,
                opts.repeat,
                &format!(" in namespace {}", site.namespace),
            );
            let (r, timeline) =
                run::run_mode(&cluster, &site, s, mode, &kubectl, opts.scrape, None).await?;
            existing::cleanup(target).await?;
            step.done(&format!(
                "{} API requests, {} etcd writes",
                r.window.api_requests_total, r.window.etcd_writes_total
            ));
            result
                .timelines
                .push((mode.name().to_string(), rep as usize, timeline));
            add_run(&mut result, &mut runs, mode, r);
            save_progress(&mut result, opts.out.as_deref())?;
        }
    }
    Ok(result)
}

/// A run checked against its stored baseline.
pub struct Comparison {
    pub baseline: PathBuf,
    pub verdicts: Vec<compare::Verdict>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.verdicts.iter().any(|v| !v.pass)
    }
}

/// Compare `r` with `baselines/<provider>/<minor>/<scenario>.json` under
/// `root`; with `counts_only` latencies are shown but not judged. Writes
/// compare.md and compare-junit.xml into `out`.
pub fn compare(root: &Path, r: &ThorResult, counts_only: bool, out: &Path) -> Result<Comparison> {
    let path = baseline::path_for(root, r);
    let base = baseline::load(&path)?;
    baseline::same_capabilities(&base, r, &path)?;
    let mut verdicts = compare::compare(&base, r);
    if counts_only {
        compare::not_judging_latency(&mut verdicts);
    }
    let md = report::compare_markdown(&verdicts, &path);
    crate::output::write_atomic(&out.join("compare.md"), &md)?;
    crate::output::write_atomic(
        &out.join("compare-junit.xml"),
        report::compare_junit(&verdicts),
    )?;
    Ok(Comparison {
        baseline: path,
        verdicts,
    })
}

/// Store `r` as the baseline under `root`, naming the scenario file
/// relative to the repository when it lies inside it. Returns the path.
pub fn record(root: &Path, r: &ThorResult, scenario: &Path) -> Result<PathBuf> {
    let path = baseline::path_for(root, r);
    let relative = scenario
        .canonicalize()
        .ok()
        .and_then(|p| {
            p.strip_prefix(root.canonicalize().ok()?)
                .ok()
                .map(Path::to_path_buf)
        })
        .unwrap_or(scenario.to_path_buf());
    baseline::record(&path, r, &relative.display().to_string())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_mode_once_in_a_replayable_order() {
        let modes = [Mode::Baseline, Mode::Jobset, Mode::JobsetGang];
        let rounds = schedule(&modes, 10, 7);
        assert_eq!(rounds.len(), 10);
        for r in &rounds {
            let mut sorted = r.clone();
            sorted.sort();
            assert_eq!(sorted, modes);
        }
        // Interleaved: not one order ten times.
        assert!(rounds.iter().any(|r| r != &rounds[0]), "{rounds:?}");
        assert_eq!(schedule(&modes, 10, 7), rounds);
        assert_ne!(schedule(&modes, 10, 8), rounds);
        assert_eq!(schedule(&modes, 0, 7).len(), 1);
        let st = statistics(&rounds, 7, &modes);
        assert_eq!(st.reference, "baseline");
        assert_eq!(st.rounds[0].len(), 3);
        assert_eq!(
            statistics(&rounds, 7, &[Mode::JobsetGang, Mode::Jobset]).reference,
            "jobset"
        );
    }
}
