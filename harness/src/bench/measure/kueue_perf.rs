//! `measure --kueue-perf CONFIG`: Kueue's own scheduling-performance
//! runner (`kueue-perf-runner`, the Kueue module's
//! test/performance/scheduler/runner) as the workload, on a cluster with
//! Kueue. It creates the cohorts, ClusterQueues, LocalQueues and
//! Workloads its generator config asks for, finishes each admitted
//! Workload after its runtime itself (no pods), records what its watches
//! saw and writes summary.yaml; its figures are read from there and kept
//! beside the harness's.
//!
//! The two time different things: the runner's "time to admission" runs
//! from the first event its informer saw of a Workload (after the create
//! came back through its watch) to the event that shows it admitted, and
//! "time to finish" to the event that shows it finished, averaged per
//! workload class; the harness's window runs from before the runner
//! starts until the cluster has settled after it exits (the runner's
//! start-up, queue creation and final clean-up included).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// One workload class in the runner's summary.yaml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassFigures {
    #[serde(default)]
    pub count: u64,
    #[serde(default)]
    pub total_evictions: u64,
    #[serde(default)]
    pub average_time_to_admission_ms: u64,
    #[serde(default)]
    pub average_time_to_finish_ms: u64,
}

/// One ClusterQueue class in the runner's summary.yaml (CPU in its own
/// units: milli-CPU × ms used, and the average over the monitored span).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueFigures {
    #[serde(default)]
    pub cpu_used: i64,
    #[serde(default)]
    pub cpu_average_usage: i64,
    #[serde(default)]
    pub nominal_quota: i64,
}

/// The runner's own figures of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunnerFigures {
    pub variant: String,
    pub round: u32,
    pub workload_classes: BTreeMap<String, ClassFigures>,
    pub cluster_queue_classes: BTreeMap<String, QueueFigures>,
    pub dropped_workload_events: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    #[serde(default)]
    cluster_queue_classes: BTreeMap<String, QueueFigures>,
    #[serde(default)]
    workload_classes: BTreeMap<String, ClassFigures>,
    #[serde(default)]
    dropped_workload_events: u64,
}

/// The runner's command line: its output into `dir`, our config, the
/// record timeout.
pub fn argv(runner: &Path, config: &Path, dir: &Path, timeout_s: u64) -> Vec<String> {
    vec![
        runner.display().to_string(),
        "-o".into(),
        dir.display().to_string(),
        "-generatorConfig".into(),
        config.display().to_string(),
        "-timeout".into(),
        format!("{timeout_s}s"),
    ]
}

/// The runner's environment beyond KUBECONFIG: Kueue's test utilities,
/// which it links, look for their repository at start-up (PROJECT_DIR, of
/// which they take the parent, or a Makefile above the working
/// directory) and fail without one; the run's folder stands in (nothing
/// is read from it when the runner uses an existing cluster).
pub fn env(run_dir: &Path) -> Vec<(String, String)> {
    vec![(
        "PROJECT_DIR".to_string(),
        run_dir.join("kueue-perf").display().to_string(),
    )]
}

/// Read the runner's summary.yaml.
pub fn read_summary(path: &Path, variant: &str, round: u32) -> Result<RunnerFigures> {
    let text = crate::input::read(path)?;
    let doc = crate::yaml::documents(&text, &path.display().to_string())?
        .into_iter()
        .next()
        .with_context(|| format!("{}: empty", path.display()))?;
    let s: Summary = serde_json::from_value(doc)
        .with_context(|| format!("{}: not the runner's summary", path.display()))?;
    Ok(RunnerFigures {
        variant: variant.into(),
        round,
        workload_classes: s.workload_classes,
        cluster_queue_classes: s.cluster_queue_classes,
        dropped_workload_events: s.dropped_workload_events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runners_summary_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("summary.yaml");
        // The shape its recorder writes (sigs.k8s.io/yaml of its Summary).
        std::fs::write(
            &p,
            "clusterQueueClasses:\n  cq:\n    cpuAverageUsage: 3\n    cpuUsed: 8000\n    firstEventTime: \"2026-11-26T15:00:00Z\"\n    lastEventTime: \"2026-11-26T15:00:05Z\"\n    nominalQuota: 20000\ndroppedWorkloadEvents: 0\nworkloadClasses:\n  small:\n    averageTimeToAdmissionMs: 41\n    averageTimeToFinishMs: 260\n    count: 40\n    totalEvictions: 0\n",
        )
        .unwrap();
        let f = read_summary(&p, "v", 0).unwrap();
        assert_eq!(f.workload_classes["small"].count, 40);
        assert_eq!(f.workload_classes["small"].average_time_to_admission_ms, 41);
        assert_eq!(f.cluster_queue_classes["cq"].nominal_quota, 20000);
        std::fs::write(&p, "- 1\n").unwrap();
        assert!(read_summary(&p, "v", 0).is_err());
        let a = argv(Path::new("/r"), Path::new("/c.yaml"), Path::new("/o"), 60);
        assert_eq!(
            a.join(" "),
            "/r -o /o -generatorConfig /c.yaml -timeout 60s"
        );
    }
}
