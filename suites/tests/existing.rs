//! The existing provider, against a local cluster the harness started but
//! is handed only as a kubeconfig (with its audit log and etcd's metrics
//! URL, as a self-managed cluster's operator would give them):
//! - the Thor smoke in baseline and jobset modes measures what the local
//!   provider measured when it recorded baselines/local/1.37/smoke.json,
//!   within 5 % for requests and the Thor identity, 15 % for etcd writes;
//!   the Thor identity's measured requests are the model's prediction
//!   (its calls priced for the run's own namespace); the result records
//!   the capabilities, and comparing it with the local baseline is
//!   refused; nothing carrying the run id is left;
//! - a kubeconfig whose user may not create namespaces or read /metrics
//!   (the cluster's eclccserver identity) fails with exit 3 before
//!   anything is created, naming what it may not do.

use anyhow::{Context, Result, ensure};
use harness::bench::thor::existing::ExistingTarget;
use harness::bench::thor::result::ThorResult;
use harness::bench::thor::{ThorBenchOptions, baseline, bench_thor};
use harness::cluster::Cluster;
use harness::cluster::existing::ExistingOptions;
use harness::cluster::existing::probe::RUN_ID_LABEL;
use harness::cluster::existing::site::new_run_id;
use harness::cluster::local::LocalCluster;
use harness::workload::thor::Mode;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use libtest_mimic::{Arguments, Trial};
use suites::{Fixture, trial_result, unique_name};

fn fixture() -> std::result::Result<&'static Fixture, String> {
    Fixture::shared("t-exist")
}

fn target(c: &LocalCluster, kubeconfig: std::path::PathBuf) -> ExistingTarget {
    ExistingTarget {
        cluster: ExistingOptions {
            kubeconfig,
            context: None,
            audit_log: Some(c.layout.audit_log()),
            etcd_metrics_url: Some(format!("{}/metrics", c.state.ports.etcd_url())),
            etcd_cert: None,
            etcd_ca: None,
        },
        run_id: new_run_id(),
        yes: false,
    }
}

fn options(t: ExistingTarget) -> ThorBenchOptions {
    ThorBenchOptions {
        scenario: suites::repo_root().join("suites/thor/smoke.yaml"),
        modes: Some(vec![Mode::Baseline, Mode::Jobset]),
        repeat: 1,
        bins: Default::default(),
        cluster_prefix: unique_name("t-exist-unused"),
        overrides: Vec::new(),
        out: None,
        scrape: false,
        profiles: None,
        existing: Some(t),
    }
}

fn smoke_as_existing() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let t = target(c, c.kubeconfig().to_path_buf());
    let run_id = t.run_id.clone();
    let r: ThorResult = fx.rt.block_on(bench_thor(&options(t)))?;
    ensure!(r.provider == "existing", "provider {}", r.provider);
    let caps = r
        .capabilities
        .as_ref()
        .context("no capabilities recorded")?;
    ensure!(
        caps.audit_log == Some(true) && caps.etcd_metrics == Some(true) && caps.kwok_nodes == 3,
        "{caps:?}"
    );
    let root = suites::repo_root();
    let path = baseline::path_of(&root, "local", "1.37", "smoke", "default");
    let local = baseline::load(&path)?;
    for (mode, sum) in &r.modes {
        let m = &sum.result;
        let base = |k: &str| -> Result<f64> {
            Ok(local.modes[mode]
                .get(k)
                .with_context(|| format!("{}: no {k} for {mode}", path.display()))?
                .value)
        };
        for (k, measured, tolerance) in [
            (
                "api_requests_total",
                m.window.api_requests_total as f64,
                0.05,
            ),
            ("thor_agent_requests", m.thor_agent_requests as f64, 0.05),
            ("etcd_writes_total", m.window.etcd_writes_total as f64, 0.15),
        ] {
            let b = base(k)?;
            ensure!(
                (measured - b).abs() <= tolerance * b,
                "{mode} {k}: {measured} on the existing provider, {b} in {} (±{:.0} %)",
                path.display(),
                tolerance * 100.0
            );
        }
        let (measured, predicted) = (
            m.thor_agent_requests as f64,
            m.thor_agent_requests_predicted as f64,
        );
        ensure!(
            (measured - predicted).abs() <= 0.03 * predicted,
            "{mode}: the Thor identity made {measured} requests, the model predicts {predicted}"
        );
        ensure!(
            m.thor_agent_user
                .starts_with("system:serviceaccount:harness-"),
            "{mode}: the Thor identity was {}",
            m.thor_agent_user
        );
    }
    let e = baseline::same_capabilities(&local, &r, &path).unwrap_err();
    ensure!(harness::error::exit_code(&e) == 2, "{e:#}");
    let left: Vec<String> = fx.rt.block_on(async {
        let api: Api<Namespace> = Api::all(c.client().await?);
        let sel = ListParams::default().labels(&format!("{RUN_ID_LABEL}={run_id}"));
        Ok::<_, anyhow::Error>(
            api.list_metadata(&sel)
                .await?
                .items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect(),
        )
    })?;
    ensure!(left.is_empty(), "left behind: {left:?}");
    Ok(())
}

fn a_user_without_rights_creates_nothing() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let from = c.audit_end()?;
    let t = target(c, c.kubeconfig_of("eclccserver"));
    let e = fx
        .rt
        .block_on(bench_thor(&options(t)))
        .err()
        .context("a user without rights ran the benchmark")?;
    let msg = format!("{e:#}");
    ensure!(
        harness::error::exit_code(&e) == 3,
        "exit {}: {msg}",
        harness::error::exit_code(&e)
    );
    for what in [
        "eclccserver may not",
        "create namespaces",
        "get /metrics",
        "nothing was created",
    ] {
        ensure!(msg.contains(what), "the error does not say {what:?}: {msg}");
    }
    // It did not even try: its only writes are the probe's reviews.
    let (events, _) = c.audit_events(from)?;
    let tried: Vec<String> = events
        .iter()
        .filter(|e| e.user.username == "eclccserver" && e.verb == "create")
        .map(|e| e.key())
        .filter(|k| !k.ends_with("selfsubjectaccessreviews") && !k.ends_with("selfsubjectreviews"))
        .collect();
    ensure!(tried.is_empty(), "it tried: {tried:?}");
    ensure!(
        events.iter().any(|e| e.user.username == "eclccserver"),
        "no request of the probe in the audit log"
    );
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test("smoke_as_existing_matches_the_local_provider", || {
            trial_result(smoke_as_existing())
        }),
        Trial::test("a_user_without_rights_exits_3_and_creates_nothing", || {
            trial_result(a_user_without_rights_creates_nothing())
        }),
    ];
    let conclusion = libtest_mimic::run(&args, trials);
    let _ = suites::teardown();
    conclusion.exit();
}
