//! `harness bench thor`: HPCC Thor's lifecycle per mode on fresh clusters
//! (or an existing one, or as the pods of an Indexed Job on a cluster),
//! its reports, and the stored baseline compared with or recorded.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use harness::bench::core::policy;
use harness::bench::core::report::{compare as compare_report, files, markdown};
use harness::bench::core::shard::Shard;
use harness::bench::thor::{self, ThorBenchOptions};
use harness::cluster::{Ask, Provider};
use harness::error::bad_input;
use harness::metrics::pprof;
use harness::output::{Out, check_out};
use harness::workload::thor::Mode;

use crate::cli::args::{parse_bins, parse_shard};
use crate::cli::interrupt::{Made, or_tear_down};
use crate::cli::on_cluster;
use crate::cli::provider::ProviderArgs;

#[derive(Args, Debug)]
pub struct BenchThorArgs {
    /// A scenario file (suites/thor/*.yaml).
    #[arg(long)]
    pub scenario: PathBuf,
    /// Modes to run (default: the scenario's): baseline,jobset
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Where the reports go.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// Rounds: every mode once per round, in an order shuffled from
    /// --seed, each run on a fresh cluster. Medians, min–max and each
    /// ratio to the reference mode with a 95 % interval and a verdict are
    /// reported.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Seed of the run order (printed by every run; the same seed replays
    /// the same order). Default: from the clock.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run only shard K of N of the rounds (contiguous slices in the
    /// seed's order; needs --seed): the shards' out dirs, run anywhere,
    /// join with `harness report merge` into the result one run gives.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Compare with the stored baseline: exit 1 on a regression, 4 when
    /// nothing regressed but a verdict could not be given on this machine
    /// (compare-summary.md says which and what would give one). On the
    /// baseline's own machine (its boot, or its class at its recorded
    /// speed), quiet, every metric is judged against its recorded runs;
    /// elsewhere what the workload's pace or the clock drives is judged
    /// against what a machine not seen yet may show, predicted from the
    /// machines the baseline holds (--record-band adds one).
    #[arg(long)]
    pub compare: bool,
    /// With --compare: also run the baseline's own versions here (the
    /// scenario file as it is: no --bin, no --set) round by round beside
    /// this run set, in alternating order, and judge this build against
    /// them on this machine (paired by round, Holm family-wise: here.md)
    /// — the verdict that holds on any machine. Needs --repeat 3 or more;
    /// exit 1 on a regression either comparison finds.
    #[arg(long, requires = "compare")]
    pub here: bool,
    /// With --compare: latencies, wall times and CPU are shown but not
    /// judged; counts are judged by what drives them wherever this runs.
    #[arg(long, requires = "compare")]
    pub counts_only: bool,
    /// Add these runs to the stored baseline's band of machines and loads
    /// (its `across`): run them on another machine, or beside a load
    /// (--load), with the baseline's build. Refused on the baseline's own
    /// machine, quiet (that is --record's).
    #[arg(long, conflicts_with = "record")]
    pub record_band: bool,
    /// Keep N of this machine's CPUs busy beside every run (N processes
    /// spinning, stopped when the runs end): a busier machine on demand.
    #[arg(long, value_name = "N")]
    pub load: Option<u32>,
    /// Store this run as the baseline.
    #[arg(long)]
    pub record: bool,
    /// Judge (--compare) or record (--record) the runs a previous `bench
    /// thor --out DIR` saved instead of running again (e.g. after the rule
    /// or the baseline's metrics changed); refused unless they ran the
    /// scenario as given, --set included.
    #[arg(long, value_name = "DIR", conflicts_with = "dry_run")]
    pub from: Option<PathBuf>,
    /// Override a scenario value: KEY.PATH=VALUE (e.g.
    /// jobset.enableDNSHostnames=true). Repeatable; not with --record.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Use this binary: NAME=PATH. Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
    /// Add the API server's and etcd's own metrics (inflight gauges,
    /// stored objects, etcd puts/deletes, keys) to the timeline, scraped
    /// every second. Costs the API server CPU (README "Overhead of
    /// sampling"); the timeline's CPU, memory and request series need no
    /// scrape.
    #[arg(long)]
    pub scrape_metrics: bool,
    /// Take pprof profiles of kube-apiserver and etcd during each run:
    /// cpu, heap or cpu,heap (files in <out>/profiles/).
    #[arg(long, value_name = "KINDS")]
    pub profile: Option<String>,
    /// Length of the CPU profile, in seconds.
    #[arg(long, default_value_t = 20)]
    pub profile_seconds: u32,
    /// local: a fresh local cluster per mode; kind: a fresh kind cluster
    /// per mode (its profile from kind-configs/ by mode, Thor's pods as
    /// real containers on the worker); existing: the cluster of
    /// --kubeconfig, which the harness never starts or stops (each mode
    /// in a namespace of its own, removed after). --real-node: Thor's pods
    /// run real containers on real nodes (the scenario's
    /// cluster.realNode): locally on a real node beside the fake ones
    /// (root, one per machine), on an existing cluster on its own nodes;
    /// its baseline is `<scenario>.real-node.json`.
    #[command(flatten)]
    pub target: ProviderArgs,
    /// With --provider existing: probe, print every object the run would
    /// create and the API calls it would make, create nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --provider existing --real-node: the image Thor's containers
    /// run, agnhost (its netexec serves the exits), pullable by the nodes.
    #[arg(long, default_value = harness::tools::versions::AGNHOST_IMAGE)]
    pub node_image: String,
    #[command(flatten)]
    pub on_cluster: on_cluster::OnClusterArgs,
}

pub async fn bench_thor(args: &BenchThorArgs) -> Result<i32> {
    if let Some(n) = args.load {
        harness::load::check(n)?;
    }
    if let Some(hold_s) = args.on_cluster.hold {
        return on_cluster::in_pod(&args.out, hold_s, bench_thor_here(args)).await;
    }
    // Boxed: a run's future is large, and a test's thread stack small.
    let work: std::pin::Pin<Box<dyn std::future::Future<Output = Result<i32>> + '_>> =
        match args.on_cluster.on_cluster {
            true => Box::pin(bench_thor_on_cluster(args)),
            false => Box::pin(bench_thor_here(args)),
        };
    harness::output::removing_empty_out(&args.out, work).await
}

/// `bench thor --on-cluster`: the rounds as the pods of an Indexed Job,
/// merged here.
async fn bench_thor_on_cluster(args: &BenchThorArgs) -> Result<i32> {
    use harness::bench::on_cluster::run;
    let t = &args.target;
    if t.provider != crate::cli::provider::ProviderName::Local
        || t.real_node
        || args.shard.is_some()
        || args.profile.is_some()
        || !args.bins.is_empty()
        || args.dry_run
        || args.from.is_some()
    {
        return Err(bad_input(
            "--on-cluster runs every round with the local provider inside its pod, all rounds of the run set: drop --provider, --real-node, --shard, --profile, --bin, --dry-run and --from",
        ));
    }
    on_cluster::check(&args.on_cluster)?;
    let root = harness::paths::repo_root(&std::env::current_dir()?).ok_or_else(|| {
        bad_input("--on-cluster puts the scenarios of suites/thor/ into the image: run from inside the repository")
    })?;
    let scenario = std::fs::canonicalize(&args.scenario)
        .map_err(|e| bad_input(format!("--scenario {}: {e}", args.scenario.display())))?;
    let rel = scenario
        .strip_prefix(std::fs::canonicalize(root.join("suites/thor"))?)
        .map_err(|_| {
            bad_input(format!(
                "--on-cluster: --scenario {} is not in suites/thor/ (the image holds those)",
                args.scenario.display()
            ))
        })?
        .to_path_buf();
    // The kubeconfig read and its server reached, and the out dir
    // checked, before anything is written or resolved.
    let existing = on_cluster::cluster(&args.target).await?;
    check_out_dir(args)?;
    let seed = args.seed.unwrap_or_else(harness::stats::clock_seed);
    let pod_args = pod_args(args, &rel, seed);
    let opts = ThorBenchOptions {
        scenario: args.scenario.clone(),
        modes: None,
        repeat: args.repeat,
        seed: Some(seed),
        shard: None,
        bins: Default::default(),
        cluster_prefix: String::new(),
        overrides: args.overrides.clone(),
        out: Some(args.out.clone()),
        scrape: false,
        profiles: None,
        real_node: false,
        provider: Provider::Local { real_node: false },
    };
    let pre = thor::preflight(&opts, Some(&root), args.compare, args.record)?;
    let s = &pre.scenario;
    let k8s = harness::k8s::K8sRelease::parse(&s.cluster.k8s_minor)?;
    let kueue = s
        .modes
        .iter()
        .filter_map(|m| Mode::parse(m))
        .any(|m| m.needs_kueue());
    let run_id = harness::cluster::existing::site::new_run_id();
    let on = run::OnCluster {
        kubeconfig: existing.kubeconfig.clone(),
        context: existing.context.clone(),
        run_id: run_id.clone(),
        image: args.on_cluster.image.clone(),
        push: args.on_cluster.push.clone(),
        contents: on_cluster::contents(
            &args.on_cluster,
            k8s,
            if kueue {
                &[harness::tools::Component::Kueue]
            } else {
                &[]
            },
            &root,
        )
        .await?,
        shards: args.repeat,
        parallel: args.on_cluster.parallel,
        args: pod_args,
        size: run::size_for(s.thor.num_workers),
        out: args.out.clone(),
        timeout: Duration::from_secs(args.on_cluster.on_cluster_timeout),
        inputs: Vec::new(),
    };
    let merged = match on_cluster::rounds(&on, existing).await? {
        Ok(harness::bench::saved::Saved::Thor(r)) => *r,
        Ok(_) => {
            return Err(bad_input(
                "the rounds brought back another benchmark's results",
            ));
        }
        Err(code) => return Ok(code),
    };
    for p in files::write_all(&merged, &args.out)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", markdown::markdown(&merged));
    judge_and_record(args, Some(&root), &merged)
}

/// What each round's pod runs: `bench thor` of the scenario at `rel` in
/// the image's suites/thor/, its shard the pod's index, the run set's
/// seed, modes, overrides and scraping.
fn pod_args(args: &BenchThorArgs, rel: &std::path::Path, seed: u64) -> Vec<String> {
    let mut pod_args: Vec<String> = vec![
        "bench".into(),
        "thor".into(),
        "--scenario".into(),
        format!(
            "{}/suites/thor/{}",
            harness::bench::on_cluster::image::REPO,
            rel.display()
        ),
        "--repeat".into(),
        args.repeat.to_string(),
        "--seed".into(),
        seed.to_string(),
        "--shard".into(),
        format!("index/{}", args.repeat),
        "--out".into(),
        harness::bench::on_cluster::job::OUT.into(),
    ];
    if !args.modes.is_empty() {
        pod_args.extend(["--modes".into(), args.modes.join(",")]);
    }
    for o in &args.overrides {
        pod_args.extend(["--set".into(), o.clone()]);
    }
    if args.scrape_metrics {
        pod_args.push("--scrape-metrics".into());
    }
    pod_args
}

/// The scenario values a recorded run may override: those the baseline's
/// path is keyed by (baselines/<provider>/<minor>/…), so the record never
/// stands in for the file's own run.
const KEYED_OVERRIDES: &[&str] = &["cluster.k8sMinor"];

/// `--out` touches none of the run's inputs (the scenario, --from, --bin
/// and --kubeconfig files) and can be made a directory.
fn check_out_dir(args: &BenchThorArgs) -> Result<()> {
    let bins = parse_bins(&args.bins)?;
    let mut inputs: Vec<(&str, &std::path::Path)> = vec![("--scenario", &args.scenario)];
    if let Some(d) = &args.from {
        inputs.push(("--from", d));
    }
    if let Some(k) = &args.target.existing.kubeconfig {
        inputs.push(("--kubeconfig", k));
    }
    inputs.extend(bins.values().map(|p| ("--bin", p.as_path())));
    check_out("--out", &args.out, Out::Dir, &inputs)
}

/// `bench thor` with the clusters of its provider.
async fn bench_thor_here(args: &BenchThorArgs) -> Result<i32> {
    check_out_dir(args)?;
    let modes = parse_modes(&args.modes)?;
    harness::bench::core::rounds::check_repeat(args.repeat)?;
    check_record(args)?;
    if args.here {
        here_ask(args)?;
    }
    let provider = checked_provider(args)?;
    let root = harness::paths::repo_root(&std::env::current_dir()?);
    let opts = bench_options(args, modes, provider)?;
    // Every check before any cluster starts.
    let pre = thor::preflight(&opts, root.as_deref(), args.compare, args.record)?;
    if args.dry_run {
        if args.compare || args.record {
            return Err(bad_input(
                "--dry-run measures nothing: drop --compare/--record",
            ));
        }
        print!("{}", thor::plan_only(&opts).await?);
        return Ok(0);
    }
    if let Some(dir) = &args.from {
        return judge_saved(args, dir, root.as_deref(), &pre.scenario);
    }
    if args.here {
        return compare_here(args, modes_again(args)?, root.as_deref()).await;
    }
    let made = Made::Prefixed(&opts.cluster_prefix);
    let load = args.load.map(harness::load::Load::start).transpose()?;
    if let Some(l) = &load {
        eprintln!(
            "harness: {} CPU(s) kept busy beside the runs (--load)",
            l.cores()
        );
    }
    let result = or_tear_down(thor::bench_thor(&opts), &opts.provider, made).await;
    drop(load);
    let result = match result? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    for p in files::write_all(&result, &args.out)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", markdown::markdown(&result));
    judge_and_record(args, root.as_deref(), &result)
}

/// What `--here` was asked for, refused before anything runs when it
/// cannot be done.
fn here_ask(args: &BenchThorArgs) -> Result<crate::cli::here::Ask> {
    let ask = crate::cli::here::Ask {
        rounds: args.repeat,
        changed: args
            .bins
            .iter()
            .map(|b| format!("--bin {b}"))
            .chain(args.overrides.iter().map(|o| format!("--set {o}")))
            .collect(),
    };
    crate::cli::here::check(
        &ask,
        &[
            ("--from", args.from.is_some()),
            ("--shard", args.shard.is_some()),
            ("--record", args.record),
            ("--record-band", args.record_band),
        ],
    )?;
    Ok(ask)
}

/// `--modes` parsed again (options are built once per side).
fn modes_again(args: &BenchThorArgs) -> Result<Option<Vec<Mode>>> {
    parse_modes(&args.modes)
}

/// `--compare --here`: both sides round by round (`cli::here`), then this
/// build's runs against the stored baseline as well; exit 1 when either
/// finds a regression.
async fn compare_here(
    args: &BenchThorArgs,
    modes: Option<Vec<Mode>>,
    root: Option<&std::path::Path>,
) -> Result<i32> {
    let ask = here_ask(args)?;
    let seed = args.seed.unwrap_or_else(harness::stats::clock_seed);
    eprintln!("harness: --here seed {seed} (the order of the sides in each round)");
    let side = |reference: bool, round: u32| -> Result<ThorBenchOptions> {
        let mut o = bench_options(args, modes.clone(), checked_provider(args)?)?;
        o.repeat = 1;
        o.seed = Some(seed.wrapping_add(u64::from(round)));
        o.cluster_prefix = format!(
            "{}-r{round}{}",
            o.cluster_prefix,
            if reference { "b" } else { "t" }
        );
        o.out = None;
        if reference {
            o.bins = Default::default();
            o.overrides = Vec::new();
        }
        Ok(o)
    };
    let load = args.load.map(harness::load::Load::start).transpose()?;
    let ran = crate::cli::here::run(&ask, &side, &args.out, seed).await;
    drop(load);
    let (this, h) = match ran? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    for p in files::write_all(&this, &args.out)? {
        eprintln!("wrote {}", p.display());
    }
    let code = judge_and_record(args, root, &this)?;
    Ok(
        if code == harness::error::EXIT_FAILED || h.exit_code() != 0 {
            harness::error::EXIT_FAILED
        } else {
            0
        },
    )
}

/// `--modes` parsed, or None for the scenario's own modes.
fn parse_modes(modes: &[String]) -> Result<Option<Vec<Mode>>> {
    if modes.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        modes
            .iter()
            .map(|m| {
                Mode::parse(m).ok_or_else(|| {
                    bad_input(format!(
                        "--modes: unknown mode {m:?}; one of {}",
                        Mode::ALL.map(Mode::name).join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?,
    ))
}

/// `--record` stores a whole run set of the scenario file's own run: no
/// --shard, and no --set but of the keys the baseline's path names.
fn check_record(args: &BenchThorArgs) -> Result<()> {
    if args.record && args.shard.is_some() {
        return Err(bad_input(
            "--record stores a whole run set: run the shards, join them with `harness report merge`, then record the merged result (`bench thor --from DIR --record`)",
        ));
    }
    if args.record
        && let Some(o) = args.overrides.iter().find(|o| {
            !o.split_once('=')
                .is_some_and(|(k, _)| KEYED_OVERRIDES.contains(&k))
        })
    {
        return Err(bad_input(format!(
            "--record stores the scenario file's own run: drop --set {o}, or edit a copy of the scenario (only {} may be set: the baseline's path names it)",
            KEYED_OVERRIDES.join(", ")
        )));
    }
    Ok(())
}

/// The provider asked for, refused when it fixes kind's profile and
/// checked to take --bin and --profile when given.
fn checked_provider(args: &BenchThorArgs) -> Result<Provider> {
    let provider = args.target.provider(&args.node_image)?;
    match &provider {
        Provider::Kind(k)
            if k.config.is_some() || args.target.kind.kind_profile.is_some() || k.kwok =>
        {
            return Err(bad_input(
                "--config, --kind-profile and --kwok: bench thor picks each mode's kind profile (kind-configs/)",
            ));
        }
        Provider::Kind(_) | Provider::Local { .. } | Provider::Existing(_) => {}
    }
    if !args.bins.is_empty() {
        provider.check(Ask::Binaries, "--bin")?;
    }
    if args.profile.is_some() {
        provider.check(Ask::Profiles, "--profile")?;
    }
    Ok(provider)
}

/// The bench's options from the arguments, the parsed modes and the
/// checked provider.
fn bench_options(
    args: &BenchThorArgs,
    modes: Option<Vec<Mode>>,
    provider: Provider,
) -> Result<ThorBenchOptions> {
    Ok(ThorBenchOptions {
        scenario: args.scenario.clone(),
        modes,
        repeat: args.repeat,
        seed: args.seed,
        shard: args.shard,
        bins: parse_bins(&args.bins)?,
        cluster_prefix: format!("bench-{}", std::process::id()),
        overrides: args.overrides.clone(),
        out: Some(args.out.clone()),
        scrape: args.scrape_metrics,
        profiles: match &args.profile {
            Some(list) => Some((
                pprof::parse_kinds(list)?,
                args.profile_seconds.clamp(1, 600),
            )),
            None => None,
        },
        real_node: args.target.real_node,
        provider,
    })
}

/// `--from`: the runs saved in `dir` for `scenario`, judged or recorded.
fn judge_saved(
    args: &BenchThorArgs,
    dir: &std::path::Path,
    root: Option<&std::path::Path>,
    scenario: &harness::workload::thor::scenario::ThorScenario,
) -> Result<i32> {
    if !(args.compare || args.record || args.record_band) {
        return Err(bad_input(
            "--from judges or records saved runs: add --compare, --record or --record-band",
        ));
    }
    if args.load.is_some() {
        return Err(bad_input("--load runs beside new runs, not with --from"));
    }
    let result = thor::saved::matching(dir, scenario)?;
    eprintln!(
        "harness: the runs saved in {} ({} started)",
        dir.display(),
        result.started
    );
    judge_and_record(args, root, &result)
}

/// `--compare` and `--record` of a result, run now or saved (`--from`).
fn judge_and_record(
    args: &BenchThorArgs,
    root: Option<&std::path::Path>,
    result: &thor::result::ThorResult,
) -> Result<i32> {
    let mut code = 0;
    if let Some(root) = root {
        if args.compare {
            let c = policy::compare(
                root,
                result,
                args.counts_only,
                &args.out,
                harness::bench::recorded::known_mode,
            )?;
            print!("{}", compare_report::compare_markdown(&c));
            let summary = compare_report::summary(&c);
            eprint!("{summary}");
            std::fs::create_dir_all(&args.out)?;
            files::lead_with(result, &args.out, &summary)?;
            code = c.exit_code();
        }
        if args.record_band {
            let (path, c) =
                policy::record_band(root, result, harness::bench::recorded::known_mode)?;
            eprintln!(
                "added to the band of machines and loads of {}: {c}",
                path.display()
            );
        }
        if args.record {
            let path = policy::record(
                root,
                result,
                &args.scenario,
                harness::bench::recorded::known_mode,
            )?;
            eprintln!("recorded {}", path.display());
        }
    }
    Ok(code)
}
