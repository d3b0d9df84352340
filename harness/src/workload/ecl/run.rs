//! One ECL case on a cluster with HPCC: submit it through ESP, wait for
//! the end, check its results, and measure the window around it with the one
//! measurement window (metrics::Window) and a pod watch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};

use crate::cluster::Cluster;
use crate::metrics::Window;
use crate::metrics::pods::PodTracker;
use crate::workload::ecl::cases::EclCase;
use crate::workload::ecl::report::EclCaseRecord;
use crate::workload::ecl::wsworkunits::{EspClient, Execution, PollPolicy, ResultRef, WuState};

/// Rows fetched per WUResult call, and the most a check fetches.
const PAGE: u64 = 1000;
const MAX_ROWS: u64 = 200_000;

/// Which part of a Thor instance a pod is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThorRole {
    Manager,
    Worker,
}

/// Classify a pod as a Thor manager or worker from the marks HPCC's chart
/// puts on them (`component: thormanager|thorworker`, the same in
/// `app.kubernetes.io/component`, Job names `thormanager-job-…` /
/// `thorworker-job-…`) or a JobSet's (`hpcc.thor/role`, or the replicated
/// Job name `manager`/`workers` on pods labelled `app: thor`).
pub fn thor_role(name: &str, labels: &BTreeMap<String, String>) -> Option<ThorRole> {
    let l = |k: &str| labels.get(k).map(String::as_str);
    for key in ["component", "app.kubernetes.io/component"] {
        match l(key) {
            Some("thormanager") => return Some(ThorRole::Manager),
            Some("thorworker") => return Some(ThorRole::Worker),
            _ => {}
        }
    }
    match l("hpcc.thor/role") {
        Some("manager") => return Some(ThorRole::Manager),
        Some("worker") => return Some(ThorRole::Worker),
        _ => {}
    }
    if l("app") == Some("thor") {
        match l("jobset.sigs.k8s.io/replicatedjob-name") {
            Some("manager") => return Some(ThorRole::Manager),
            Some("workers") | Some("worker") => return Some(ThorRole::Worker),
            _ => {}
        }
    }
    if name.starts_with("thormanager-job-") {
        return Some(ThorRole::Manager);
    }
    if name.starts_with("thorworker-job-") {
        return Some(ThorRole::Worker);
    }
    None
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Namespace HPCC runs in (where Thor pods appear).
    pub namespace: String,
    /// ESP target cluster to submit to.
    pub target: String,
    pub poll: PollPolicy,
    /// The workunit in flight, if any (for a Ctrl-C handler to abort).
    pub in_flight: Arc<Mutex<Option<String>>>,
}

/// Run `case` and record it; a failure anywhere is in the record's
/// `error`, with whatever was measured up to there.
pub async fn run_case(
    cluster: &impl Cluster,
    esp: &EspClient,
    case: &EclCase,
    mode: &str,
    opts: &RunOptions,
) -> EclCaseRecord {
    let mut rec = EclCaseRecord {
        case: case.name.clone(),
        mode: mode.to_string(),
        ..Default::default()
    };
    if let Err(e) = measure(cluster, esp, case, opts, &mut rec).await {
        rec.error = Some(format!("{e:#}"));
    }
    rec.passed = rec.error.is_none();
    rec
}

async fn measure(
    cluster: &impl Cluster,
    esp: &EspClient,
    case: &EclCase,
    opts: &RunOptions,
    rec: &mut EclCaseRecord,
) -> Result<()> {
    let client = cluster.client().await?;
    let tracker = PodTracker::start(client, &opts.namespace);
    // Let the watch list what is there already; those pods are not counted.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let existing: BTreeSet<String> = tracker.snapshot().into_iter().map(|p| p.name).collect();
    let mut window = Window::open(cluster).await?;

    let mut poll = opts.poll.clone();
    if let Some(t) = case.expected.timeout_s {
        poll.timeout = Duration::from_secs(t);
    }
    let jobname = format!("harness-{}-{}", case.name, rec.mode);
    let slot = opts.in_flight.clone();
    let remember = move |w: &str| {
        if let Ok(mut s) = slot.lock() {
            *s = Some(w.to_string());
        }
    };
    let run = window
        .during(
            cluster,
            esp.run_tracked(&case.ecl, &jobname, &opts.target, &poll, &remember),
        )
        .await;
    if let Ok(mut s) = opts.in_flight.lock() {
        *s = None;
    }
    // Results are checked after the window closes, so their fetching is
    // not in the figures.
    let closed = window.close(cluster).await?;
    let new_pods: Vec<_> = tracker
        .snapshot()
        .into_iter()
        .filter(|p| !existing.contains(&p.name))
        .collect();
    drop(tracker);
    rec.measured = true;
    rec.window = closed.figures;
    rec.pods_created = new_pods.len() as u64;
    rec.containers_created = new_pods.iter().map(|p| u64::from(p.containers)).sum();
    for p in &new_pods {
        match thor_role(&p.name, &p.labels) {
            Some(ThorRole::Manager) => rec.thor_manager_pods += 1,
            Some(ThorRole::Worker) => rec.thor_worker_pods += 1,
            None => {}
        }
    }

    let Execution {
        wuid,
        info,
        elapsed,
    } = run?;
    rec.wuid = Some(wuid.clone());
    rec.state = Some(info.state.name().to_string());
    rec.wall_s = elapsed.as_secs_f64();
    if info.state != WuState::Completed {
        let errors = info.errors();
        bail!(
            "workunit {wuid} ended {}{}",
            info.state,
            if errors.is_empty() {
                String::new()
            } else {
                format!(": {}", errors.join("; "))
            }
        );
    }
    check_results(esp, &wuid, case).await
}

/// Fetch every expected result and compare it.
pub async fn check_results(esp: &EspClient, wuid: &str, case: &EclCase) -> Result<()> {
    let mut problems = Vec::new();
    for (name, want) in &case.expected.results {
        let page = esp
            .result_rows(wuid, &ResultRef::Name(name.clone()), PAGE, MAX_ROWS)
            .await;
        let outcome = page
            .and_then(|p| crate::workload::ecl::cases::check_result(name, want, p.total, &p.rows));
        if let Err(e) = outcome {
            problems.push(format!("{e:#}"));
        }
    }
    if !problems.is_empty() {
        bail!(
            "workunit {wuid} completed but its results differ from {}:\n{}",
            case.expected_path.display(),
            problems.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn thor_pods_are_told_apart() {
        let none = labels(&[]);
        assert_eq!(
            thor_role(
                "x",
                &labels(&[("app", "thor"), ("component", "thormanager")])
            ),
            Some(ThorRole::Manager)
        );
        assert_eq!(
            thor_role(
                "x",
                &labels(&[("app.kubernetes.io/component", "thorworker")])
            ),
            Some(ThorRole::Worker)
        );
        assert_eq!(
            thor_role("x", &labels(&[("hpcc.thor/role", "worker")])),
            Some(ThorRole::Worker)
        );
        assert_eq!(
            thor_role(
                "x",
                &labels(&[
                    ("app", "thor"),
                    ("jobset.sigs.k8s.io/replicatedjob-name", "manager")
                ])
            ),
            Some(ThorRole::Manager)
        );
        // A JobSet's replicated-job label alone does not make a pod Thor's.
        assert_eq!(
            thor_role(
                "x",
                &labels(&[("jobset.sigs.k8s.io/replicatedjob-name", "manager")])
            ),
            None
        );
        assert_eq!(
            thor_role("thormanager-job-thor-abc-1-xyz", &none),
            Some(ThorRole::Manager)
        );
        assert_eq!(
            thor_role("thorworker-job-thor-abc-1-0-q", &none),
            Some(ThorRole::Worker)
        );
        assert_eq!(
            thor_role("eclwatch-7d9c-abcde", &labels(&[("app", "eclwatch")])),
            None
        );
        assert_eq!(
            thor_role("thor-thoragent-5f-x", &labels(&[("app", "thor")])),
            None
        );
    }
}
