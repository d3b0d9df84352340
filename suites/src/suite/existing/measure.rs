//! `harness measure --provider existing` on the existing suite's shared
//! local cluster, handed over as a kubeconfig (with its audit log and
//! etcd's metrics URL, or with `--attribution apf` and no audit log):
//! - a kubectl Job measured in a namespace of its own: kubectl's request
//!   attributed to the run's ServiceAccount, the pod to the Job
//!   controller, the window closed once the Job completed; a folder whose
//!   Job names no namespace applied into the run's and waited for there;
//!   a command that reaches outside its namespace is refused by the server
//!   (the account is admin of its namespace only) and is a result, not an
//!   error; the capabilities recorded; nothing carrying the run id left;
//! - with APF and no audit log, the workload's count is what the cluster's
//!   audit log (read by this test, not the harness) has for it, and no
//!   FlowSchema of the run is left;
//! - a kubeconfig whose user may not create namespaces fails with exit 3
//!   before anything is created.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use harness::bench::measure::result::MeasureResult;
use harness::bench::measure::workload::{Variant, Workload};
use harness::bench::measure::{MeasureOptions, measure};
use harness::cluster::Cluster;
use harness::cluster::existing::ExistingOptions;
use harness::cluster::existing::apf::{Attribution, Identity};
use harness::cluster::existing::site::{new_run_id, runs_left};
use harness::cluster::local::LocalCluster;
use harness::cluster::{ExistingTarget, Provider};

use crate::Fixture;
use crate::suite::measure::{command, hello_job};

/// The run's account as rounds name it (lifecycle::measured::existing).
const WORKLOAD: &str = "system:serviceaccount:<run>:harness-workload";
const JOB_CONTROLLER: &str =
    "system:serviceaccount:kube-system:job-controller (kube-controller-manager)";

fn target(c: &LocalCluster, kubeconfig: std::path::PathBuf) -> ExistingTarget {
    ExistingTarget {
        cluster: ExistingOptions {
            kubeconfig,
            audit_log: Some(c.layout.audit_log()),
            etcd_metrics_url: Some(format!("{}/metrics", c.state.ports.etcd_url())),
            ..Default::default()
        },
        run_id: new_run_id(),
        yes: false,
        node_image: String::new(),
    }
}

fn options(
    t: ExistingTarget,
    variants: Vec<Variant>,
) -> Result<(MeasureOptions, tempfile::TempDir)> {
    let out = tempfile::tempdir()?;
    Ok((
        MeasureOptions {
            name: "exist".into(),
            variants,
            repeat: 1,
            seed: Some(3),
            shard: None,
            spec: crate::test_spec("measure-existing"),
            provider: Provider::Existing(t),
            bins: Default::default(),
            cluster_prefix: crate::unique_name("t-mexist-unused"),
            out: out.path().to_path_buf(),
            timeout: Duration::from_secs(180),
            scrape: false,
            settle: true,
            allow_failed: false,
        },
        out,
    ))
}

fn requests(
    r: &MeasureResult,
    variant: &str,
    client: &str,
) -> std::collections::BTreeMap<String, u64> {
    r.figures.modes[variant].repeats[0]
        .window
        .api_requests_by_client_request
        .get(client)
        .cloned()
        .unwrap_or_default()
}

fn nothing_left(fx: &Fixture, run_id: &str) -> Result<()> {
    let client = fx.rt.block_on(fx.cluster.client())?;
    let left = fx.rt.block_on(runs_left(&client))?;
    ensure!(!left.contains_key(run_id), "left: {:?}", left.get(run_id));
    Ok(())
}

pub fn a_job_in_a_namespace_of_its_own(fx: &Fixture) -> Result<()> {
    let c = &fx.cluster;
    let t = target(c, c.kubeconfig().to_path_buf());
    let run_id = t.run_id.clone();
    let outside = command("outside", &["kubectl", "get", "namespaces"]);
    // A folder whose Job names no namespace: applied into the run's, and
    // waited for there.
    let manifests = tempfile::tempdir()?;
    std::fs::write(
        manifests.path().join("job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: applied\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: registry.k8s.io/pause:3.10\n",
    )?;
    let applied = Variant {
        name: "applied".into(),
        workload: Workload::Apply(manifests.path().to_path_buf()),
    };
    let (opts, out) = options(t, vec![hello_job(), outside, applied])?;
    let r = fx.rt.block_on(measure(&opts))?;
    ensure!(r.figures.provider == "existing", "{}", r.figures.provider);
    ensure!(r.figures.capabilities.is_some(), "no capabilities recorded");
    let run = |v: &str| {
        r.runs
            .iter()
            .find(|x| x.variant == v)
            .context(v.to_string())
    };
    let (j, o) = (run("job")?, run("outside")?);
    ensure!(
        j.exit_code == 0,
        "kubectl create job exited {}",
        j.exit_code
    );
    ensure!(
        j.cluster
            .starts_with(&format!("namespace harness-{run_id}-job-")),
        "where: {}",
        j.cluster
    );
    let kubectl = format!("{WORKLOAD} (kubectl)");
    let made = requests(&r, "job", &kubectl);
    ensure!(
        made.get("create jobs") == Some(&1),
        "{kubectl}'s requests: {made:?}; clients: {:?}",
        r.figures.modes["job"]
            .result
            .window
            .api_requests_by_client
            .keys()
    );
    ensure!(
        requests(&r, "job", JOB_CONTROLLER).get("create pods") == Some(&1),
        "the Job controller's pod"
    );
    ensure!(
        j.settled
            .iter()
            .any(|s| s.starts_with("Job harness-") && s.contains("/hello Complete")),
        "the window closed before the Job completed: {:?}",
        j.settled
    );
    let m = &r.figures.modes["job"].result;
    ensure!(m.pods_created == 1, "pods created {}", m.pods_created);
    let a = run("applied")?;
    ensure!(
        a.exit_code == 0
            && a.settled.iter().any(|s| {
                s.starts_with(&format!("Job harness-{run_id}-applied-"))
                    && s.ends_with("/applied Complete")
            }),
        "the applied Job: exit {}, settled {:?}, stderr {:?}",
        a.exit_code,
        a.settled,
        std::fs::read_to_string(out.path().join(&a.output).join("stderr.log")).unwrap_or_default()
    );
    // Outside its namespace the account may do nothing: a result, not an
    // error of the harness.
    ensure!(o.exit_code != 0, "`kubectl get namespaces` was allowed");
    let err = std::fs::read_to_string(out.path().join(&o.output).join("stderr.log"))?;
    ensure!(err.contains("forbidden"), "its stderr: {err:?}");
    nothing_left(fx, &run_id)
}

pub fn apf_counts_the_workload_without_the_audit_log(fx: &Fixture) -> Result<()> {
    let c = &fx.cluster;
    let mut t = target(c, c.kubeconfig().to_path_buf());
    t.cluster.audit_log = None;
    t.cluster.attribution = Attribution::Apf;
    t.cluster.apf_identities = vec![
        Identity::user("jobset-controller", &[]),
        Identity::user("kwok-controller", &["system:masters"]),
    ];
    let run_id = t.run_id.clone();
    let (opts, _out) = options(t, vec![hello_job()])?;
    let from = c.audit_end()?;
    let r = fx.rt.block_on(measure(&opts))?;
    ensure!(r.runs[0].exit_code == 0, "exit {}", r.runs[0].exit_code);
    let w = &r.figures.modes["job"].result.window;
    ensure!(w.attribution == "apf", "{}", w.attribution);
    let apf = w
        .api_requests_by_client
        .iter()
        .filter(|(k, _)| k.starts_with(WORKLOAD))
        .map(|(_, n)| *n)
        .sum::<u64>();
    let ns = r.runs[0]
        .cluster
        .strip_prefix("namespace ")
        .context("where the run was")?;
    let user = format!("system:serviceaccount:{ns}:harness-workload");
    let (events, _) = c.audit_events(from)?;
    let mut seen = std::collections::HashSet::new();
    let audit = events
        .iter()
        .filter(|e| e.user.username == user && seen.insert(e.audit_id.clone()))
        .count() as u64;
    ensure!(
        audit > 0 && apf.abs_diff(audit) as f64 <= (0.05 * audit as f64).max(2.0),
        "the workload: APF {apf}, audit log {audit} (clients {:?})",
        w.api_requests_by_client
    );
    nothing_left(fx, &run_id)
}

pub fn a_user_without_rights_exits_3(fx: &Fixture) -> Result<()> {
    let c = &fx.cluster;
    let t = target(c, c.kubeconfig_of("eclccserver"));
    let run_id = t.run_id.clone();
    let (opts, _out) = options(t, vec![hello_job()])?;
    let e = fx
        .rt
        .block_on(measure(&opts))
        .err()
        .context("a user without rights measured")?;
    let msg = format!("{e:#}");
    ensure!(
        harness::error::exit_code(&e) == 3,
        "exit {}: {msg}",
        harness::error::exit_code(&e)
    );
    for what in ["create namespaces", "nothing was created"] {
        ensure!(msg.contains(what), "the error does not say {what:?}: {msg}");
    }
    nothing_left(fx, &run_id)
}
