//! `harness measure`: any workload inside the one measurement window on
//! a fresh local or kind cluster per run, reported as `bench thor`
//! reports, with repeats, A/B variants and baselines.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use harness::bench::core::report::compare as compare_report;
use harness::bench::core::{baseline, policy};
use harness::bench::measure::workload::{self, Variant, Workload};
use harness::bench::measure::{self, MeasureOptions, report};
use harness::cluster::Ask;
use harness::cluster::profile::{ControlPlane, Profile};
use harness::cluster::{ClusterSpec, NodeSpec};
use harness::error::{self, bad_input};
use harness::k8s::K8sRelease;
use harness::output::{Out, check_out};

use crate::cli::args::{parse_bins, parse_profile, parse_shard};
use crate::cli::interrupt::{Made, or_tear_down};
use crate::cli::on_cluster;
use crate::cli::provider::ProviderArgs;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  harness measure -- kubectl create job hello --image=registry.k8s.io/pause:3.10\n  harness measure --apply suites/measure/manifests --kueue\n  harness measure --repeat 5 --variant one='kubectl create job a --image=x' --variant ten='kubectl apply -f ten.yaml'"
)]
pub struct MeasureArgs {
    /// Name of the measurement: the report's title and the baseline's
    /// file (baselines/<provider>/<minor>/measure-NAME.json).
    #[arg(long, default_value = "workload")]
    pub name: String,
    /// Apply the manifests of this folder (CRDs first, then namespaces,
    /// then configuration, then the rest) as the workload's identity and
    /// wait until what they made has finished, instead of a command.
    #[arg(long, value_name = "DIR", conflicts_with = "variants")]
    pub apply: Option<PathBuf>,
    /// Run Kueue's scheduling-performance runner (kueue-perf-runner,
    /// built from the Kueue module) with this generator config (e.g.
    /// suites/measure/kueue-perf/small.yaml) as the workload; implies
    /// --kueue. Its own figures (summary.yaml: admission and finish times
    /// per workload class) are kept beside the harness's.
    #[arg(long, value_name = "CONFIG", conflicts_with = "apply")]
    pub kueue_perf: Option<PathBuf>,
    /// An A/B variant: NAME='COMMAND' (run with sh -c) or NAME=@DIR
    /// (applied as --apply DIR). Give two or more; they run interleaved
    /// on fresh clusters, each ratio to the first with a 95 % interval
    /// and a verdict.
    #[arg(
        long = "variant",
        value_name = "NAME=CMD|NAME=@DIR",
        conflicts_with = "kueue_perf"
    )]
    pub variants: Vec<String>,
    /// Rounds: every variant once per round, in an order shuffled from
    /// --seed, each run on a fresh cluster.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Seed of the run order (printed by every run). Default: the clock.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run only shard K of N of the rounds (contiguous slices in the
    /// seed's order; needs --seed): the shards' out dirs, run anywhere,
    /// join with `harness report merge` into the result one run gives.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<harness::bench::core::shard::Shard>,
    /// Where result.json, report.md, report.html, junit.xml, the
    /// timelines and each run's output (runs/<variant>-<round>/) go.
    #[arg(long, default_value = "measure-out")]
    pub out: PathBuf,
    /// Kubernetes minor of the clusters.
    #[arg(long = "k8s-version", default_value = harness::k8s::DEFAULT_K8S_MINOR)]
    pub k8s_version: String,
    /// Where each run happens: on a fresh cluster of the local provider
    /// (processes and kwok nodes) or of kind (real nodes in containers;
    /// the workload acts as a cluster-admin ServiceAccount), or in a
    /// namespace of its own on an existing cluster (--kubeconfig; the
    /// workload acts as a ServiceAccount that is admin of that namespace
    /// only; the server's release, not --k8s-version, decides).
    #[command(flatten)]
    pub target: ProviderArgs,
    /// Control-plane profile: default or tuned (as `up --control-plane`).
    #[arg(long = "control-plane", default_value = "default", value_parser = parse_profile)]
    pub control_plane: Profile,
    /// local: fake (kwok) nodes of each cluster [default: 3].
    #[arg(long)]
    pub nodes: Option<usize>,
    /// local: pod capacity of each node [default: 110].
    #[arg(long)]
    pub node_pods: Option<u32>,
    /// Also run Kueue (its controller as a process, its CRDs and webhooks
    /// installed) on each cluster.
    #[arg(long)]
    pub kueue: bool,
    /// Seconds the command (or --apply's wait) may take; past it the
    /// command is stopped and the run's exit code is 124.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// End the window when the command exits, instead of when the cluster
    /// has settled (every Job and JobSet finished, Deployments and
    /// StatefulSets available, every pod Running or ended; the wait's
    /// requests are the harness's, counted apart).
    #[arg(long)]
    pub no_settle: bool,
    /// Measure a workload whose Job or JobSet ends Failed as it is: by
    /// default that is the workload's failure (the run exits 1, naming
    /// it), so an A/B never compares a failed variant with a good one.
    #[arg(long)]
    pub allow_failed: bool,
    /// Add the API server's and etcd's own metrics to the timeline,
    /// scraped every second (costs the API server CPU).
    #[arg(long)]
    pub scrape_metrics: bool,
    /// Compare with the stored baseline (measure-NAME); exit 1 on a
    /// regression.
    #[arg(long)]
    pub compare: bool,
    /// With --compare: latencies, times and CPU shown, not judged; counts
    /// are judged by what drives them wherever this runs.
    #[arg(long, requires = "compare")]
    pub counts_only: bool,
    /// Keep N of this machine's CPUs busy beside every run (N processes
    /// spinning, stopped when the runs end): a busier machine on demand.
    #[arg(long, value_name = "N")]
    pub load: Option<u32>,
    /// Store this run as the baseline measure-NAME.
    #[arg(long)]
    pub record: bool,
    /// Use this binary: NAME=PATH. Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
    #[command(flatten)]
    pub on_cluster: on_cluster::OnClusterArgs,
    /// The command to measure and its arguments (after `--`). It runs
    /// with KUBECONFIG (the `workload` identity, a cluster admin) and
    /// HARNESS_RUN_ID set, the cluster's kubectl first on PATH.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl MeasureArgs {
    /// The workloads the flags give: exactly one of a command, --apply,
    /// two or more --variant.
    pub fn variants(&self) -> Result<Vec<Variant>> {
        let given = [
            !self.command.is_empty(),
            self.apply.is_some(),
            !self.variants.is_empty(),
            self.kueue_perf.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count();
        if given != 1 {
            return Err(bad_input(
                "give exactly one of: a command after `--`, --apply DIR, --kueue-perf CONFIG, or two or more --variant",
            ));
        }
        if !self.variants.is_empty() {
            return workload::parse_variants(&self.variants);
        }
        let w = match (&self.apply, &self.kueue_perf) {
            (Some(dir), _) => Workload::Apply(dir.clone()),
            (_, Some(config)) => Workload::KueuePerf(config.clone()),
            _ => Workload::Command(self.command.clone()),
        };
        Ok(vec![Variant {
            name: self.name.clone(),
            workload: w,
        }])
    }
}

pub async fn measure(args: &MeasureArgs) -> Result<i32> {
    if let Some(n) = args.load {
        harness::load::check(n)?;
    }
    if let Some(hold_s) = args.on_cluster.hold {
        return on_cluster::in_pod(&args.out, hold_s, measure_here(args)).await;
    }
    // Boxed: a run's future is large, and a test's thread stack small.
    let work: std::pin::Pin<Box<dyn std::future::Future<Output = Result<i32>> + '_>> =
        match args.on_cluster.on_cluster {
            true => Box::pin(measure_on_cluster(args)),
            false => Box::pin(measure_here(args)),
        };
    harness::output::removing_empty_out(&args.out, work).await
}

/// `measure --on-cluster`: the rounds as the pods of an Indexed Job, each
/// with the local provider inside it, the files the workload reads in a
/// ConfigMap (`bench::on_cluster::inputs`), merged here.
async fn measure_on_cluster(args: &MeasureArgs) -> Result<i32> {
    use harness::bench::on_cluster::{inputs::Inputs, job, run};
    let t = &args.target;
    if t.provider != crate::cli::provider::ProviderName::Local
        || t.real_node
        || args.shard.is_some()
        || !args.bins.is_empty()
    {
        return Err(bad_input(
            "--on-cluster runs every round with the local provider inside its pod, all rounds of the run set: drop --provider, --real-node, --shard and --bin",
        ));
    }
    args.variants()?;
    on_cluster::check(&args.on_cluster)?;
    let k8s = K8sRelease::parse(&args.k8s_version)?;
    let root = harness::paths::repo_root(&std::env::current_dir()?).ok_or_else(|| {
        bad_input("--on-cluster builds the rounds' image from the repository: run from inside it")
    })?;
    if args.compare {
        workload::check_name("--name", &args.name)?;
    }
    let seed = args.seed.unwrap_or_else(harness::stats::clock_seed);
    let mut files = Inputs::default();
    let pod_args = pod_args(args, seed, job::OUT, &mut files)?;
    // The kubeconfig read and its server reached, and the out dir
    // checked, before anything is written or resolved.
    let existing = on_cluster::cluster(&args.target).await?;
    check_out_dir(args)?;
    let kueue = args.kueue || args.kueue_perf.is_some();
    let extra: Vec<harness::tools::Component> = [
        (kueue, harness::tools::Component::Kueue),
        (
            args.kueue_perf.is_some(),
            harness::tools::Component::KueuePerfRunner,
        ),
    ]
    .into_iter()
    .filter_map(|(want, c)| want.then_some(c))
    .collect();
    let on = run::OnCluster {
        kubeconfig: existing.kubeconfig.clone(),
        context: existing.context.clone(),
        run_id: harness::cluster::existing::site::new_run_id(),
        image: args.on_cluster.image.clone(),
        push: args.on_cluster.push.clone(),
        contents: on_cluster::contents(&args.on_cluster, k8s, &extra, &root).await?,
        shards: args.repeat,
        parallel: args.on_cluster.parallel,
        args: pod_args,
        size: run::size_for(0),
        out: args.out.clone(),
        timeout: Duration::from_secs(args.on_cluster.on_cluster_timeout),
        inputs: files.files,
    };
    let result = match on_cluster::rounds(&on, existing).await? {
        Ok(harness::bench::saved::Saved::Measure(m)) => *m,
        Ok(_) => {
            return Err(bad_input(
                "the rounds brought back another benchmark's results",
            ));
        }
        Err(code) => return Ok(code),
    };
    finish(args, Some(root), result)
}

/// The arguments of one round's pod: this run's flags, each round its
/// shard of the seed's order (`--shard index/R`, the index from the pod),
/// every folder or file the workload reads at its path in the pod.
fn pod_args(
    args: &MeasureArgs,
    seed: u64,
    out: &str,
    files: &mut harness::bench::on_cluster::inputs::Inputs,
) -> Result<Vec<String>> {
    let mut v: Vec<String> = ["measure", "--name", &args.name]
        .into_iter()
        .map(String::from)
        .collect();
    let mut flag = |f: &str, x: String| {
        v.push(f.into());
        v.push(x);
    };
    flag("--repeat", args.repeat.to_string());
    flag("--seed", seed.to_string());
    flag("--shard", format!("index/{}", args.repeat));
    flag("--out", out.into());
    flag("--k8s-version", args.k8s_version.clone());
    flag("--control-plane", args.control_plane.name().to_string());
    flag("--timeout", args.timeout.to_string());
    if let Some(n) = args.nodes {
        flag("--nodes", n.to_string());
    }
    if let Some(n) = args.node_pods {
        flag("--node-pods", n.to_string());
    }
    if let Some(dir) = &args.apply {
        flag("--apply", files.ship("--apply", dir)?);
    }
    if let Some(config) = &args.kueue_perf {
        flag("--kueue-perf", files.ship("--kueue-perf", config)?);
    }
    for given in &args.variants {
        let (name, rest) = given.split_once('=').unwrap_or((given, ""));
        let value = match rest.strip_prefix('@') {
            Some(dir) => format!(
                "{name}=@{}",
                files.ship(&format!("--variant {name}=@"), std::path::Path::new(dir))?
            ),
            None => given.clone(),
        };
        flag("--variant", value);
    }
    for (on, f) in [
        (args.kueue, "--kueue"),
        (args.no_settle, "--no-settle"),
        (args.allow_failed, "--allow-failed"),
        (args.scrape_metrics, "--scrape-metrics"),
    ] {
        if on {
            v.push(f.into());
        }
    }
    if !args.command.is_empty() {
        v.push("--".into());
        v.extend(args.command.iter().cloned());
    }
    Ok(v)
}

/// `--out` touches none of the files the workload or the run reads
/// (--apply, --kueue-perf, a variant's @DIR, --bin, --kubeconfig) and can
/// be made a directory.
fn check_out_dir(args: &MeasureArgs) -> Result<()> {
    let bins = parse_bins(&args.bins)?;
    let mut inputs: Vec<(&str, &std::path::Path)> = Vec::new();
    if let Some(d) = &args.apply {
        inputs.push(("--apply", d));
    }
    if let Some(c) = &args.kueue_perf {
        inputs.push(("--kueue-perf", c));
    }
    for v in &args.variants {
        if let Some((_, rest)) = v.split_once('=')
            && let Some(dir) = rest.strip_prefix('@')
        {
            inputs.push(("--variant", std::path::Path::new(dir)));
        }
    }
    if let Some(k) = &args.target.existing.kubeconfig {
        inputs.push(("--kubeconfig", k));
    }
    inputs.extend(bins.values().map(|p| ("--bin", p.as_path())));
    check_out("--out", &args.out, Out::Dir, &inputs)
}

/// `measure` on clusters of its provider, here.
async fn measure_here(args: &MeasureArgs) -> Result<i32> {
    let variants = args.variants()?;
    let k8s = K8sRelease::parse(&args.k8s_version)?;
    harness::bench::core::rounds::check_repeat(args.repeat)?;
    // A shard is checked before anything is resolved or written.
    if let Some(sh) = args.shard {
        sh.check(args.repeat, args.seed)?;
    }
    check_out_dir(args)?;
    if args.timeout == 0 || args.nodes == Some(0) || args.node_pods == Some(0) {
        return Err(bad_input("--timeout, --nodes and --node-pods must be ≥ 1"));
    }
    if args.record && args.shard.is_some() {
        return Err(bad_input(
            "--record stores a whole run set: run the shards, join them with `harness report merge`, then record the merged result (`bench thor --from DIR --record`)",
        ));
    }
    let root = harness::paths::repo_root(&std::env::current_dir()?);
    let provider = args.target.shape()?;
    if args.nodes.is_some() || args.node_pods.is_some() {
        provider.check(Ask::FakeNodes, "--nodes/--node-pods")?;
    }
    if args.control_plane != Profile::Default {
        provider.check(Ask::ControlPlane, "--control-plane")?;
    }
    if let Some(bin) = args.bins.first() {
        provider.check(Ask::Binaries, &format!("--bin {bin}"))?;
    }
    let queues = (args.kueue || args.kueue_perf.is_some()).then(|| {
        "--kueue/--kueue-perf install Kueue and create cluster-wide queues: on an existing cluster Kueue is the cluster's own; measure a workload that uses it with a command or --apply".to_string()
    });
    harness::lifecycle::target::preflight(&provider, &[None], k8s.minor, queues)?;
    let provider = args.target.provider("")?;
    let mut spec = ClusterSpec::new("measure", k8s.minor);
    spec.nodes = NodeSpec {
        count: args.nodes.unwrap_or(3),
        pods: args.node_pods.unwrap_or(110),
        ..NodeSpec::default()
    };
    spec.control_plane = ControlPlane::of(args.control_plane);
    spec.kueue = (args.kueue || args.kueue_perf.is_some()).then(Default::default);
    let opts = MeasureOptions {
        name: args.name.clone(),
        variants,
        repeat: args.repeat,
        seed: args.seed,
        shard: args.shard,
        spec,
        provider,
        bins: parse_bins(&args.bins)?,
        cluster_prefix: format!("measure-{}", std::process::id()),
        out: args.out.clone(),
        timeout: Duration::from_secs(args.timeout),
        scrape: args.scrape_metrics,
        settle: !args.no_settle,
        allow_failed: args.allow_failed,
    };
    if args.compare || args.record {
        workload::check_name("--name", &args.name)?;
        let root = root.as_deref().ok_or_else(|| {
            bad_input("--compare/--record need the repository (baselines/): run from inside it")
        })?;
        // A missing baseline is said before any run; an existing
        // cluster's release is known only once it is probed.
        if args.compare && opts.provider.starts_clusters() {
            harness::bench::recorded::load(&baseline::path_of(
                root,
                opts.provider.name(),
                k8s.minor,
                &format!("measure-{}", args.name),
                &opts.spec.control_plane.label(),
            ))?;
        }
    }
    let work = measure::measure(&opts);
    let made = Made::Prefixed(&opts.cluster_prefix);
    let load = args.load.map(harness::load::Load::start).transpose()?;
    if let Some(l) = &load {
        eprintln!(
            "harness: {} CPU(s) kept busy beside the runs (--load)",
            l.cores()
        );
    }
    let result = or_tear_down(work, &opts.provider, made).await;
    drop(load);
    let result = match result? {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    finish(args, root, result)
}

/// Write the result and its reports, say what failed, compare and record:
/// the same for a run here and one merged from a cluster's rounds.
fn finish(
    args: &MeasureArgs,
    root: Option<std::path::PathBuf>,
    result: harness::bench::measure::result::MeasureResult,
) -> Result<i32> {
    for p in report::write_all(&result, &args.out)? {
        eprintln!("wrote {}", p.display());
    }
    print!("{}", report::markdown(&result));
    let mut code = 0;
    if result.failed() {
        for r in result.runs.iter().filter(|r| r.exit_code != 0) {
            let failed = harness::bench::measure::apply::failed_of(&r.settled);
            eprintln!(
                "harness: {} round {} exited {}{} (its output: {})",
                r.variant,
                r.round + 1,
                r.exit_code,
                match failed.is_empty() {
                    true => String::new(),
                    false => format!(
                        ": the workload failed: {} ended Failed (--allow-failed measures it as it is)",
                        failed.join(", ")
                    ),
                },
                args.out.join(&r.output).display()
            );
        }
        code = error::EXIT_FAILED;
    }
    for r in result.busy_starts() {
        eprintln!(
            "harness: {} round {}: the cluster was still busy when the window opened (no quiet {} s): its figures hold the cluster's start-up{}",
            r.variant,
            r.round + 1,
            r.quiet_wait.map_or(0.0, |q| q.waited_s).round(),
            if args.compare {
                "; compared anyway, read its verdicts with that in mind"
            } else {
                ""
            }
        );
    }
    if let Some(root) = &root {
        if args.compare {
            let c = policy::compare(
                root,
                &result.figures,
                args.counts_only,
                &args.out,
                harness::bench::recorded::known_mode,
            )?;
            print!("{}", compare_report::compare_markdown(&c));
            let summary = compare_report::summary(&c);
            eprint!("{summary}");
            harness::bench::core::report::files::lead_with(&result.figures, &args.out, &summary)?;
            if code == 0 {
                code = c.exit_code();
            }
        }
        if args.record {
            let path = baseline::path_for(root, &result.figures);
            let what: Vec<String> = result
                .variants
                .iter()
                .map(|(n, w)| format!("{n}: {w}"))
                .collect();
            baseline::record(
                &path,
                &result.figures,
                &format!(
                    "{}{}",
                    harness::bench::measure::result::BASELINE_PREFIX,
                    what.join("; ")
                ),
            )?;
            eprintln!("recorded {}", path.display());
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    /// `measure`'s flags alone, as the CLI parses them.
    #[derive(Parser)]
    struct Measure {
        #[command(flatten)]
        args: super::MeasureArgs,
    }

    fn parse(args: &[&str]) -> super::MeasureArgs {
        let args: Vec<&str> = args.iter().copied().filter(|a| *a != "measure").collect();
        Measure::try_parse_from(args).unwrap().args
    }

    #[test]
    fn exactly_one_workload() {
        let a = parse(&[
            "harness",
            "measure",
            "--",
            "kubectl",
            "create",
            "job",
            "j",
            "--image=x",
        ]);
        let v = a.variants().unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].workload.describe(), "kubectl create job j --image=x");
        let a = parse(&["harness", "measure", "--kueue-perf", "c.yaml"]);
        assert_eq!(
            a.variants().unwrap()[0].workload.describe(),
            "--kueue-perf c.yaml"
        );
        let a = parse(&["harness", "measure", "--apply", "d"]);
        assert_eq!(a.variants().unwrap()[0].workload.describe(), "--apply d");
        for bad in [
            vec!["harness", "measure"],
            vec!["harness", "measure", "--apply", "d", "--", "true"],
            vec!["harness", "measure", "--variant", "a=true", "--", "true"],
            vec!["harness", "measure", "--variant", "a=true"],
        ] {
            let e = parse(&bad).variants().unwrap_err();
            assert_eq!(harness::error::exit_code(&e), 2, "{bad:?}");
        }
        let a = parse(&[
            "harness",
            "measure",
            "--variant",
            "a=true",
            "--variant",
            "b=@dir",
        ]);
        assert_eq!(a.variants().unwrap().len(), 2);
    }

    /// A round's pod runs the same measurement: this run's flags, its
    /// shard from the pod's index, each folder the workload reads at its
    /// path in the ConfigMap; a command variant goes as given.
    #[test]
    fn a_pods_arguments_are_the_runs_with_its_folders_shipped() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("job.yaml"), "kind: Job").unwrap();
        let dir = d.path().display().to_string();
        let a = parse(&[
            "harness",
            "--kubeconfig",
            "/k",
            "--on-cluster",
            "--name",
            "ab",
            "--repeat",
            "4",
            "--nodes",
            "2",
            "--variant",
            "one=kubectl create job a --image=x",
            "--variant",
            &format!("dir=@{dir}"),
            "--allow-failed",
        ]);
        let mut files = harness::bench::on_cluster::inputs::Inputs::default();
        let v = super::pod_args(&a, 11, "/work/out", &mut files).unwrap();
        let s = v.join(" ");
        assert!(
            s.starts_with("measure --name ab --repeat 4 --seed 11 --shard index/4 --out /work/out --k8s-version"),
            "{s}"
        );
        assert!(s.contains("--nodes 2"), "{s}");
        assert!(s.contains("--control-plane default"), "{s}");
        let at = v.iter().position(|x| x == "--variant").unwrap();
        assert_eq!(v[at + 1], "one=kubectl create job a --image=x");
        assert_eq!(v[at + 3], "dir=@/inputs/0");
        assert!(v.ends_with(&["--allow-failed".to_string()]), "{s}");
        assert_eq!(files.files.len(), 1);
        assert_eq!(files.files[0].0, "0/job.yaml");
        // The pod's arguments parse as `measure`'s own (with its --hold).
        // (The pod's index is read from its environment: here, shard 2.)
        let mut again = vec!["harness"];
        again.extend(
            v.iter()
                .skip(1)
                .map(|x| if x == "index/4" { "2/4" } else { x.as_str() }),
        );
        again.extend(["--hold", "60"]);
        let p = parse(&again);
        assert_eq!(p.on_cluster.hold, Some(60));
        assert_eq!(p.variants().unwrap().len(), 2);
    }

    #[test]
    fn on_cluster_refuses_what_a_pod_cannot_run() {
        let e = refused(&[
            "harness",
            "--kubeconfig",
            "/k",
            "--on-cluster",
            "--bin",
            "etcd=/x",
            "--",
            "true",
        ]);
        assert!(
            e.contains("drop --provider, --real-node, --shard and --bin"),
            "{e}"
        );
        let e = refused(&[
            "harness",
            "--kubeconfig",
            "/k",
            "--on-cluster",
            "--apply",
            "/nonexistent/manifests",
        ]);
        assert!(e.contains("--apply /nonexistent/manifests"), "{e}");
        let e = refused(&[
            "harness",
            "--kubeconfig",
            "/k",
            "--on-cluster",
            "--push",
            "no-registry",
            "--",
            "true",
        ]);
        assert!(e.contains("--push \"no-registry\""), "{e}");
    }

    /// What `measure` says of flags that do not fit the provider: exit 2,
    /// naming the flag, before any cluster is reached.
    fn refused(args: &[&str]) -> String {
        let a = parse(args);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let e = rt.block_on(super::measure(&a)).unwrap_err();
        assert_eq!(harness::error::exit_code(&e), 2, "{e:#}");
        format!("{e:#}")
    }

    #[test]
    fn existing_flags_belong_to_the_existing_provider() {
        let e = refused(&["harness", "--kubeconfig", "/nonexistent", "--", "true"]);
        assert!(e.contains("are for --provider existing"), "{e}");
        let e = refused(&["harness", "--yes", "--", "true"]);
        assert!(e.contains("are for --provider existing"), "{e}");
        let e = refused(&["harness", "--provider", "existing", "--", "true"]);
        assert!(e.contains("needs --kubeconfig"), "{e}");
        for (flag, says) in [
            (&["--kueue"][..], "--kueue/--kueue-perf"),
            (&["--nodes", "5"][..], "--nodes/--node-pods"),
            (&["--control-plane", "tuned"][..], "--control-plane"),
        ] {
            let mut args = vec!["harness", "--provider", "existing", "--kubeconfig", "/k"];
            args.extend(flag);
            args.extend(["--", "true"]);
            let e = refused(&args);
            assert!(e.contains(says), "{flag:?}: {e}");
        }
    }
}
