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
//! - with `--attribution apf` every followed identity's count agrees with
//!   the audit log's; without the audit log APF alone counts the Thor
//!   identity as the log has it, and no FlowSchema of the run is left;
//! - a kubeconfig whose user may not create namespaces or read /metrics
//!   (the cluster's eclccserver identity) fails with exit 3 before
//!   anything is created, naming what it may not do;
//! - `measure --provider existing` on the same cluster
//!   (measure.rs).

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use crate::suite::existing::measure;
use crate::{Fixture, unique_name};
use anyhow::{Context, Result, ensure};
use harness::bench::core::baseline;
use harness::bench::thor::result::ThorResult;
use harness::bench::thor::{ThorBenchOptions, bench_thor};
use harness::cluster::Cluster;
use harness::cluster::existing::ExistingCluster;
use harness::cluster::existing::ExistingOptions;
use harness::cluster::existing::apf::{Attribution, Identity};
use harness::cluster::existing::labels::RUN_ID_LABEL;
use harness::cluster::existing::site::{new_run_id, remove_run, runs_left};
use harness::cluster::local::LocalCluster;
use harness::cluster::{ExistingTarget, Provider};
use harness::tools::Component;
use harness::workload::gang::run::run_case;
use harness::workload::thor::Mode;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::flowcontrol::v1::FlowSchema;
use kube::api::{Api, ListParams};
use libtest_mimic::Arguments;

/// The shared cluster's prefix.
const PREFIX: &str = "t-exist";

fn fixture() -> std::result::Result<&'static Fixture, String> {
    Fixture::shared(PREFIX)
}

fn fixture_or_err() -> Result<&'static Fixture> {
    fixture().map_err(anyhow::Error::msg)
}

fn target(c: &LocalCluster, kubeconfig: std::path::PathBuf) -> ExistingTarget {
    ExistingTarget {
        cluster: ExistingOptions {
            kubeconfig,
            context: None,
            audit_log: Some(c.layout.audit_log()),
            etcd_metrics_url: Some(format!("{}/metrics", c.state.ports.etcd_url())),
            ..Default::default()
        },
        run_id: new_run_id(),
        yes: false,
        node_image: harness::tools::versions::AGNHOST_IMAGE.into(),
    }
}

fn options(t: ExistingTarget) -> ThorBenchOptions {
    ThorBenchOptions {
        provider: Provider::Existing(t),
        ..crate::thor_options(
            "smoke.yaml",
            vec![Mode::Baseline, Mode::Jobset],
            unique_name("t-exist-unused"),
        )
    }
}

/// The clients that made the most requests, most first: what a failed
/// count is read with (a fresh-machine run once had 400 more requests in
/// jobset mode than the baseline, from a client it did not name).
fn top_clients(by_client: &std::collections::BTreeMap<String, u64>) -> String {
    harness::metrics::attribution::largest_first(by_client)
        .into_iter()
        .take(8)
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
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
    let root = crate::repo_root();
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
                m.run.window.api_requests_total as f64,
                0.05,
            ),
            ("thor_agent_requests", m.thor_agent_requests as f64, 0.05),
            (
                "etcd_writes_total",
                m.run.window.etcd_writes_total as f64,
                0.15,
            ),
        ] {
            let b = base(k)?;
            ensure!(
                (measured - b).abs() <= tolerance * b,
                "{mode} {k}: {measured} on the existing provider, {b} in {} (±{:.0} %); this run's requests by client: {}",
                path.display(),
                tolerance * 100.0,
                top_clients(&m.run.window.api_requests_by_client)
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
        // Each run's namespace is named alike in results (the rounds and
        // modes line up by client: lifecycle::same_clients).
        ensure!(
            m.thor_agent_user == "system:serviceaccount:<run>:harness-thor-agent",
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

/// `user`'s writes in `events` but the probe's reviews.
fn writes_of(events: &[harness::cluster::audit::AuditEvent], user: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.user.username == user)
        .filter(|e| matches!(e.verb.as_str(), "create" | "update" | "patch" | "delete"))
        .map(|e| e.key())
        .filter(|k| !k.ends_with("selfsubjectaccessreviews") && !k.ends_with("selfsubjectreviews"))
        .collect()
}

fn a_user_without_rights_creates_nothing() -> Result<()> {
    // Its probe's requests must not land in another trial's window.
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
    let tried = writes_of(&events, "eclccserver");
    ensure!(tried.is_empty(), "it tried: {tried:?}");
    ensure!(
        events.iter().any(|e| e.user.username == "eclccserver"),
        "no request of the probe in the audit log"
    );
    Ok(())
}

/// The local provider's identities the standard list does not know
/// (their groups from cluster::local::identity).
fn local_identities() -> Vec<Identity> {
    vec![
        Identity::user("jobset-controller", &[]),
        Identity::user("kwok-controller", &["system:masters"]),
    ]
}

/// The cluster as an existing one, counted by APF with the local
/// provider's own identities followed too.
fn apf_target(c: &LocalCluster) -> ExistingTarget {
    let mut t = target(c, c.kubeconfig().to_path_buf());
    t.cluster.attribution = Attribution::Apf;
    t.cluster.apf_identities = local_identities();
    t
}

fn left_flowschemas(fx: &Fixture, run_id: &str) -> Result<Vec<String>> {
    fx.rt.block_on(async {
        let api: Api<FlowSchema> = Api::all(fx.cluster.client().await?);
        let sel = ListParams::default().labels(&format!("{RUN_ID_LABEL}={run_id}"));
        Ok(api
            .list_metadata(&sel)
            .await?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect())
    })
}

/// With both the audit log and `--attribution apf`, every followed
/// identity's APF count is its audit count of requests begun in the
/// window within 5 % (or 2 requests, for identities that made few: the
/// two are read a moment apart at each end of the window).
fn apf_agrees_with_the_audit_log() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let t = apf_target(c);
    let run_id = t.run_id.clone();
    let mut o = options(t);
    o.modes = Some(vec![Mode::Jobset]);
    let r: ThorResult = fx.rt.block_on(bench_thor(&o))?;
    let w = &r.modes["jobset"].result.run.window;
    ensure!(w.attribution == "audit log", "{}", w.attribution);
    let thor = &r.modes["jobset"].result.thor_agent_user;
    for who in [
        thor.as_str(),
        "system:serviceaccount:kube-system:job-controller",
        "system:kube-scheduler",
        "jobset-controller",
    ] {
        let a = w
            .apf_agreement
            .get(who)
            .with_context(|| format!("{who} not followed: {:?}", w.apf_agreement.keys()))?;
        ensure!(a.audit > 0, "{who}: no request in the audit log: {a:?}");
    }
    for (who, a) in &w.apf_agreement {
        eprintln!(
            "APF vs audit log: {who}: {} vs {} ({:.1} % off)",
            a.apf,
            a.audit,
            a.off_pct()
        );
    }
    for (who, a) in &w.apf_agreement {
        ensure!(
            a.off_pct() <= 5.0 || a.apf.abs_diff(a.audit) <= 2,
            "{who}: APF counted {}, the audit log {} ({:.1} % off)",
            a.apf,
            a.audit,
            a.off_pct()
        );
    }
    let left = left_flowschemas(fx, &run_id)?;
    ensure!(left.is_empty(), "FlowSchemas left behind: {left:?}");
    Ok(())
}

/// A run's identity as the cluster (and its audit log) names it: results
/// name every run's namespace alike (`<run>`, lifecycle::same_clients),
/// the cluster names round 0 of `mode` of run `run_id`.
fn on_cluster(user: &str, run_id: &str, mode: &str) -> String {
    let ns = harness::cluster::existing::site::run_namespace(run_id, mode, 0)
        .expect("a short run namespace");
    user.replace(
        "system:serviceaccount:<run>:",
        &format!("system:serviceaccount:{ns}:"),
    )
}

/// With no audit log, APF alone counts the run's identities: the Thor
/// identity's figure is what the cluster's audit log (which this test
/// reads, the harness not) has for it; what needs the log is marked not
/// measured.
fn apf_without_the_audit_log() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let mut t = apf_target(c);
    t.cluster.audit_log = None;
    let run_id = t.run_id.clone();
    let mut o = options(t);
    o.modes = Some(vec![Mode::Baseline]);
    let from = c.audit_end()?;
    let r: ThorResult = fx.rt.block_on(bench_thor(&o))?;
    let m = &r.modes["baseline"].result;
    let w = &m.run.window;
    ensure!(w.attribution == "apf", "{}", w.attribution);
    ensure!(
        w.not_measured
            .iter()
            .any(|n| n.contains("verb and resource")),
        "{:?}",
        w.not_measured
    );
    let caps = r.capabilities.as_ref().context("no capabilities")?;
    ensure!(
        caps.attribution == "apf" && caps.audit_log.is_none(),
        "{caps:?}"
    );
    let mut seen = std::collections::HashSet::new();
    let (events, _) = c.audit_events(from)?;
    let audit = events
        .iter()
        .filter(|e| {
            e.user.username == on_cluster(&m.thor_agent_user, &run_id, "baseline")
                && seen.insert(e.audit_id.clone())
        })
        .count() as f64;
    let apf = m.thor_agent_requests as f64;
    ensure!(
        audit > 0.0 && (apf - audit).abs() <= 0.05 * audit,
        "the Thor identity: APF {apf}, audit log {audit}"
    );
    Ok(())
}

/// `--attribution client` (no audit log, no FlowSchemas): HPCC's two
/// identities are counted from their kubectl's -v=6 log, and each count
/// is what the cluster's audit log (read by this test) has for it.
fn client_counts_match_the_audit_log() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let mut t = target(c, c.kubeconfig().to_path_buf());
    t.cluster.audit_log = None;
    t.cluster.attribution = Attribution::Client;
    let run_id = t.run_id.clone();
    let mut o = options(t);
    o.modes = Some(vec![Mode::Jobset]);
    let from = c.audit_end()?;
    let r: ThorResult = fx.rt.block_on(bench_thor(&o))?;
    let w = &r.modes["jobset"].result.run.window;
    ensure!(w.attribution == "client", "{}", w.attribution);
    let (events, _) = c.audit_events(from)?;
    ensure!(
        w.api_requests_by_client.len() == 2,
        "{:?}",
        w.api_requests_by_client
    );
    for (user, counted) in &w.api_requests_by_client {
        let mut seen = std::collections::HashSet::new();
        let real = on_cluster(user, &run_id, "jobset");
        let audit = events
            .iter()
            .filter(|e| e.user.username == real && seen.insert(e.audit_id.clone()))
            .count() as u64;
        eprintln!("client-side vs audit log: {user}: {counted} vs {audit}");
        ensure!(
            audit > 0 && *counted == audit,
            "{user}: counted client-side {counted}, the audit log has {audit}"
        );
    }
    Ok(())
}

/// `--dry-run` prints each mode's objects (the harness's, the FlowSchemas
/// of --attribution apf, the Thor agent's per instance) and the calls'
/// prices, and creates nothing: the admin's only writes in the audit log
/// are the probe's reviews.
fn dry_run_creates_nothing() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let t = apf_target(c);
    let from = c.audit_end()?;
    let text = fx
        .rt
        .block_on(harness::bench::thor::plan_only(&options(t)))?;
    for what in [
        "nothing was created",
        "admin creates Namespace harness-",
        "admin creates RoleBinding thor-agent-jobset",
        "admin creates FlowSchema 0-harness-",
        ":harness-thor-agent creates Job thormanager-job-",
        ":harness-thor-agent creates JobSet ",
        "kubectl replace --force -f - → ",
    ] {
        ensure!(text.contains(what), "the dry run does not say {what:?}");
    }
    let (events, _) = c.audit_events(from)?;
    let writes = writes_of(&events, "admin");
    ensure!(writes.is_empty(), "the dry run wrote: {writes:?}");
    Ok(())
}

/// A gang case on the cluster as an existing one: its namespace and pool
/// nodes (kwok's, created by the harness) carry the run id, the case
/// passes as on the local provider, and nothing of the run is left.
fn gang_case_on_existing() -> Result<()> {
    let fx = fixture().map_err(anyhow::Error::msg)?;
    let c = &fx.cluster;
    let case = harness::workload::gang::rules::load(
        &crate::repo_root().join("suites/gang/gates-off.yaml"),
    )?;
    let ex = fx.rt.block_on(ExistingCluster::attach(ExistingOptions {
        kubeconfig: c.kubeconfig().to_path_buf(),
        ..Default::default()
    }))?;
    let run_id = ex.run_id.clone();
    let release = harness::k8s::K8sRelease::parse("1.37")?;
    let ns = format!("gates-off-{run_id}");
    let report = fx
        .rt
        .block_on(run_case(&ex, release, "gates-off", &case, &ns));
    ensure!(
        report.passed,
        "{:?}\n{:?}",
        report.failure,
        report.observations
    );
    let client = fx.rt.block_on(c.client())?;
    let left = fx.rt.block_on(runs_left(&client))?;
    let ours = left.get(&run_id).cloned().unwrap_or_default();
    ensure!(
        ours.iter().all(|o| o == &format!("namespace/{ns}")),
        "the trial left more than its terminating namespace: {ours:?}"
    );
    // Pool nodes carry the run id: a pool added and not removed is found
    // by it and removed with the run.
    let pool = harness::cluster::pool::NodePool {
        prefix: format!("left-{run_id}"),
        first: 0,
        count: 2,
        cpu: "4".into(),
        memory: "8Gi".into(),
        pods: 10,
        key: "harness.test/pool".into(),
        value: run_id.clone(),
        labels: Default::default(),
    };
    let names = fx.rt.block_on(ex.add_pool(&pool))?;
    let left = fx.rt.block_on(runs_left(&client))?;
    for n in &names {
        ensure!(
            left.get(&run_id)
                .is_some_and(|l| l.contains(&format!("node/{n}"))),
            "node {n} not found by the run id: {left:?}"
        );
    }
    fx.rt.block_on(remove_run(
        &client,
        &run_id,
        std::time::Duration::from_secs(120),
    ))?;
    let left = fx.rt.block_on(runs_left(&client))?;
    ensure!(!left.contains_key(&run_id), "left: {:?}", left.get(&run_id));
    Ok(())
}

/// The existing-cluster suite, on one shared local cluster.
pub fn suite(_: &Arguments) -> Suite {
    // One at a time: each measures the whole API server, and two runs
    // counting by FlowSchema at once are refused.
    let t = |name: &str, f: fn() -> Result<()>| {
        Test::of(name, f)
            .serial("existing")
            .needs(default_cluster_and(&[Component::HpccKubectl]))
    };
    Suite::new(
        "existing",
        vec![
            // Compares request counts of two runs: HPCC's polls follow
            // the cluster's pace, which other tests' load would change.
            t(
                "smoke_as_existing_matches_the_local_provider",
                smoke_as_existing,
            )
            .quiet(),
            t(
                "a_user_without_rights_exits_3_and_creates_nothing",
                a_user_without_rights_creates_nothing,
            ),
            t(
                "apf_counts_agree_with_the_audit_log",
                apf_agrees_with_the_audit_log,
            ),
            t(
                "dry_run_prints_the_plan_and_creates_nothing",
                dry_run_creates_nothing,
            ),
            t("a_gang_case_runs_on_its_own_pool", gang_case_on_existing),
            t(
                "client_side_counts_match_the_audit_log",
                client_counts_match_the_audit_log,
            ),
            t(
                "apf_counts_without_the_audit_log",
                apf_without_the_audit_log,
            ),
            t("measure_a_job_in_a_namespace_of_its_own", || {
                measure::a_job_in_a_namespace_of_its_own(fixture_or_err()?)
            }),
            t(
                "measure_apf_counts_the_workload_without_the_audit_log",
                || measure::apf_counts_the_workload_without_the_audit_log(fixture_or_err()?),
            ),
            t("measure_a_user_without_rights_exits_3", || {
                measure::a_user_without_rights_exits_3(fixture_or_err()?)
            }),
        ],
    )
    .after(|| {
        crate::teardown(PREFIX).map_err(|e| format!("tearing down the shared cluster: {e:#}"))
    })
}
