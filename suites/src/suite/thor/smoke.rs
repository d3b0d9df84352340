//! The Thor benchmark's smoke scenario, both modes, each on a fresh local
//! cluster, then compared with the stored baseline. Assertions come from
//! the templates (what an instance should create) and from identities
//! (who should create it), not from numbers typed in here.

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use anyhow::{Context, Result, ensure};
use harness::bench::core::metric::MetricKind;
use harness::bench::core::policy;
use harness::bench::core::report::{compare as report, files};
use harness::bench::core::verdict::confirm;
use harness::bench::core::verdict::model::{Status, Verdict};
use harness::bench::thor::bench_thor;
use harness::bench::thor::result::{ModeResult, ThorResult};
use harness::tools::Component;
use harness::workload::thor::{self, Mode, ThorParams};
use libtest_mimic::Arguments;

use std::sync::OnceLock;

fn smoke() -> &'static std::result::Result<ThorResult, String> {
    static R: OnceLock<std::result::Result<ThorResult, String>> = OnceLock::new();
    R.get_or_init(|| {
        let rt = crate::runtime().map_err(|e| format!("{e:#}"))?;
        let opts = crate::thor_options(
            "smoke.yaml",
            vec![Mode::Baseline, Mode::Jobset, Mode::JobsetGang],
            crate::unique_name("t-thor"),
        );
        rt.block_on(bench_thor(&opts)).map_err(|e| format!("{e:#}"))
    })
}

fn shape_params(r: &ThorResult) -> ThorParams {
    ThorParams {
        thor_name: "thor".into(),
        job_name: "thor-x-1".into(),
        num_workers: r.shape.num_workers,
        num_workers_per_pod: r.shape.num_workers_per_pod,
        job_version: "v".into(),
        pod_runtime: "1s".into(),
        namespace: "default".into(),
        dns_hostnames: false,
    }
}

/// Pods and containers of one compile Job (the template's own count).
fn compile_shape(r: &ThorResult) -> Result<(u64, u64)> {
    let docs = thor::render(&thor::template::compile_job(), &shape_params(r))?;
    let containers = docs[0]["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map_or(0, |c| c.len() as u64);
    Ok((1, containers))
}

fn pods_and_containers() -> Result<()> {
    let r = smoke().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    let (compile_pods, compile_containers) = compile_shape(r)?;
    for (mode_name, sum) in &r.modes {
        let mode = Mode::parse(mode_name).context("mode")?;
        let shape = thor::shape::shape(mode, &shape_params(r))?;
        let m = &sum.result;
        let n = u64::from(m.instances);
        let c = u64::from(m.compile_jobs);
        ensure!(
            n >= 1 && n <= u64::from(m.graphs),
            "{mode_name}: {n} instances for {} graphs",
            m.graphs
        );
        let per_workunit: u32 = r
            .model
            .get("graphs_per_workunit")
            .and_then(|g| g.parse().ok())
            .unwrap_or(1);
        ensure!(
            m.graphs == m.workunits * per_workunit,
            "{mode_name}: {} graphs run for {} workunits of {per_workunit} graphs",
            m.graphs,
            m.workunits
        );
        ensure!(
            c >= 1 && c <= u64::from(m.workunits),
            "{mode_name}: {c} compile Jobs"
        );
        ensure!(
            m.run.pods_created == n * u64::from(shape.pods) + c * compile_pods,
            "{mode_name}: pods {} ≠ {n} instances × {} + {c} compile pods",
            m.run.pods_created,
            shape.pods
        );
        ensure!(
            m.run.pods_created
                == n * (1 + u64::from(r.shape.num_workers / r.shape.num_workers_per_pod)) + c,
            "{mode_name}: pods = instances × (1 + workers/perPod) + compile Jobs"
        );
        ensure!(
            m.run.containers_created == n * u64::from(shape.containers) + c * compile_containers,
            "{mode_name}: containers {} ≠ {n} × {} + {c} × {compile_containers}",
            m.run.containers_created,
            shape.containers
        );
        ensure!(
            m.run.window.objects_created.get("pods") == Some(&m.run.pods_created),
            "{mode_name}: pod creates {:?}",
            m.run.window.objects_created
        );
    }
    Ok(())
}

/// The Thor identity's requests are what its call list costs: each kubectl
/// call priced by workload::thor::kubectl from the server's discovery, the
/// count read from the audit log. Likewise eclccserver's.
fn thor_identity_costs_what_its_calls_predict() -> Result<()> {
    let r = smoke().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    for (mode, sum) in &r.modes {
        identities_cost_what_their_calls_predict(mode, &sum.result)?;
    }
    Ok(())
}

/// HPCC's two identities' measured requests in one mode's figures are
/// within 3 % of what their call lists predict.
pub(crate) fn identities_cost_what_their_calls_predict(
    mode: &str,
    m: &harness::bench::thor::result::ModeResult,
) -> Result<()> {
    for (who, measured, predicted) in [
        (
            "thor-agent",
            m.thor_agent_requests,
            m.thor_agent_requests_predicted,
        ),
        (
            "eclccserver",
            m.eclccserver_requests,
            m.eclccserver_requests_predicted,
        ),
    ] {
        eprintln!(
            "{mode} {who}: measured {measured}, predicted {predicted} ({:?})",
            m.thor_agent_calls
        );
        ensure!(predicted > 0, "{mode} {who}: nothing predicted");
        let off = measured.abs_diff(predicted) as f64 / predicted as f64;
        ensure!(
            off <= 0.03,
            "{mode} {who}: measured {measured} requests, the call list predicts {predicted} ({:+.1} %)",
            (measured as f64 - predicted as f64) / predicted as f64 * 100.0
        );
    }
    Ok(())
}

fn who_creates_what() -> Result<()> {
    let r = smoke().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    let base = &r.modes["baseline"].result;
    let js = &r.modes["jobset"].result;
    let n = u64::from(base.instances);
    let nj = u64::from(js.instances);
    let by = |m: &ModeResult, who: &str, what: &str| {
        m.run
            .window
            .api_requests_by_client_request
            .get(who)
            .and_then(|x| x.get(what))
            .copied()
            .unwrap_or(0)
    };
    // Baseline: the Thor identity creates both Jobs and both NetworkPolicies.
    ensure!(
        by(base, "eclccserver", "create jobs") == u64::from(base.compile_jobs),
        "compile Jobs by eclccserver"
    );
    ensure!(
        by(base, "thor-agent", "create jobs") == 2 * n,
        "baseline Job creates by thor-agent: {:?}",
        base.run
            .window
            .api_requests_by_client_request
            .get("thor-agent")
    );
    ensure!(
        by(base, "thor-agent", "create networkpolicies") == 2 * n,
        "baseline NetworkPolicy creates"
    );
    ensure!(
        by(base, "jobset-controller", "create jobs") == 0,
        "no JobSet controller in baseline"
    );
    // JobSet: one JobSet from Thor, the Jobs from the JobSet controller.
    ensure!(
        by(js, "thor-agent", "create jobsets") == nj,
        "JobSet creates by thor-agent"
    );
    ensure!(
        by(js, "thor-agent", "create jobs") == 0,
        "thor-agent created Jobs in jobset mode"
    );
    ensure!(
        by(js, "thor-agent", "create networkpolicies") == 2 * nj,
        "jobset mode: thoragent creates the two NetworkPolicies the chart's default-deny needs"
    );
    ensure!(
        by(js, "jobset-controller", "create jobs") == 2 * nj,
        "Job creates by the JobSet controller: {:?}",
        js.run
            .window
            .api_requests_by_client_request
            .get("jobset-controller")
    );
    // Gang: the Thor identity also brings the Workload and the PodGroup.
    let gang = &r.modes["jobset-gang"].result;
    let ng = u64::from(gang.instances);
    ensure!(
        by(gang, "thor-agent", "create workloads") == ng,
        "Workload creates: {:?}",
        gang.run
            .window
            .api_requests_by_client_request
            .get("thor-agent")
    );
    ensure!(
        by(gang, "thor-agent", "create podgroups") == ng,
        "PodGroup creates"
    );
    ensure!(
        by(gang, "jobset-controller", "create jobs") == 2 * ng,
        "gang: Job creates by the JobSet controller"
    );
    // Measured, not merely present (it is set for every gang run): a
    // start took time, the percentiles are ordered, and no instance
    // started after the mode's run ended (issue 30).
    let gs = gang
        .gang_start_ms
        .as_ref()
        .context("gang start latency measured")?;
    ensure!(
        gs.p50 > 0.0
            && gs.p50 <= gs.p90
            && gs.p90 <= gs.p99
            && gs.p99 <= gs.max
            && gs.max <= gang.run.wall_s * 1000.0,
        "gang start latency not measured or out of order: {gs:?} (mode wall {:.1} s)",
        gang.run.wall_s
    );
    // Pods always come from the job controller.
    for m in [base, js, gang] {
        ensure!(
            by(
                m,
                "system:serviceaccount:kube-system:job-controller",
                "create pods"
            ) == m.run.pods_created,
            "{}: pods by job-controller",
            m.run.mode
        );
    }
    // HPCC's identities stay inside their RBAC: no failed requests.
    for m in [base, js, gang] {
        for who in ["thor-agent", "eclccserver"] {
            ensure!(
                m.run
                    .window
                    .failed_requests
                    .get(who)
                    .is_none_or(|f| f.is_empty()),
                "{}: {who} failures {:?}",
                m.run.mode,
                m.run.window.failed_requests.get(who)
            );
        }
    }
    Ok(())
}

fn audit_reconciles_with_metrics() -> Result<()> {
    let r = smoke().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    for (mode, sum) in &r.modes {
        let m = &sum.result;
        // apiserver_request_total counts requests for resources only: the
        // discovery and OpenAPI GETs (most of HPCC's cold kubectl's) are
        // audited but not counted there.
        let audited = m.run.window.audited_resource_requests;
        let counted = m.run.window.apiserver_requests_counted;
        let diff = audited.abs_diff(counted);
        // Watches still open at the end are audited (ResponseStarted) but
        // not yet counted; the harness's own scrape straddles the window.
        ensure!(
            diff as f64 <= 0.10 * counted as f64 + 20.0,
            "{mode}: audit saw {audited} resource requests (of {} + harness {}), apiserver_request_total counted {counted}",
            m.run.window.api_requests_total,
            m.run.window.harness_requests
        );
        ensure!(
            m.run.window.harness_requests > 0
                && m.run.window.harness_requests < m.run.window.api_requests_total,
            "{mode}: harness requests {}",
            m.run.window.harness_requests
        );
        ensure!(
            m.run.window.etcd_writes_total > 0 && m.run.window.etcd.puts > 0,
            "{mode}: etcd writes"
        );
        ensure!(
            m.run.pod_startup_ms.p99 > 0.0,
            "{mode}: pod start-up measured"
        );
    }
    Ok(())
}

/// One round of the smoke, every mode, with one of the machine's CPUs
/// kept busy beside it (`harness::load`, as `--load 1`): a busier machine
/// than the baseline's, on purpose.
fn loaded_smoke() -> Result<ThorResult> {
    let rt = crate::runtime()?;
    let opts = crate::thor_options(
        "smoke.yaml",
        vec![Mode::Baseline, Mode::Jobset, Mode::JobsetGang],
        crate::unique_name("t-thor-load"),
    );
    let load = harness::load::Load::start(1)?;
    let r = rt.block_on(bench_thor(&opts));
    drop(load);
    r
}

/// A run with a CPU kept busy beside it, against the stored baseline, as
/// `harness bench thor --compare` judges it: on a machine unlike the
/// baseline's (CI's always are) or a busy one, what the workload alone
/// drives is judged against the recorded runs, what its pace or the
/// clock drives against what a machine not seen yet may show, predicted
/// from the machines the baseline holds (`verdict::judge::machines`) —
/// per second of the window where the clock drives it. No regression
/// that a second run of its modes confirms (`verdict::confirm`: a
/// regression of a metric with a band stands only when the second run
/// has it too, anywhere; both runs' figures are printed); the counts the
/// workload drives judged, not withheld; what is withheld said with why
/// (exit 4 of `--compare`, not a failure here). compare.md,
/// compare-summary.md and compare-junit.xml are kept in
/// `$HARNESS_THOR_OUT` when it is set.
fn compares_with_the_stored_baseline() -> Result<()> {
    let r = &loaded_smoke()?;
    let scratch = tempfile::tempdir()?;
    let out = match std::env::var_os("HARNESS_THOR_OUT") {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {dir:?}"))?;
            std::path::PathBuf::from(dir)
        }
        None => scratch.path().to_path_buf(),
    };
    let root = crate::repo_root();
    let mut c = policy::compare(&root, r, false, &out, harness::bench::recorded::known_mode)?;
    let again = confirm::to_confirm(&c.verdicts);
    if !again.is_empty() {
        eprintln!("thor smoke: regressions to confirm in {again:?}: those modes run once more");
        let modes = again
            .iter()
            .map(|m| Mode::parse(m).with_context(|| format!("mode {m}")))
            .collect::<Result<Vec<_>>>()?;
        let opts = crate::thor_options("smoke.yaml", modes, crate::unique_name("t-thor-again"));
        let load = harness::load::Load::start(1)?;
        let second = crate::runtime()?.block_on(bench_thor(&opts));
        drop(load);
        let dir = out.join("again");
        let c2 = policy::compare(
            &root,
            &second?,
            false,
            &dir,
            harness::bench::recorded::known_mode,
        )?;
        c.verdicts = confirm::confirmed(c.verdicts, &c2.verdicts);
        policy::write(&c, &out)?;
    }
    eprint!("{}", report::summary(&c));
    let counts = |v: &&Verdict| v.kind != MetricKind::Latency;
    let judged: Vec<&Verdict> = c
        .verdicts
        .iter()
        .filter(counts)
        .filter(|v| v.judged_here())
        .collect();
    let machines = judged.iter().filter(|v| v.against_machines()).count();
    let withheld: Vec<String> = c
        .verdicts
        .iter()
        .filter(counts)
        .filter(|v| v.status == Status::Withheld)
        .map(|v| format!("{} {}: {}", v.mode, v.metric, v.note()))
        .collect();
    eprintln!(
        "thor smoke: {} counts judged ({machines} against the machines the baseline holds), {} withheld; {}",
        judged.len(),
        withheld.len(),
        match &c.timing {
            Ok(why) => format!("on the baseline's own machine: {why}"),
            Err(why) => format!("off it: {why}"),
        }
    );
    // Judged, not withheld: the counts the scenario and the workload fix
    // (pods, objects, creates, the Thor identity's writes and planned
    // calls) in every mode, anywhere.
    ensure!(
        judged.len() >= 100,
        "only {} counts judged; withheld:\n{}",
        judged.len(),
        withheld.join("\n")
    );
    for v in c.verdicts.iter().filter(|v| v.status == Status::Withheld) {
        ensure!(
            matches!(
                v.reason,
                harness::bench::core::verdict::model::Reason::Withheld { .. }
            ),
            "{} {} withheld without saying why: {}",
            v.mode,
            v.metric,
            v.note()
        );
    }
    ensure!(
        c.verdicts
            .iter()
            .any(|v| v.metric == "watch_events.leases.coordination.k8s.io" && v.per_second),
        "lease watch events not compared per second"
    );
    for v in c
        .verdicts
        .iter()
        .filter(|v| v.confirmation.is_some() || v.kind == MetricKind::Latency)
    {
        eprintln!("{} {}: {}", v.mode, v.metric, v.note());
    }
    let failed = c.regressions();
    ensure!(
        failed.is_empty(),
        "regressions against {}:\n{}",
        c.baseline.display(),
        failed.join("\n")
    );
    Ok(())
}

fn reports_are_written() -> Result<()> {
    let r = smoke().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    let out = tempfile::tempdir()?;
    let files = files::write_all(r, out.path())?;
    ensure!(files.len() == 6, "{files:?}");
    let json: ThorResult =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("result.json"))?)?;
    let without_timelines = ThorResult {
        timelines: Vec::new(),
        ..r.clone()
    };
    ensure!(json == without_timelines, "result.json does not round-trip");
    let html = std::fs::read_to_string(out.path().join("report.html"))?;
    // 4 bar charts, the CPU stack and at least the request-rate, CPU and
    // memory lines over time.
    ensure!(html.matches("<svg").count() >= 12, "charts missing");
    ensure!(html.contains("kube-apiserver CPU"), "no timeline chart");
    let csv = std::fs::read_to_string(out.path().join("timeline.csv"))?;
    ensure!(
        csv.lines().count() > 100 && csv.contains(",cpu_cores.etcd,"),
        "timeline.csv: {} lines",
        csv.lines().count()
    );
    let md = std::fs::read_to_string(out.path().join("report.md"))?;
    ensure!(md.contains("jobset / baseline"), "no ratio column");
    Ok(())
}

/// Every component of the local cluster used CPU and memory in every
/// mode, the driver's kubectl processes too; kube-apiserver + etcd is the
/// headline; each mode's timeline has a point per second.
fn costs_cpu_memory_and_a_timeline() -> Result<()> {
    let r = smoke().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    for (mode, sum) in &r.modes {
        let w = &sum.result.run.window;
        for c in [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "jobset-controller",
            "kwok",
            "harness",
        ] {
            let u = w.resources.get(c);
            ensure!(
                u.is_some_and(|u| u.cpu_s > 0.0 && u.rss_peak_mib > 0.0 && u.samples > 5),
                "{mode}: {c}: {u:?}"
            );
        }
        ensure!(
            w.resources.get("kubectl").is_some_and(|u| u.cpu_s > 0.0),
            "{mode}: the driver's kubectl processes: {:?}",
            w.resources.get("kubectl")
        );
        let cpu = |c: &str| w.resources[c].cpu_s;
        ensure!(
            (w.apiserver_etcd_cpu_s - cpu("kube-apiserver") - cpu("etcd")).abs() < 1e-9,
            "{mode}: headline CPU"
        );
        // The controller manager's rate limiters see the requests of it and
        // its controllers' accounts but their watches: client-go does not
        // rate-limit a watch (k8s.io/client-go rest/request.go,
        // `Request.Watch`). So they cannot count more than the audit log
        // has of those accounts, but for a few in flight at the window's
        // close. They have counted fewer with no watch in the window, and
        // why is not known: 116 of 122 (a fresh machine, 0e2925c), 125 of
        // 137 (CI, 5cdf8b2), equal in 12 of 12 loaded windows (6d0ae74).
        // Their discovery requests are counted (12 of 12 in an idle
        // window), and the scrape's place in the snapshot is not the cause
        // (metrics/snapshot.rs). So only the upper bound is a check; the
        // shortfall is printed.
        let throttle = w.client_throttle.get(harness::metrics::window::KCM);
        let kcm = |who: &str| {
            who.starts_with("system:serviceaccount:kube-system:")
                || who == "system:kube-controller-manager"
        };
        let (mut audited, mut watches) = (0, 0);
        for (_, requests) in w
            .api_requests_by_client_request
            .iter()
            .filter(|(who, _)| kcm(who))
        {
            for (key, n) in requests {
                audited += n;
                if key.starts_with("watch ") {
                    watches += n;
                }
            }
        }
        let limited = audited - watches;
        let by_identity = || {
            w.api_requests_by_client_request
                .iter()
                .filter(|(who, _)| kcm(who))
                .collect::<Vec<_>>()
        };
        ensure!(
            throttle.is_some_and(|t| t.requests <= limited + 3 + limited / 50
                && t.requests > 0
                && t.waited_s >= 0.0),
            "{mode}: kube-controller-manager's client-side throttling {throttle:?} against {limited} audited requests of its identities that are not watches ({audited} in all, {watches} watches); by identity: {:?}",
            by_identity()
        );
        if let Some(t) = throttle.filter(|t| t.requests < limited) {
            eprintln!(
                "{mode}: kube-controller-manager's rate limiters counted {} of the {limited} requests of its identities that are not watches; by identity: {:?}",
                t.requests,
                by_identity()
            );
        }
        ensure!(
            !w.api_latency_slo.is_empty() && w.api_latency_slo.iter().any(|x| x.resource == "pods"),
            "{mode}: no SLO rows for pods: {:?}",
            w.api_latency_slo
                .iter()
                .map(|x| x.key())
                .collect::<Vec<_>>()
        );
        let (_, _, tl) = r
            .timelines
            .iter()
            .find(|(m, rep, _)| m == mode && *rep == 0)
            .ok_or_else(|| anyhow::anyhow!("{mode}: no timeline"))?;
        let wall = sum.result.run.wall_s;
        let points = tl.t_s.len() as f64;
        ensure!(
            (points - wall).abs() <= 2.0 && tl.missed == 0,
            "{mode}: {points} timeline points over {wall:.1} s ({} missed)",
            tl.missed
        );
        let interval = tl.mean_interval_s();
        ensure!(
            (0.95..=1.1).contains(&interval),
            "{mode}: mean sampling interval {interval:.3} s"
        );
        // The audit log's requests over time add up to the window's count
        // (a request per point's second; the harness's own left out).
        let per_s: f64 = tl
            .series
            .iter()
            .filter(|(k, _)| k.starts_with("audit.requests_per_s."))
            .map(|(_, v)| {
                v.iter()
                    .enumerate()
                    .map(|(i, r)| r * (tl.t_s[i] - if i == 0 { 0.0 } else { tl.t_s[i - 1] }))
                    .sum::<f64>()
            })
            .sum();
        let counted = sum.result.run.window.api_requests_total as f64;
        ensure!(
            (per_s - counted).abs() <= 0.02 * counted + 5.0,
            "{mode}: the timeline's requests add up to {per_s:.0}, the window counted {counted}"
        );
        ensure!(
            tl.series["audit.inflight.readOnly"]
                .iter()
                .any(|v| *v > 0.0)
                || tl.series["audit.inflight.mutating"]
                    .iter()
                    .any(|v| *v > 0.0),
            "{mode}: nothing ever in flight"
        );
    }
    Ok(())
}

/// The Thor smoke suite. Six tests read one benchmark run whose counts
/// and shapes do not follow the machine's pace (its calls, objects,
/// identities, audit against metrics, reports, a timeline sampled each
/// second): they are paced — beside the other tests, never beside a build
/// or a kind cluster, which keep both cores busy — and one at a time (lane
/// `thor`), so those that wait for the first one's run hold no slot. The
/// compare with the stored baseline makes its own run beside one busy CPU
/// and judges what the pace drives against what a machine not seen yet
/// may show (its band holds runs with up to two busy CPUs beside them):
/// quiet,
/// so that no other test's load adds to its own (beside two more busy
/// CPUs, 2026-12-07, two latency p99s were judged regressed in its run and
/// in the run that confirms).
pub fn suite(_: &Arguments) -> Suite {
    let t = |name: &str, f: fn() -> Result<()>| {
        Test::of(name, f)
            .paced()
            .serial("thor")
            .needs(default_cluster_and(&[Component::HpccKubectl]))
    };
    Suite::new(
        "thor",
        vec![
            t(
                "smoke_pods_and_containers_match_the_templates",
                pods_and_containers,
            ),
            t(
                "smoke_thor_identity_and_controllers_create_what_they_should",
                who_creates_what,
            ),
            t(
                "smoke_audit_attribution_reconciles_with_metric_deltas",
                audit_reconciles_with_metrics,
            ),
            t(
                "smoke_thor_identity_costs_what_its_kubectl_calls_predict",
                thor_identity_costs_what_its_calls_predict,
            ),
            Test::of(
                "smoke_compares_clean_with_the_stored_baseline",
                compares_with_the_stored_baseline,
            )
            .quiet()
            .needs(default_cluster_and(&[Component::HpccKubectl])),
            t("smoke_reports_are_written", reports_are_written),
            t(
                "smoke_costs_cpu_and_memory_per_component_and_a_timeline",
                costs_cpu_memory_and_a_timeline,
            ),
        ],
    )
}
