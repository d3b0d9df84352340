//! One gang case as one trial, start to finish: a namespace and pool of
//! its own, the steps (or the latency measurement), cleanup, and a report
//! of what the server did. Never panics; always cleans up.

use std::time::Instant;

use serde::Serialize;

use crate::cluster::Cluster;
use crate::k8s::K8sRelease;
use crate::workload::gang::case::{Case, Profile};
use crate::workload::gang::latency::LatencyReport;
use crate::workload::gang::trial::Trial;

/// What one trial did and saw.
#[derive(Debug, Clone, Serialize)]
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
    /// Per step: what the server did.
    pub observations: Vec<String>,
    pub wall_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bench: Option<LatencyReport>,
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
    let mut report = TrialReport {
        case: name.to_string(),
        description: case.description.clone(),
        minor: release.minor.to_string(),
        k8s_version: release.version.to_string(),
        profile: case.profile,
        passed: false,
        failure: None,
        behaviour: case
            .behaviour
            .get(release.minor)
            .cloned()
            .unwrap_or_default(),
        observations: Vec::new(),
        wall_s: 0.0,
        bench: None,
    };
    let mut trial = match Trial::start(cluster, release, ns).await {
        Ok(t) => t,
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
