//! Rounds at scale for real: `bench thor --on-cluster` on a fresh kind
//! cluster of two workers (the rounds profile), through the harness
//! binary as a user runs it — the image built here and loaded into the
//! nodes, a 2-round smoke of baseline and jobset as an Indexed Job of 2
//! pods at once, each round with the local provider inside its pod, each
//! pod's out dir brought back and the shards merged. The merged run set's
//! exact counts (pods, containers, objects, the Thor identity's writes)
//! are the recorded local baseline's (`--from … --compare --counts-only`),
//! and nothing of the run is left on the cluster. Then `measure
//! --on-cluster` on the same cluster and image (already in the nodes: not
//! loaded again): a 2-round A/B of a command and a folder of manifests
//! (shipped in a ConfigMap), merged — each run's pods exactly what its
//! workload makes — and again nothing left.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use harness::cluster::Cluster;
use harness::cluster::kind::{KindImages, KindSpec, config};
use harness::lifecycle::KindUpOptions;

/// The run set on the cluster: a smoke of baseline and jobset.
const SMOKE: [&str; 6] = [
    "bench",
    "thor",
    "--scenario",
    "suites/thor/smoke.yaml",
    "--modes",
    "baseline,jobset",
];

pub fn rounds_as_an_indexed_job_on_kind(minor: &'static str) -> Result<()> {
    let harness = crate::harness_cli().map_err(anyhow::Error::msg)?;
    let root = crate::repo_root();
    let name = crate::unique_name("t-krounds");
    let cluster = crate::runtime()?.block_on(harness::lifecycle::up_kind(&KindUpOptions {
        spec: KindSpec {
            name: name.clone(),
            config: config::default_config(&root, "rounds", minor)?,
            k8s_version: Some(minor.to_string()),
            wait: Duration::from_secs(300),
            images: KindImages::Auto,
        },
        kueue: false,
        kwok: false,
        timeout: Duration::from_secs(300),
    }))?;
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let r = (|| -> Result<()> {
        let out = tempfile::tempdir()?;
        let run = |args: &[&str]| -> Result<std::process::Output> {
            let at = std::time::Instant::now();
            let o = std::process::Command::new(&harness)
                .args(args)
                .env("HARNESS_NO_PROGRESS", "1")
                .current_dir(&root)
                .output()?;
            eprintln!(
                "harness {} {}: {} in {:.1} s",
                args[0],
                args[1],
                o.status,
                at.elapsed().as_secs_f64()
            );
            Ok(o)
        };
        // 2 rounds with seed 5 as 2 pods at once, each collected.
        let kc = kubeconfig.display().to_string();
        let on_cluster = |args: &[&str], out: &std::path::Path| -> Result<String> {
            let out = out.display().to_string();
            let mut all = args.to_vec();
            all.extend([
                "--repeat",
                "2",
                "--seed",
                "5",
                "--on-cluster",
                "--kubeconfig",
            ]);
            all.extend([kc.as_str(), "--parallel", "2", "--out", out.as_str()]);
            let o = run(&all)?;
            let log = String::from_utf8_lossy(&o.stderr).into_owned();
            ensure!(
                o.status.success(),
                "{} {} --on-cluster: {}\n{log}",
                args[0],
                args[1],
                o.status
            );
            for k in 1..=2 {
                ensure!(
                    log.contains(&format!("round {k} of 2 collected")),
                    "round {k} was not collected:\n{log}"
                );
            }
            Ok(log)
        };
        let merged = out.path().join("merged");
        on_cluster(&SMOKE, &merged)?;
        let r = harness::bench::thor::result::ThorResult::read(&merged, "test")?;
        let st = r.statistics.as_ref().context("statistics")?;
        ensure!(
            st.merged.len() == 2 && st.lost_rounds.is_empty() && st.rounds.len() == 2,
            "{st:?}"
        );
        ensure!(r.provider == "local", "each round ran {}", r.provider);
        let cmp = out.path().join("compare");
        let (merged_dir, cmp_dir) = (merged.display().to_string(), cmp.display().to_string());
        let mut args = SMOKE.to_vec();
        args.extend([
            "--from",
            &merged_dir,
            "--compare",
            "--counts-only",
            "--out",
            &cmp_dir,
        ]);
        let o = run(&args)?;
        let md = std::fs::read_to_string(cmp.join("compare.md")).unwrap_or_default();
        let summary = std::fs::read_to_string(cmp.join("compare-summary.md")).unwrap_or_default();
        eprint!("{summary}");
        // No regression; a verdict the machines the baseline holds could not
        // give on this machine (exit 4) is said in the summary, not a failure.
        // The rows judged anything but ok (the whole table is ~300 rows:
        // a log that keeps only its end would show ok rows alone).
        let not_ok: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with('|') && !l.contains("| ok "))
            .collect();
        ensure!(
            o.status.success() || o.status.code() == Some(harness::error::EXIT_UNJUDGED),
            "the merged rounds against the recorded baseline: {}\n{}\n{summary}\nthe rows not ok:\n{}",
            o.status,
            tail(&String::from_utf8_lossy(&o.stderr), 30),
            not_ok.join("\n")
        );
        let exact = md.matches("exact:").count();
        ensure!(
            exact >= 10,
            "{exact} exact counts compared:\n{summary}\nthe rows not ok:\n{}",
            not_ok.join("\n")
        );
        nothing_left(&kubeconfig)?;
        // measure: a command against a folder of manifests, 2 rounds.
        let manifests = out.path().join("manifests");
        std::fs::create_dir_all(&manifests)?;
        std::fs::write(
            manifests.join("job.yaml"),
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: three\n  namespace: default\nspec:\n  completions: 3\n  parallelism: 3\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: registry.k8s.io/pause:3.10\n",
        )?;
        let measured = out.path().join("measured");
        let three = format!("three=@{}", manifests.display());
        let log = on_cluster(
            &[
                "measure",
                "--name",
                "on-cluster",
                "--nodes",
                "2",
                "--variant",
                "one=kubectl create job one --image=registry.k8s.io/pause:3.10",
                "--variant",
                &three,
            ],
            &measured,
        )?;
        // The same image as bench thor's (same binaries and files): its
        // digest tag is in every node already.
        ensure!(
            log.contains("every node has it already"),
            "the image was loaded again:\n{log}"
        );
        let m = match harness::bench::saved::read(&measured, "test")? {
            harness::bench::saved::Saved::Measure(m) => *m,
            _ => anyhow::bail!("the merged measure is not a measure result"),
        };
        let st = m.figures.statistics.as_ref().context("statistics")?;
        ensure!(
            st.merged.len() == 2 && st.lost_rounds.is_empty() && m.runs.len() == 4,
            "{st:?} runs {:?}",
            m.runs
        );
        for (variant, pods) in [("one", 1.0), ("three", 3.0)] {
            let s = m.figures.modes[variant]
                .stats
                .get("pods_created")
                .context("pods_created")?;
            ensure!(
                s.min == pods && s.max == pods,
                "{variant}: pods created {s:?}, want {pods} in each run"
            );
        }
        nothing_left(&kubeconfig)?;
        Ok(())
    })();
    let down = harness::cluster::kind::abandon(&name);
    r?;
    down
}

/// The last `n` lines of `log`.
fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// No namespace of a harness run is left on the cluster of `kubeconfig`
/// (the run's namespace, and its pods, go with the run).
fn nothing_left(kubeconfig: &std::path::Path) -> Result<()> {
    let left: Vec<String> = crate::runtime()?.block_on(async {
        use k8s_openapi::api::core::v1::Namespace;
        // A client of this runtime (the cluster's own was made in the
        // runtime that started it).
        let client = harness::cluster::client::client_from_kubeconfig(kubeconfig).await?;
        let api: kube::Api<Namespace> = kube::Api::all(client);
        let list = api
            .list_metadata(
                &kube::api::ListParams::default()
                    .labels(harness::cluster::existing::labels::RUN_ID_LABEL),
            )
            .await?;
        Ok::<_, anyhow::Error>(
            list.items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect(),
        )
    })?;
    ensure!(left.is_empty(), "namespaces of the run left: {left:?}");
    Ok(())
}
