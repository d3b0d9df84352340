//! One gang case as one trial, start to finish: a namespace and pool of
//! its own, the steps (or the latency measurement), cleanup, and a report
//! of what the server did. Never panics; always cleans up.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::k8s::K8sRelease;
use crate::metrics::attribution::Attributor;
use crate::workload::gang::case::{Case, Profile};
use crate::workload::gang::latency::LatencyReport;
use crate::workload::gang::trial::Trial;

/// What one trial did and saw.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialReport {
    pub case: String,
    pub description: String,
    pub minor: String,
    pub k8s_version: String,
    pub profile: Profile,
    pub passed: bool,
    /// The first failure, with its diff.
    pub failure: Option<String>,
    /// The behaviour the case pins down for this minor.
    pub behaviour: String,
    /// The release whose expectations a pre-release minor was held to
    /// ("1.37" for 1.38 where the case has no 1.38 entry): passing means
    /// that behaviour still holds, failing says what changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_from: Option<String>,
    /// Per step: what the server did.
    pub observations: Vec<String>,
    pub wall_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<LatencyReport>,
    /// What the case cost the API server inside its namespace, from the
    /// audit log (clusters that have one), steps only (not cleanup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestCost>,
}

/// API requests on objects of a trial's namespace, by client, from the
/// audit log; the runner's own applies and checks are set apart.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RequestCost {
    /// Everyone but the runner: controllers, scheduler, fake kubelets.
    pub total: u64,
    pub by_client: BTreeMap<String, u64>,
    /// The runner's own requests (applies, checks, polls).
    pub harness: u64,
}

impl RequestCost {
    /// "job-controller 12, kwok-controller 8" — the largest first.
    pub fn summary(&self) -> String {
        crate::metrics::attribution::largest_first(&self.by_client)
            .into_iter()
            .map(|(c, n)| format!("{} {n}", short_client(c)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A user name without its boilerplate prefix.
fn short_client(user: &str) -> &str {
    user.strip_prefix("system:serviceaccount:kube-system:")
        .or_else(|| user.strip_prefix("system:"))
        .unwrap_or(user)
}

/// The requests on `ns`'s objects in the audit log from `offset` on.
fn namespace_cost(cluster: &impl Cluster, offset: u64, ns: &str) -> Result<RequestCost> {
    let mut a = Attributor::new(&cluster.harness_users());
    cluster.visit_audit(offset, &mut |e| {
        if e.object_ref.as_ref().is_some_and(|o| o.namespace == ns) {
            a.add(&e);
        }
    })?;
    let a = a.finish();
    Ok(RequestCost {
        total: a.total,
        by_client: a.by_client,
        harness: a.harness,
    })
}

/// Run a case's steps as one trial; never panics, always cleans up.
pub async fn run_case(
    cluster: &impl Cluster,
    release: K8sRelease,
    name: &str,
    case: &Case,
    ns: &str,
) -> TrialReport {
    let started = Instant::now();
    let (rules, borrowed) = case.rules_for(release);
    let mut report = TrialReport {
        case: name.to_string(),
        description: case.description.clone(),
        minor: release.minor.to_string(),
        k8s_version: release.version.to_string(),
        profile: case.profile,
        passed: false,
        failure: None,
        behaviour: case.behaviour.get(rules).cloned().unwrap_or_default(),
        expected_from: borrowed.then(|| rules.to_string()),
        observations: Vec::new(),
        wall_s: 0.0,
        bench: None,
        requests: None,
    };
    let audit_from = cluster.audit_log().and_then(|_| cluster.audit_end().ok());
    let mut trial = match Trial::start(cluster, release, ns).await {
        Ok(mut t) => {
            t.rules = rules;
            t
        }
        Err(e) => {
            report.failure = Some(format!("{e:#}"));
            return report;
        }
    };
    let body = async {
        trial.add_nodes(case.pool).await?;
        if let Some(b) = &case.benchmark {
            report.bench = Some(crate::workload::gang::latency::run(&mut trial, b).await?);
            Ok(())
        } else {
            trial.run_steps(case).await
        }
    }
    .await;
    if let Some(offset) = audit_from {
        match namespace_cost(cluster, offset, ns) {
            Ok(cost) => report.requests = Some(cost),
            Err(e) => trial
                .observations
                .push(format!("request costs not read from the audit log: {e:#}")),
        }
    }
    let cleanup = trial.cleanup().await;
    report.observations = std::mem::take(&mut trial.observations);
    match (body, cleanup) {
        (Ok(()), Ok(())) => report.passed = true,
        (Err(e), _) => report.failure = Some(format!("{e:#}")),
        (Ok(()), Err(e)) => report.failure = Some(format!("cleaning up: {e:#}")),
    }
    report.wall_s = started.elapsed().as_secs_f64();
    report
}
