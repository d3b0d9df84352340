//! `harness measure` on the local provider, as a user runs it: a kubectl
//! command's requests attributed to kubectl's identity and what follows
//! to the Job controller and the scheduler; `--apply` of the sample
//! folder (a JobSet and a Kueue-queued Job) waiting until both finished;
//! a failing command as a result with its exit code; an A/B of a Job of
//! 1 vs 10 completions judged by the statistics rule. Expectations come
//! from what the workload asks for, not from recorded counts.

use std::time::Duration;

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use anyhow::{Context, Result, ensure};
use harness::bench::measure::result::MeasureResult;
use harness::bench::measure::workload::{Variant, Workload};
use harness::bench::measure::{MeasureOptions, measure};
use harness::stats::Direction;
use harness::tools::Component;
use libtest_mimic::Arguments;

const JOB_CONTROLLER: &str =
    "system:serviceaccount:kube-system:job-controller (kube-controller-manager)";
const SCHEDULER: &str = "system:kube-scheduler (kube-scheduler)";
const KUBECTL: &str = "workload (kubectl)";

fn options(
    prefix: &str,
    variants: Vec<Variant>,
    repeat: u32,
) -> Result<(MeasureOptions, tempfile::TempDir)> {
    let out = tempfile::tempdir()?;
    let mut spec = crate::test_spec("measure");
    spec.nodes.count = 2;
    Ok((
        MeasureOptions {
            name: prefix.to_string(),
            variants,
            repeat,
            seed: Some(7),
            shard: None,
            spec,
            provider: harness::cluster::Provider::Local { real_node: false },
            bins: Default::default(),
            cluster_prefix: crate::unique_name(&format!("t-{prefix}")),
            out: out.path().to_path_buf(),
            timeout: Duration::from_secs(180),
            scrape: false,
            settle: true,
            allow_failed: false,
        },
        out,
    ))
}

fn run(opts: &MeasureOptions) -> Result<MeasureResult> {
    crate::runtime()?.block_on(measure(opts))
}

pub(crate) fn command(name: &str, argv: &[&str]) -> Variant {
    Variant {
        name: name.into(),
        workload: Workload::Command(argv.iter().map(|s| s.to_string()).collect()),
    }
}

fn count(r: &MeasureResult, variant: &str, client: &str, request: &str) -> u64 {
    r.figures.modes[variant].repeats[0]
        .window
        .api_requests_by_client_request
        .get(client)
        .and_then(|m| m.get(request))
        .copied()
        .unwrap_or(0)
}

/// `kubectl create job hello` as the variant "job".
pub(crate) fn hello_job() -> Variant {
    command(
        "job",
        &[
            "kubectl",
            "create",
            "job",
            "hello",
            "--image=registry.k8s.io/pause:3.10",
        ],
    )
}

/// kubectl creates the Job (and only that: one request of its own); the
/// Job controller creates its pod; the scheduler binds it.
fn kubectl_job_is_attributed_by_identity() -> Result<()> {
    let (opts, out) = options("kubectl-job", vec![hello_job()], 1)?;
    let r = run(&opts)?;
    let run0 = &r.runs[0];
    ensure!(run0.exit_code == 0, "kubectl exited {}", run0.exit_code);
    ensure!(
        count(&r, "job", KUBECTL, "create jobs") == 1,
        "kubectl's requests: {:?}",
        r.figures.modes["job"]
            .result
            .window
            .api_requests_by_client_request
            .get(KUBECTL)
    );
    ensure!(
        count(&r, "job", JOB_CONTROLLER, "create pods") == 1,
        "the Job controller's pod"
    );
    ensure!(
        count(&r, "job", SCHEDULER, "create pods/binding") == 1,
        "the scheduler's binding"
    );
    ensure!(
        run0.settled
            .iter()
            .any(|s| s.starts_with("Job default/hello Complete")),
        "the window closed before the Job completed: {:?}",
        run0.settled
    );
    let m = &r.figures.modes["job"].result;
    ensure!(m.pods_created == 1, "pods created {}", m.pods_created);
    ensure!(
        m.window.harness_requests > 0,
        "the harness's own requests are counted apart"
    );
    ensure!(
        !m.window
            .api_requests_by_client
            .keys()
            .any(|c| c.starts_with("admin")),
        "the harness's identity among the clients: {:?}",
        m.window.api_requests_by_client.keys()
    );
    // The reports name kubectl's identity.
    harness::bench::measure::report::write_all(&r, out.path())?;
    let md = std::fs::read_to_string(out.path().join("report.md")).context("report.md")?;
    ensure!(md.contains(KUBECTL), "report.md does not name {KUBECTL}");
    ensure!(out.path().join(&run0.output).join("stdout.log").is_file());
    let stdout = std::fs::read_to_string(out.path().join(&run0.output).join("stdout.log"))?;
    ensure!(
        stdout.contains("job.batch/hello created"),
        "kubectl's output: {stdout:?}"
    );
    Ok(())
}

/// `--apply` of suites/measure/manifests: a JobSet and a Kueue-queued
/// Job; the window closes only once both finished.
fn apply_waits_for_the_jobset_and_the_queued_job() -> Result<()> {
    let dir = crate::repo_root().join("suites/measure/manifests");
    let v = Variant {
        name: "sample".into(),
        workload: Workload::Apply(dir),
    };
    let (mut opts, _out) = options("apply", vec![v], 1)?;
    opts.spec.kueue = Some(Default::default());
    let r = run(&opts)?;
    let run0 = &r.runs[0];
    ensure!(run0.exit_code == 0, "exit {}", run0.exit_code);
    for want in [
        "JobSet measure-sample/sample Completed",
        "Job measure-sample/queued Complete",
    ] {
        ensure!(
            run0.settled.iter().any(|s| s == want),
            "{want}: {:?}",
            run0.settled
        );
    }
    let m = &r.figures.modes["sample"].result;
    // 1 leader + 3 workers + 2 queued pods.
    ensure!(m.pods_created == 6, "pods created {}", m.pods_created);
    ensure!(
        count(
            &r,
            "sample",
            "kueue-controller (kueue)",
            "patch workloads/status"
        ) + count(
            &r,
            "sample",
            "kueue-controller (kueue)",
            "update workloads/status"
        ) >= 1,
        "Kueue admitted nothing: {:?}",
        m.window
            .api_requests_by_client_request
            .get("kueue-controller (kueue)")
    );
    ensure!(m.window.objects_created.get("jobsets") == Some(&1));
    Ok(())
}

/// A command that fails is a result: its exit code kept, no error.
fn a_failing_command_is_a_result() -> Result<()> {
    let v = command("fails", &["sh", "-c", "echo no >&2; exit 7"]);
    let (opts, out) = options("fails", vec![v], 1)?;
    let r = run(&opts)?;
    ensure!(r.runs[0].exit_code == 7, "exit {}", r.runs[0].exit_code);
    ensure!(r.failed());
    let err = std::fs::read_to_string(out.path().join(&r.runs[0].output).join("stderr.log"))?;
    ensure!(err == "no\n", "stderr {err:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("result.json"))?)?;
    ensure!(
        json["runs"][0]["exit_code"] == 7,
        "result.json: {}",
        json["runs"][0]
    );
    Ok(())
}

/// A Job that ends Failed is the workload's failure (exit 1, named),
/// unless `--allow-failed`: its pods can never be placed (a node selector
/// no node has), so its active deadline fails it.
fn a_failed_job_is_the_workloads_failure() -> Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: doomed}\nspec:\n  backoffLimit: 0\n  activeDeadlineSeconds: 3\n  template:\n    spec:\n      restartPolicy: Never\n      nodeSelector: {harness.test/none: \"none\"}\n      containers: [{name: c, image: busybox}]\n",
    )?;
    let v = Variant {
        name: "doomed".into(),
        workload: Workload::Apply(dir.path().to_path_buf()),
    };
    let (mut opts, out) = options("doomed", vec![v], 1)?;
    let r = run(&opts)?;
    let run0 = &r.runs[0];
    ensure!(run0.exit_code == 1 && r.failed(), "exit {}", run0.exit_code);
    ensure!(
        run0.settled.iter().any(|s| s.ends_with("/doomed Failed")),
        "{:?}",
        run0.settled
    );
    let err = std::fs::read_to_string(out.path().join(&run0.output).join("stderr.log"))?;
    ensure!(
        err.contains("the workload failed: Job ") && err.contains("/doomed"),
        "stderr {err:?}"
    );
    opts.allow_failed = true;
    opts.cluster_prefix = crate::unique_name("t-doomed-allowed");
    let r = run(&opts)?;
    ensure!(
        r.runs[0].exit_code == 0 && !r.failed(),
        "--allow-failed: exit {}",
        r.runs[0].exit_code
    );
    // A fresh cluster went quiet before the window opened, and said so.
    let q = r.runs[0].quiet_wait.context("no quiet wait recorded")?;
    ensure!(q.quiet && q.waited_s >= 2.0, "{q:?}");
    Ok(())
}

/// 1 vs 10 completions, interleaved over 3 rounds: ten's pods and
/// requests are judged higher, with the interval excluding 1.
fn one_vs_ten_completions_differ_significantly() -> Result<()> {
    let job = |n: u32| {
        format!(
            "kubectl create job j --image=registry.k8s.io/pause:3.10 --dry-run=client -o json | sed 's/\"template\"/\"completions\": {n}, \"parallelism\": {n}, \"template\"/' | kubectl apply -f -"
        )
    };
    let variants = vec![
        harness::bench::measure::workload::parse_variant(&format!("one={}", job(1)))?,
        harness::bench::measure::workload::parse_variant(&format!("ten={}", job(10)))?,
    ];
    let (opts, _out) = options("ab", variants, 3)?;
    let r = run(&opts)?;
    ensure!(r.runs.len() == 6 && !r.failed(), "runs {:?}", r.runs);
    let ten = &r.figures.modes["ten"];
    ensure!(
        ten.result.pods_created == 10,
        "ten's pods {}",
        ten.result.pods_created
    );
    ensure!(r.figures.modes["one"].result.pods_created == 1);
    for metric in ["pods_created", "api_requests_total", "etcd_writes_total"] {
        let j = ten
            .vs_reference
            .get(metric)
            .with_context(|| format!("no ratio for {metric}"))?;
        ensure!(
            j.verdict == Direction::Higher && j.ratio.ci_low > 1.0,
            "{metric}: {j:?}"
        );
    }
    Ok(())
}

/// A/A, and a seeded regression beside it: the same command as two
/// variants and a third that also polls its Job, interleaved over 3 rounds
/// (the default), judged as an A/B. Family-wise (Holm over every metric with a
/// p-value) no metric differs; each metric's own verdicts are printed, so
/// a false alarm Holm does not keep is seen, not hidden. The family must
/// be large enough that passing is not judging nothing: at least 10 (the
/// committed 1-vs-10 A/B judged 20 metrics of this kind of workload).
/// The polls are caught family-wise on the polling client's requests, and
/// no other client is named as having moved.
fn unchanged_code_is_judged_no_different_and_a_seeded_poll_is_named() -> Result<()> {
    let job = "kubectl create job j --image=registry.k8s.io/pause:3.10 --dry-run=client -o json | sed 's/\"template\"/\"completions\": 3, \"parallelism\": 3, \"template\"/' | kubectl apply -f -";
    // The seeded regression: the same Job, and a client that polls it
    // (as HPCC's agent polls its Jobs) EXTRA_POLLS times more.
    let polls = format!(
        "{job} && for i in $(seq {EXTRA_POLLS}); do kubectl get job j -o name >/dev/null; done"
    );
    let variants = vec![
        harness::bench::measure::workload::parse_variant(&format!("a={job}"))?,
        harness::bench::measure::workload::parse_variant(&format!("b={job}"))?,
        harness::bench::measure::workload::parse_variant(&format!("polls={polls}"))?,
    ];
    let (opts, _out) = options("aa", variants, 3)?;
    let r = run(&opts)?;
    ensure!(r.runs.len() == 9 && !r.failed(), "runs {:?}", r.runs);
    let family_of = |mode: &str| {
        let m = &r.figures.modes[mode];
        let family = harness::stats::holm(m.vs_reference.iter().map(|(k, j)| (k.as_str(), j)));
        let own: Vec<String> = m
            .vs_reference
            .iter()
            .filter(|(_, j)| j.verdict != Direction::Same)
            .map(|(k, j)| format!("{k} {}", j.cell()))
            .collect();
        eprintln!("{mode} ÷ a: {} Each on its own: {own:?}", family.sentence());
        family
    };
    let aa = family_of("b");
    ensure!(
        aa.judged >= 10,
        "only {} metrics had a p-value: the A/A judged too little to say anything",
        aa.judged
    );
    ensure!(aa.differ.is_empty(), "A/A: {}", aa.sentence());
    // The regression is caught family-wise — on the total or on the
    // polling client's own requests, whichever Holm keeps (in CI's run of
    // f5b4ea7 the client was kept and the total, noisier beside other
    // trials, was not; here the other way round) — and the one client
    // named, family-wise or behind the total, is the one that polled.
    let seeded = family_of("polls");
    let total = "api_requests_total".to_string();
    let client = format!("api_requests_by_client.{KUBECTL}");
    ensure!(
        seeded.differ.contains(&total) || seeded.differ.contains(&client),
        "the extra polls were not caught family-wise: {}",
        seeded.sentence()
    );
    let others: Vec<&String> = seeded
        .differ
        .iter()
        .filter(|m| m.starts_with("api_requests_by_client.") && **m != client)
        .collect();
    ensure!(
        others.is_empty(),
        "clients that did not poll named as moved: {others:?}"
    );
    let behind =
        harness::bench::core::behind::behind(&r.figures.modes["polls"], &r.figures.modes["a"]);
    let said: Vec<String> = behind.iter().map(|b| b.sentence()).collect();
    eprintln!("{}", said.join("\n"));
    let named: Vec<&str> = behind
        .iter()
        .filter(|b| b.total == total)
        .flat_map(|b| b.parts.iter().map(|p| p.name.as_str()))
        .collect();
    // A total that differs on its own names the one client behind it.
    let total_moved = behind.iter().any(|b| b.total == total);
    ensure!(
        !total_moved || named == [KUBECTL],
        "behind the polls' total, named {named:?} (want only {KUBECTL}): {said:?}"
    );
    Ok(())
}

/// The seeded regression's extra requests: above the 30-request floor of
/// a client's count (`bench::core::figures`' CLIENT_FLOOR), so it can be
/// judged.
const EXTRA_POLLS: u32 = 40;

/// Rounds at scale, end to end on this machine, through the scripts the
/// rounds workflow runs (ci/rounds-shard.sh, ci/rounds-merge.sh) and the
/// harness binary: a 2-round A/B measured as its two shards (`--shard
/// 1/2`, `--shard 2/2`, one seed), each shard's out dir a run set of its
/// own, joined by `report merge` into the run set one run makes — the
/// seed's round order, every variant's runs in it, the ratio judged over
/// both rounds, no round lost.
fn shards_merge_into_one_run_set() -> Result<()> {
    let harness = crate::harness_cli().map_err(anyhow::Error::msg)?;
    let root = crate::repo_root();
    let out = tempfile::tempdir()?;
    let job = |n: u32| {
        format!(
            "kubectl create job j --image=registry.k8s.io/pause:3.10 --dry-run=client -o json | sed 's/\"template\"/\"completions\": {n}, \"parallelism\": {n}, \"template\"/' | kubectl apply -f -"
        )
    };
    let script = |name: &str, args: &[String]| -> Result<()> {
        let o = std::process::Command::new("bash")
            .arg(root.join("ci").join(name))
            .args(args)
            .env("HARNESS", &harness)
            .env("HARNESS_NO_PROGRESS", "1")
            .current_dir(&root)
            .output()?;
        ensure!(
            o.status.success(),
            "ci/{name} {args:?}: {}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        Ok(())
    };
    let shards = out.path().join("shards");
    for k in 1..=2 {
        let mut args: Vec<String> = vec![k.to_string(), "2".into(), shards.display().to_string()];
        args.extend(
            [
                "measure", "--name", "shard", "--repeat", "2", "--seed", "11", "--nodes", "2",
            ]
            .map(String::from),
        );
        args.extend(["--variant".into(), format!("one={}", job(1))]);
        args.extend(["--variant".into(), format!("ten={}", job(3))]);
        script("rounds-shard.sh", &args)?;
    }
    let merged = out.path().join("merged");
    script(
        "rounds-merge.sh",
        &[
            merged.display().to_string(),
            shards.join("shard-1").display().to_string(),
            shards.join("shard-2").display().to_string(),
        ],
    )?;
    let harness::bench::saved::Saved::Measure(m) = harness::bench::saved::read(&merged, "test")?
    else {
        anyhow::bail!("the merge is not a measure result");
    };
    let names = vec!["one".to_string(), "ten".to_string()];
    let order: Vec<Vec<String>> = harness::bench::core::rounds::plan(&names, 2, 11, None)
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let st = m.figures.statistics.as_ref().context("statistics")?;
    ensure!(
        st.rounds == order,
        "merged order {:?}, the seed's {order:?}",
        st.rounds
    );
    ensure!(st.lost_rounds.is_empty() && st.merged.len() == 2, "{st:?}");
    ensure!(
        m.runs.iter().map(|r| r.round).collect::<Vec<_>>() == [0, 0, 1, 1],
        "runs {:?}",
        m.runs
    );
    for (variant, pods) in [("one", 1), ("ten", 3)] {
        let s = &m.figures.modes[variant];
        ensure!(s.repeats.len() == 2, "{variant}: {} runs", s.repeats.len());
        ensure!(
            s.repeats.iter().all(|r| r.pods_created == pods),
            "{variant}: pods {:?}",
            s.repeats.iter().map(|r| r.pods_created).collect::<Vec<_>>()
        );
    }
    let j = m.figures.modes["ten"]
        .vs_reference
        .get("pods_created")
        .context("no ratio of pods over the merged rounds")?;
    // The geometric mean of the rounds' ratios, exp(mean(ln 3, ln 3)):
    // 3 to the last bit or one past it (CI's run of 21979e8 gave
    // 3.0000000000000004).
    ensure!(
        j.ratio.n == 2 && (j.ratio.ratio - 3.0).abs() < 1e-9,
        "{j:?}"
    );
    let md = std::fs::read_to_string(merged.join("report.md"))?;
    ensure!(md.contains("Merged from 2 shards"), "{md}");
    Ok(())
}

/// Kueue's scheduling-performance runner under `measure --kueue-perf`
/// with our small generator config: its own figures are read (every
/// workload it generated admitted and finished), and the harness counts
/// its requests under its own identity beside Kueue's.
fn kueue_perf_runner_runs_and_its_figures_are_read() -> Result<()> {
    let config = crate::repo_root().join("suites/measure/kueue-perf/small.yaml");
    let v = Variant {
        name: "kueue-small".into(),
        workload: Workload::KueuePerf(config.clone()),
    };
    let (mut opts, _out) = options("kueue-perf", vec![v], 1)?;
    opts.spec.kueue = Some(Default::default());
    let r = run(&opts)?;
    ensure!(
        r.runs[0].exit_code == 0,
        "the runner exited {}",
        r.runs[0].exit_code
    );
    // What the config asks for: cohorts × queues × workloads per queue.
    let doc = harness::yaml::documents(&std::fs::read_to_string(&config)?, "small.yaml")?;
    let mut expected = 0;
    for c in doc[0]["cohorts"].as_array().context("cohorts")? {
        for q in c["queuesSets"].as_array().context("queuesSets")? {
            for w in q["workloadsSets"].as_array().context("workloadsSets")? {
                expected += c["count"].as_u64().unwrap_or(0)
                    * q["count"].as_u64().unwrap_or(0)
                    * w["count"].as_u64().unwrap_or(0)
                    * w["workloads"].as_array().map_or(0, |x| x.len() as u64);
            }
        }
    }
    let f = r.kueue_runner.first().context("no runner figures read")?;
    let counted: u64 = f.workload_classes.values().map(|c| c.count).sum();
    ensure!(
        counted == expected,
        "the runner counted {counted} workloads, the config makes {expected}"
    );
    ensure!(
        f.workload_classes
            .values()
            .all(|c| c.average_time_to_finish_ms >= c.average_time_to_admission_ms),
        "{f:?}"
    );
    let m = &r.figures.modes["kueue-small"].result;
    let runner = m
        .window
        .api_requests_by_client_request
        .get("workload (kueue-perf-runner)");
    let creates = runner
        .and_then(|x| x.get("create workloads"))
        .copied()
        .unwrap_or(0);
    ensure!(
        creates == expected,
        "the runner's Workload creates: {creates} of {expected}"
    );
    ensure!(
        m.window
            .api_requests_by_client
            .get("kueue-controller (kueue)")
            .copied()
            .unwrap_or(0)
            > 0,
        "Kueue made no request"
    );
    Ok(())
}

pub fn suite(_args: &Arguments) -> Suite {
    let cluster = || default_cluster_and(&[]);
    let kueue = || default_cluster_and(&[Component::Kueue]);
    let perf = || default_cluster_and(&[Component::Kueue, Component::KueuePerfRunner]);
    Suite::new(
        "measure",
        vec![
            Test::of(
                "kubectl_job_is_attributed_by_identity",
                kubectl_job_is_attributed_by_identity,
            )
            .needs(cluster()),
            Test::of(
                "apply_waits_for_the_jobset_and_the_queued_job",
                apply_waits_for_the_jobset_and_the_queued_job,
            )
            .needs(kueue()),
            Test::of(
                "a_failing_command_is_a_result",
                a_failing_command_is_a_result,
            )
            .needs(cluster()),
            Test::of(
                "a_failed_job_is_the_workloads_failure",
                a_failed_job_is_the_workloads_failure,
            )
            .needs(cluster()),
            Test::of(
                "one_vs_ten_completions_differ_significantly",
                one_vs_ten_completions_differ_significantly,
            )
            .needs(cluster()),
            Test::of(
                "unchanged_code_is_judged_no_different_and_a_seeded_poll_is_named",
                unchanged_code_is_judged_no_different_and_a_seeded_poll_is_named,
            )
            .needs(cluster()),
            Test::of(
                "shards_merge_into_one_run_set",
                shards_merge_into_one_run_set,
            )
            .needs(cluster()),
            Test::of(
                "kueue_perf_runner_runs_and_its_figures_are_read",
                kueue_perf_runner_runs_and_its_figures_are_read,
            )
            .needs(perf()),
        ],
    )
}
