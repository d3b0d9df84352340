//! The rounds of `harness bench cron`: its options checked before any
//! cluster, each round on a fresh cluster (the CronJobs created, K minutes
//! measured in one window), the Result filled round by round.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::{ShardOf, Statistics};
use crate::bench::core::rounds::Progress;
use crate::bench::core::shard::Shard;
use crate::bench::cron::result::{CronResult, CronRun, CronShape, MODE};
use crate::cluster::pool::{POD_COMPLETE_DELAY, POD_COMPLETE_JITTER};
use crate::cluster::profile::ControlPlane;
use crate::cluster::{Cluster, ClusterSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::timeline::Timeline;
use crate::metrics::window::Window;
use crate::progress::Step;
use crate::tools::Component;

/// After the last schedule time: room for its Jobs to run and finish.
const SETTLE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
pub struct CronBenchOptions {
    pub tenants: u32,
    pub cronjobs: u32,
    pub minutes: u32,
    /// How long each scheduled run's pod runs on its fake node.
    pub pod_seconds: u32,
    pub release: K8sRelease,
    pub bins: BTreeMap<Component, PathBuf>,
    /// Name of the clusters (round N's is `<name>-N`).
    pub cluster_name: String,
    pub control_plane: ControlPlane,
    /// Rounds, each on a fresh cluster.
    pub rounds: u32,
    /// `--shard K/N`: run only this slice of the rounds.
    pub shard: Option<Shard>,
}

impl CronBenchOptions {
    /// Every check before the cluster starts.
    pub fn check(&self) -> Result<()> {
        if self.tenants == 0 || self.cronjobs == 0 || self.minutes == 0 {
            return Err(bad_input(
                "--tenants, --cronjobs and --minutes must each be ≥ 1",
            ));
        }
        crate::bench::core::rounds::check_repeat(self.rounds)?;
        // One mode: the order needs no seed, every shard takes its slice.
        if let Some(sh) = self.shard {
            sh.check(self.rounds, Some(0))?;
        }
        if self.pod_seconds >= 50 {
            return Err(bad_input(
                "--pod-seconds must be < 50: a run must end before the next minute's",
            ));
        }
        if u64::from(self.tenants) * u64::from(self.cronjobs) > 3 * 110 {
            return Err(bad_input(format!(
                "{} tenants × {} CronJobs run more pods at once than the cluster's 3 nodes × 110 hold",
                self.tenants, self.cronjobs
            )));
        }
        Ok(())
    }

    pub fn expected_runs(&self) -> u64 {
        u64::from(self.tenants) * u64::from(self.cronjobs) * u64::from(self.minutes)
    }
}

/// One tenant's CronJob: every minute, Forbid, history 1 of each kind,
/// its pod on the fake nodes for `pod_seconds`.
pub fn cronjob(name: &str, pod_seconds: u32) -> serde_json::Value {
    let run = format!("{pod_seconds}s");
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "* * * * *",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": {POD_COMPLETE_DELAY: run, POD_COMPLETE_JITTER: run}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "task", "image": "registry.k8s.io/pause:3.10"}]
                }
            }}}
        }
    })
}

/// Until the K-th minute boundary after now, plus `SETTLE`.
fn window_length(now: SystemTime, minutes: u32) -> Duration {
    let secs = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let to_boundary = 60.0 - secs % 60.0;
    Duration::from_secs_f64(to_boundary + 60.0 * f64::from(minutes - 1)) + SETTLE
}

/// What a cron round does not measure: it watches no pod.
const NOT_WATCHED: &str = "pod start-up and containers (bench cron watches no pod)";

/// Each round: start a cluster, create the CronJobs, measure K minutes,
/// stop it; the Result so far saved into `out` after each round.
pub async fn bench_cron(opts: &CronBenchOptions, out: Option<&Path>) -> Result<CronResult> {
    opts.check()?;
    // One mode: the order needs no seed (0), every shard takes its slice.
    let plan = crate::bench::core::rounds::plan(&[MODE], opts.rounds, 0, opts.shard);
    let mine: Vec<Vec<String>> = plan
        .iter()
        .map(|(_, r)| r.iter().map(|m| m.to_string()).collect())
        .collect();
    let statistics = Statistics {
        shard: opts.shard.map(|sh| ShardOf {
            k: sh.k,
            n: sh.n,
            first: plan.first().map_or(0, |r| r.0),
            of: opts.rounds as usize,
        }),
        ..Statistics::new(0, mine, MODE.into())
    };
    let shape = CronShape {
        tenants: opts.tenants,
        cronjobs: opts.cronjobs,
        minutes: opts.minutes,
        pod_seconds: opts.pod_seconds,
        expected_runs: opts.expected_runs(),
    };
    let result = CronResult {
        model: opts.control_plane.describe(),
        ..CronResult::begin(
            MODE,
            "local",
            opts.release.version.to_string(),
            shape,
            statistics,
        )
    };
    let mut progress = Progress::new(result, out);
    for (round, _) in &plan {
        let name = format!("{}-{round}", opts.cluster_name);
        let cluster = lifecycle::up(&UpOptions {
            spec: ClusterSpec {
                control_plane: opts.control_plane.clone(),
                ..ClusterSpec::new(&name, opts.release.minor)
            },
            bins: opts.bins.clone(),
            timeout: Duration::from_secs(180),
        })
        .await?;
        let r = measure(&cluster, opts).await;
        let down = cluster.down(false);
        let (run, timeline) = r.with_context(|| format!("cron benchmark on cluster {name}"))?;
        down?;
        progress.add(MODE, *round, run, timeline)?;
    }
    Ok(progress.result)
}

async fn measure(cluster: &impl Cluster, opts: &CronBenchOptions) -> Result<(CronRun, Timeline)> {
    let client = cluster.client().await?;
    let step = Step::start(format!(
        "{} tenants × {} CronJobs",
        opts.tenants, opts.cronjobs
    ));
    for t in 0..opts.tenants {
        let ns = format!("tenant-{t}");
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await
            .with_context(|| format!("creating namespace {ns}"))?;
        let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), &ns);
        for c in 0..opts.cronjobs {
            let obj: CronJob =
                serde_json::from_value(cronjob(&format!("task-{c}"), opts.pod_seconds))?;
            cronjobs
                .create(&PostParams::default(), &obj)
                .await
                .with_context(|| format!("creating CronJob {ns}/task-{c}"))?;
        }
    }
    step.done("created");
    let length = window_length(SystemTime::now(), opts.minutes);
    let step = Step::start(format!(
        "{} schedule time(s): measuring for {:.0} s",
        opts.minutes,
        length.as_secs_f64()
    ));
    let mut window = Window::open(cluster).await?;
    window.during(cluster, tokio::time::sleep(length)).await;
    let closed = window.close(cluster).await?;
    step.done("measured");
    let mut f = closed.figures;
    f.not_measured.push(NOT_WATCHED.to_string());
    let scheduled_runs = f.objects_created.get("jobs").copied().unwrap_or(0);
    let pods = f.objects_created.get("pods").copied().unwrap_or(0);
    let run = CronRun {
        figures: RunFigures {
            mode: MODE.into(),
            pods_created: pods,
            wall_s: closed.elapsed.as_secs_f64(),
            window: f,
            ..RunFigures::default()
        },
        scheduled_runs,
    };
    Ok((run, closed.timeline))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(tenants: u32, cronjobs: u32, minutes: u32, pod_seconds: u32) -> CronBenchOptions {
        CronBenchOptions {
            tenants,
            cronjobs,
            minutes,
            pod_seconds,
            release: K8sRelease::default_release(),
            bins: Default::default(),
            cluster_name: "t".into(),
            control_plane: Default::default(),
            rounds: 1,
            shard: None,
        }
    }

    #[test]
    fn options_are_checked_before_any_cluster() {
        assert!(opts(5, 4, 3, 2).check().is_ok());
        assert_eq!(opts(5, 4, 3, 2).expected_runs(), 60);
        for bad in [
            opts(0, 4, 3, 2),
            opts(5, 0, 3, 2),
            opts(5, 4, 0, 2),
            opts(5, 4, 3, 50),
            opts(40, 10, 1, 2),
        ] {
            let e = bad.check().unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        }
    }

    #[test]
    fn the_window_ends_after_the_last_schedule_time_and_its_runs() {
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        // 15 s before a minute boundary, 3 minutes: 15 + 120 + settle.
        assert_eq!(
            window_length(at(60 * 100 - 15), 3),
            Duration::from_secs(135) + SETTLE
        );
        // On a boundary: the next one is a full minute away.
        assert_eq!(
            window_length(at(60 * 100), 1),
            Duration::from_secs(60) + SETTLE
        );
    }

    #[test]
    fn a_cronjob_is_forbid_with_short_history() {
        let c = cronjob("task-0", 2);
        assert_eq!(c["spec"]["concurrencyPolicy"], "Forbid");
        let _: CronJob = serde_json::from_value(c).unwrap();
    }
}
