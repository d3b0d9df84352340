//! `measure --provider existing`: each run in a namespace of its own on a
//! cluster the harness did not start, under the rules `bench thor
//! --provider existing` keeps. Before anything is created the cluster is
//! probed for what the run needs (cluster::existing::probe: a lack is
//! exit 3 naming each piece); a cluster that runs other workloads needs
//! `--yes` (their load shares the window). Each run's namespace carries
//! the run id; the workload acts as the ServiceAccount `harness-workload`
//! of that namespace, bound to the `admin` ClusterRole there only (a
//! RoleBinding: it may do anything in its namespace and nothing outside),
//! through a token kubeconfig whose default namespace is the run's. Its
//! requests are told apart by the audit log (`--audit-log`) or by
//! FlowSchemas following it (`--attribution apf`). The namespace (and
//! every FlowSchema of the run) is removed after each run, on failure and
//! on Ctrl-C.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;

use crate::cluster::ExistingTarget;
use crate::cluster::apf_flows::ApfFlows;
use crate::cluster::existing::apf;
use crate::cluster::existing::lacks;
use crate::cluster::existing::probe;
use crate::cluster::existing::{ExistingCluster, site};
use crate::cluster::needs::{Access, Attribution, Capabilities, Needs};
use crate::cluster::provider::Cluster;
use crate::error::bad_input;
use crate::lifecycle::measured::identity::{ACCOUNT, Identity};

/// What the harness itself does on the cluster: the runs' namespaces, the
/// workload's ServiceAccount, token and RoleBinding, the pod watch, the
/// metrics, and the FlowSchemas with `--attribution apf`. Requests per
/// client need the audit log or APF: counting client-side sees only what
/// the harness runs itself, and a measured command is not that.
pub fn needs(attribution: Attribution) -> Result<Needs> {
    if attribution == Attribution::Client {
        return Err(bad_input(
            "--attribution client: counts only the requests of HPCC's kubectl in `bench thor`; a measured workload's requests come from the audit log (--audit-log) or --attribution apf",
        ));
    }
    let apf = attribution == Attribution::Apf;
    let mut access = crate::cluster::needs::run_access(apf);
    access.sort();
    Ok(Needs {
        access,
        audit_log: attribution == Attribution::Audit,
        apf,
        ..Needs::default()
    })
}

/// The namespace of one run (the existing provider's
/// `site::run_namespace`: a DNS label, at most 63 characters).
pub fn namespace_of(run_id: &str, variant: &str, round: u32) -> Result<String> {
    site::run_namespace(run_id, variant, round)
}

/// Probe the attached cluster (the table to stderr); refuse before
/// anything is created when it lacks something, or runs other workloads
/// without `--yes`.
pub async fn prepare(
    cluster: &ExistingCluster,
    target: &ExistingTarget,
    first_variant: &str,
) -> Result<Capabilities> {
    let needs = needs(target.cluster.attribution)?;
    let ns = namespace_of(&target.run_id, first_variant, 0)?;
    let busy = |others: u64| {
        format!(
            "the cluster runs other workloads ({others} pods outside kube-* namespaces): their requests are told apart by client, but their CPU, memory and etcd writes share the window with the workload's; add --yes to measure anyway"
        )
    };
    lacks::require_run(cluster, target, &needs, &ns, Some(&busy)).await
}

/// One run's place on the cluster: the workload's identity in its
/// namespace, and the FlowSchemas that follow it (apf).
pub struct Site {
    pub identity: Identity,
    pub apf: Option<ApfFlows>,
}

/// The RoleBinding that makes the workload's account admin of its
/// namespace.
fn binding(ns: &str) -> serde_json::Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": ACCOUNT, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": ns}],
    })
}

/// Make the run's namespace, the workload's identity in it (token valid
/// `ttl`, its kubeconfig in `dir`) and, with `--attribution apf`, the
/// FlowSchemas that follow the workload, the harness and the controllers.
pub async fn site(
    cluster: &ExistingCluster,
    target: &ExistingTarget,
    ns: &str,
    dir: &Path,
    ttl: Duration,
) -> Result<Site> {
    let admin = cluster.client().await?;
    site::create_namespace(&admin, ns, &target.run_id).await?;
    crate::install::apply::apply_all(&admin, &[binding(ns)])
        .await
        .with_context(|| format!("binding {ACCOUNT} to the admin ClusterRole in {ns}"))?;
    let opts = &cluster.opts;
    let (kubeconfig, _) = site::service_account_kubeconfig(
        &admin,
        &opts.kubeconfig,
        opts.context.as_deref(),
        ns,
        ACCOUNT,
        dir,
        ttl,
    )
    .await?;
    site::default_namespace(&kubeconfig, ns)?;
    let client = crate::cluster::client::client_from_kubeconfig(&kubeconfig).await?;
    // The API server's authorizer sees a new RoleBinding a moment after it
    // is stored: the workload starts once the server says it may act.
    let may = Access::new("patch", "batch", "jobs", true);
    crate::poll::Poll::new(
        format!("{ACCOUNT} allowed to {} in {ns}", may.label()),
        Duration::from_secs(30),
    )
    .every(Duration::from_millis(200))
    .until(|| async { Ok(probe::allowed(&client, &may, ns).await?.then_some(())) })
    .await?;
    let apf = match cluster
        .apf_plan(vec![apf::Identity::service_account(ns, ACCOUNT)])
        .await?
    {
        Some(plan) => {
            apf::install(&admin, &plan).await?;
            Some(plan.flows)
        }
        None => None,
    };
    Ok(Site {
        identity: Identity { kubeconfig, client },
        apf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_asks_for_its_own_access_and_no_more() {
        let n = needs(Attribution::Audit).unwrap();
        assert!(n.audit_log && !n.apf && !n.jobset && !n.kwok_nodes && !n.real_nodes);
        let labels: Vec<String> = n.access.iter().map(Access::label).collect();
        assert!(labels.contains(&"create serviceaccounts/token in the run's namespace".into()));
        assert!(labels.contains(&"delete namespaces cluster-wide".into()));
        assert!(!labels.iter().any(|l| l.contains("flowschemas")));
        let a = needs(Attribution::Apf).unwrap();
        assert!(a.apf && !a.audit_log);
        assert!(a.access.iter().any(|x| x.resource == "flowschemas"));
        let e = needs(Attribution::Client).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    }

    #[test]
    fn each_run_has_a_namespace_of_its_own_within_a_dns_label() {
        assert_eq!(namespace_of("r1", "one", 2).unwrap(), "harness-r1-one-2");
        assert_ne!(
            namespace_of("r1", "one", 0).unwrap(),
            namespace_of("r1", "one", 1).unwrap()
        );
        let long = "a".repeat(50);
        let e = namespace_of("abcdefgh", &long, 0).unwrap_err();
        assert!(format!("{e}").contains("63"), "{e}");
    }

    #[test]
    fn the_workload_is_admin_of_its_namespace_only() {
        let b = binding("harness-r1-a-0");
        assert_eq!(b["kind"], "RoleBinding");
        assert_eq!(b["metadata"]["namespace"], "harness-r1-a-0");
        assert_eq!(b["roleRef"]["kind"], "ClusterRole");
        assert_eq!(b["roleRef"]["name"], "admin");
        assert_eq!(b["subjects"][0]["namespace"], "harness-r1-a-0");
    }
}
