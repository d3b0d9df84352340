//! `harness bench answer`: run the answer matrix (baselines/answer.yaml)
//! — each set one `bench thor` run set, recorded as its baseline file —
//! on this machine, as one shard of every set, or as Jobs on a cluster.
//! Each set is handed to `bench thor` as the arguments a user would type
//! (printed first), so the matrix adds no second way to run a benchmark.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Parser};
use harness::bench::core::shard::Shard;
use harness::bench::thor::answer::{self, Set};
use harness::error::bad_input;
use harness::output::{Out, check_out};
use harness::signal;

use crate::cli::args::parse_shard;
use crate::cli::thor::{BenchThorArgs, bench_thor};

#[derive(Args, Debug)]
pub struct BenchAnswerArgs {
    /// The answer matrix.
    #[arg(long, default_value = "baselines/answer.yaml")]
    pub matrix: PathBuf,
    /// Only the sets whose name is PATTERN, or has each of its words
    /// ("smoke kind", "1.36", "xlarge"). Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub only: Vec<String>,
    /// Only the sets whose baseline file is not recorded yet.
    #[arg(long)]
    pub missing: bool,
    /// Print each set's `bench thor` command, its baseline file and
    /// whether it is recorded; run nothing.
    #[arg(long)]
    pub plan: bool,
    /// Run shard K of N of every set (each set needs a seed in the
    /// matrix); nothing is recorded: join each set's shards with `harness
    /// report merge`, then `bench thor --from DIR --record`.
    #[arg(long, value_name = "K/N", value_parser = parse_shard, conflicts_with = "on_cluster")]
    pub shard: Option<Shard>,
    /// Run every set's rounds as the pods of an Indexed Job on the
    /// cluster of --kubeconfig (`bench thor --on-cluster`); sets on kind
    /// or a real node cannot run in a pod and are refused.
    #[arg(long, requires = "kubeconfig")]
    pub on_cluster: bool,
    /// With --on-cluster: the cluster's kubeconfig.
    #[arg(long, requires = "on_cluster")]
    pub kubeconfig: Option<PathBuf>,
    /// With --on-cluster: rounds at once.
    #[arg(long, default_value_t = 2, requires = "on_cluster")]
    pub parallel: u32,
    /// With --on-cluster: the image the pods run (`harness image build`).
    #[arg(long, requires = "on_cluster")]
    pub image: Option<String>,
    /// Where each set's reports go: <out>/<set name>/.
    #[arg(long, default_value = "bench-out/answer")]
    pub out: PathBuf,
}

/// `bench thor`'s own parser, to read the arguments a set stands for.
#[derive(Parser, Debug)]
#[command(name = "harness bench thor")]
struct ThorArgv {
    #[command(flatten)]
    args: BenchThorArgs,
}

/// The `bench thor` arguments of one set.
fn argv(a: &BenchAnswerArgs, root: &Path, set: &Set) -> Result<Vec<String>> {
    let mut v: Vec<String> = vec![
        "--scenario".into(),
        set.scenario_file(root)
            .strip_prefix(root)
            .unwrap_or(&set.scenario_file(root))
            .display()
            .to_string(),
        "--repeat".into(),
        set.repeat.to_string(),
        "--out".into(),
        a.out
            .join(set.name(root).replace(' ', "-"))
            .display()
            .to_string(),
    ];
    if set.provider != "local" {
        v.extend(["--provider".into(), set.provider.clone()]);
    }
    if set.real_node {
        v.push("--real-node".into());
    }
    if let Some(m) = &set.k8s_minor {
        // Quoted: `--set` reads its value as YAML, where 1.36 is a number.
        v.extend(["--set".into(), format!("cluster.k8sMinor={m:?}")]);
    }
    match (set.seed, a.shard) {
        (Some(s), _) => v.extend(["--seed".into(), s.to_string()]),
        (None, Some(_)) => {
            return Err(bad_input(format!(
                "--shard: set {:?} (sets[{}]) has no seed in {}; every shard orders the rounds from the same seed",
                set.name(root),
                set.at,
                a.matrix.display()
            )));
        }
        (None, None) => {}
    }
    if let Some(sh) = a.shard {
        v.extend(["--shard".into(), format!("{}/{}", sh.k, sh.n)]);
    } else {
        v.push("--record".into());
    }
    if a.on_cluster {
        if set.provider != "local" || set.real_node {
            return Err(bad_input(format!(
                "--on-cluster: set {:?} runs on {}; only the local provider's sets without a real node run inside a pod (--only picks the others out)",
                set.name(root),
                if set.real_node {
                    "a real node"
                } else {
                    &set.provider
                }
            )));
        }
        v.extend([
            "--on-cluster".into(),
            "--parallel".into(),
            a.parallel.to_string(),
        ]);
        if let Some(k) = &a.kubeconfig {
            v.extend(["--kubeconfig".into(), k.display().to_string()]);
        }
        if let Some(i) = &a.image {
            v.extend(["--image".into(), i.clone()]);
        }
    }
    Ok(v)
}

/// A set's `bench thor` arguments, parsed by `bench thor`'s parser, its
/// scenario read as the run will read it (overrides applied): what is
/// wrong with any set is found before the first one runs.
fn prepare(a: &BenchAnswerArgs, root: &Path, s: &Set) -> Result<(Vec<String>, BenchThorArgs)> {
    let v = argv(a, root, s)?;
    let parsed = ThorArgv::try_parse_from(
        std::iter::once("harness bench thor".to_string()).chain(v.iter().cloned()),
    )
    .map_err(|e| bad_input(format!("set {:?}: {e}", s.name(root))))?;
    let overrides = harness::workload::thor::overrides::parse_overrides(&parsed.args.overrides)?;
    harness::workload::thor::scenario::load_with(&root.join(&parsed.args.scenario), &overrides)
        .map_err(|e| bad_input(format!("set {:?}: {e:#}", s.name(root))))?;
    Ok((v, parsed.args))
}

pub async fn run(a: &BenchAnswerArgs) -> Result<i32> {
    let root = harness::paths::repo_root(&std::env::current_dir()?).ok_or_else(|| {
        bad_input("bench answer: run it inside the repository (suites/thor/ and baselines/ are read from there)")
    })?;
    check_out("--out", &a.out, Out::Dir, &[("--matrix", &a.matrix)])?;
    let matrix = answer::load(&root, &a.matrix)?;
    let mut sets = answer::select(&root, matrix.sets(), &a.only)?;
    if a.missing {
        let mut left = Vec::new();
        for s in sets {
            if !s.recorded(&root)? {
                left.push(s);
            }
        }
        sets = left;
    }
    // Every set's arguments are read before the first runs: a bad one
    // stops the matrix before it costs anything.
    let mut planned = Vec::new();
    for s in &sets {
        let (v, args) = prepare(a, &root, s)?;
        planned.push((s, v, args));
    }
    if planned.is_empty() {
        eprintln!("harness: bench answer: no set to run (every one picked is recorded)");
        return Ok(0);
    }
    let mut code = 0;
    let started = Instant::now();
    let mut took = Vec::new();
    for (i, (s, v, args)) in planned.iter().enumerate() {
        let path = s.baseline_path(&root)?;
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let state = if s.recorded(&root)? {
            "recorded"
        } else {
            "not recorded"
        };
        let line = format!("harness bench thor {}", v.join(" "));
        if a.plan {
            println!(
                "{} ({rel}, {state}, {} rounds): {line}",
                s.name(&root),
                s.repeat
            );
            continue;
        }
        eprintln!(
            "harness: set {}/{} {}: {line}",
            i + 1,
            planned.len(),
            s.name(&root)
        );
        let t = Instant::now();
        let c = match bench_thor(args).await {
            Ok(c) => c,
            // Said as every command says an error; the matrix goes on.
            Err(e) => crate::cli::errors::report(&e.context(format!("set {}", s.name(&root)))),
        };
        took.push((s.name(&root), t.elapsed(), c));
        // Interrupted: what the set started is torn down; the matrix stops.
        if c == signal::EXIT_INTERRUPTED || c == signal::EXIT_TERMINATED {
            return Ok(c);
        }
        code = code.max(c);
    }
    if !a.plan {
        for (name, t, c) in &took {
            eprintln!("harness: {name}: {} s, exit {c}", t.as_secs());
        }
        eprintln!(
            "harness: bench answer: {} in {} s",
            match took.len() {
                1 => "1 set".to_string(),
                n => format!("{n} sets"),
            },
            started.elapsed().as_secs()
        );
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::error;

    fn args(extra: &[&str]) -> BenchAnswerArgs {
        #[derive(Parser)]
        struct W {
            #[command(flatten)]
            a: BenchAnswerArgs,
        }
        W::try_parse_from(std::iter::once("answer").chain(extra.iter().copied()))
            .unwrap()
            .a
    }

    fn set(provider: &str, real_node: bool, seed: Option<u64>) -> Set {
        Set {
            scenario: "smoke".into(),
            provider: provider.into(),
            k8s_minor: Some("1.36".into()),
            real_node,
            repeat: 3,
            seed,
            at: 0,
        }
    }

    fn root() -> PathBuf {
        harness::paths::repo_root(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn a_set_is_the_bench_thor_command_a_user_would_type() {
        let r = root();
        let v = argv(&args(&[]), &r, &set("kind", false, Some(7))).unwrap();
        assert_eq!(
            v.join(" "),
            "--scenario suites/thor/smoke.yaml --repeat 3 --out bench-out/answer/smoke-kind-1.36 --provider kind --set cluster.k8sMinor=\"1.36\" --seed 7 --record"
        );
        // The command bench thor parses, recording a minor's override.
        let parsed = ThorArgv::try_parse_from(std::iter::once("x".to_string()).chain(v)).unwrap();
        assert!(parsed.args.record);
        let v = argv(&args(&["--shard", "2/3"]), &r, &set("local", true, Some(7))).unwrap();
        assert!(
            v.join(" ")
                .ends_with("--real-node --set cluster.k8sMinor=\"1.36\" --seed 7 --shard 2/3"),
            "{v:?}"
        );
    }

    #[test]
    fn every_set_of_the_repositorys_matrix_reads_as_its_run_will() {
        let r = root();
        let m = answer::load(&r, &r.join("baselines/answer.yaml")).unwrap();
        for s in m.sets() {
            let (_, a) = prepare(&args(&[]), &r, &s).unwrap();
            let o = harness::workload::thor::overrides::parse_overrides(&a.overrides).unwrap();
            let sc =
                harness::workload::thor::scenario::load_with(&r.join(&a.scenario), &o).unwrap();
            assert_eq!(
                Some(sc.cluster.k8s_minor),
                s.minor(&r).ok(),
                "{}",
                s.name(&r)
            );
        }
    }

    #[test]
    fn what_a_set_cannot_do_is_refused_before_anything_runs() {
        let r = root();
        let e = argv(&args(&["--shard", "1/2"]), &r, &set("local", false, None)).unwrap_err();
        assert_eq!(error::exit_code(&e), error::EXIT_USAGE);
        assert!(format!("{e:#}").contains("has no seed"), "{e:#}");
        let on = args(&["--on-cluster", "--kubeconfig", "k"]);
        for s in [set("kind", false, Some(1)), set("local", true, Some(1))] {
            let e = argv(&on, &r, &s).unwrap_err();
            assert_eq!(error::exit_code(&e), error::EXIT_USAGE);
        }
        let v = argv(&on, &r, &set("local", false, Some(1))).unwrap();
        assert!(
            v.join(" ")
                .ends_with("--record --on-cluster --parallel 2 --kubeconfig k"),
            "{v:?}"
        );
    }
}
