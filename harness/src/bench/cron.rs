//! `harness bench cron`: what scheduled jobs cost the control plane. N
//! tenants (a namespace each) × M CronJobs each, every one firing every
//! minute for K minutes on a fresh local cluster — the shape a platform
//! that moves users from a batch grid's cron onto Kubernetes runs (one
//! namespace per tool, a few scheduled jobs each, `concurrencyPolicy:
//! Forbid`, short history). One measurement window (metrics::window) over
//! the K minutes: requests by client from the audit log and etcd writes,
//! divided by the scheduled runs (the Jobs the CronJob controller created
//! in the window, from the audit log). With `--repeat N`, N rounds on
//! fresh clusters: the figures are their means, each with its spread
//! over the rounds (bench::core::over_rounds). Not part of `cargo test`; the
//! batch suite keeps a CronJob case.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::bench::core::over_rounds::MetricRounds;
use crate::bench::core::result::{MergedShard, ShardOf};
use crate::bench::core::shard::Shard;
use crate::cluster::pool::{POD_COMPLETE_DELAY, POD_COMPLETE_JITTER};
use crate::cluster::profile::ControlPlane;
use crate::cluster::{Cluster, ClusterSpec};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::lifecycle::{self, UpOptions};
use crate::metrics::window::Window;
use crate::progress::Step;
use crate::stats::Rule;
use crate::tools::Component;

pub const SCHEMA: &str = "harness.cron-load/v1";

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
        if self.rounds == 0 {
            return Err(bad_input("--repeat 0: must be at least 1 (rounds)"));
        }
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

/// One round's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CronRound {
    pub window_s: f64,
    /// Jobs the CronJob controller created in the window.
    pub scheduled_runs: u64,
    /// Everyone but the harness.
    pub api_requests: u64,
    pub etcd_writes: u64,
    pub requests_per_run: f64,
    pub etcd_writes_per_run: f64,
    pub api_requests_by_client: BTreeMap<String, u64>,
    pub objects_created: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronBenchResult {
    pub schema: String,
    pub harness_version: String,
    pub k8s_version: String,
    pub tenants: u32,
    pub cronjobs: u32,
    pub minutes: u32,
    pub pod_seconds: u32,
    /// tenants × cronjobs × minutes.
    pub expected_runs: u64,
    /// The mean round (one round: that round).
    #[serde(flatten)]
    pub mean: CronRound,
    /// Every round, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<CronRound>,
    /// With rounds: each per-run figure's spread over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub over_rounds: Vec<MetricRounds>,
    /// A shard's place in its run set (`--shard K/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardOf>,
    /// A merged run set's shards (`report merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<MergedShard>,
}

/// The result of `rounds` of `opts`' workload: their mean, each round,
/// their spread.
fn of_rounds(like: &CronBenchResult, rounds: Vec<CronRound>) -> CronBenchResult {
    CronBenchResult {
        mean: mean_round(&rounds),
        over_rounds: over_rounds(&rounds),
        rounds: match rounds.len() {
            1 => Vec::new(),
            _ => rounds,
        },
        ..like.clone()
    }
}

/// The shards of one cron run set joined (`report merge`): their rounds
/// in order, the mean and spreads taken again. Refused unless they ran
/// the same workload on the same release.
pub fn merge(mut parts: Vec<(String, CronBenchResult)>) -> Result<CronBenchResult> {
    let key = |r: &CronBenchResult| {
        (
            r.k8s_version.clone(),
            r.tenants,
            r.cronjobs,
            r.minutes,
            r.pod_seconds,
            r.shard.as_ref().map(|s| (s.n, s.of)),
        )
    };
    let (first_from, first) = parts.first().context("no shard given")?.clone();
    for (from, r) in &parts {
        if r.shard.is_none() {
            return Err(bad_input(format!(
                "report merge: {from}: not a shard (it ran without --shard)"
            )));
        }
        if key(r) != key(&first) {
            return Err(bad_input(format!(
                "report merge: {from} is not a shard of the run set of {first_from} (release or workload differ)"
            )));
        }
    }
    parts.sort_by_key(|(_, r)| r.shard.as_ref().map_or(0, |s| s.first));
    let rounds: Vec<CronRound> = parts
        .iter()
        .flat_map(|(_, r)| match r.rounds.is_empty() {
            true => vec![r.mean.clone()],
            false => r.rounds.clone(),
        })
        .collect();
    let merged = parts
        .iter()
        .map(|(from, r)| {
            let sh = r.shard.as_ref().expect("checked above");
            MergedShard::of(sh, String::new(), None, from.clone())
        })
        .collect();
    Ok(CronBenchResult {
        shard: None,
        merged,
        ..of_rounds(&first, rounds)
    })
}

/// The mean of `rounds` (not empty), field by field; per-run figures are
/// the mean of each round's.
pub fn mean_round(rounds: &[CronRound]) -> CronRound {
    let n = rounds.len().max(1) as f64;
    let mean = |f: fn(&CronRound) -> f64| rounds.iter().map(f).sum::<f64>() / n;
    let counts = |f: fn(&CronRound) -> &BTreeMap<String, u64>| {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for r in rounds {
            for (k, v) in f(r) {
                *out.entry(k.clone()).or_default() += *v as f64 / n;
            }
        }
        out.into_iter()
            .map(|(k, v)| (k, v.round() as u64))
            .collect::<BTreeMap<_, _>>()
    };
    CronRound {
        window_s: mean(|r| r.window_s),
        scheduled_runs: mean(|r| r.scheduled_runs as f64).round() as u64,
        api_requests: mean(|r| r.api_requests as f64).round() as u64,
        etcd_writes: mean(|r| r.etcd_writes as f64).round() as u64,
        requests_per_run: mean(|r| r.requests_per_run),
        etcd_writes_per_run: mean(|r| r.etcd_writes_per_run),
        api_requests_by_client: counts(|r| &r.api_requests_by_client),
        objects_created: counts(|r| &r.objects_created),
    }
}

/// The per-run figures' spread over `rounds` (nothing for one round).
pub fn over_rounds(rounds: &[CronRound]) -> Vec<MetricRounds> {
    if rounds.len() < 2 {
        return Vec::new();
    }
    type Figure = (&'static str, fn(&CronRound) -> f64);
    let per: [Figure; 3] = [
        ("API requests / scheduled run", |r| r.requests_per_run),
        ("etcd writes / scheduled run", |r| r.etcd_writes_per_run),
        ("scheduled runs", |r| r.scheduled_runs as f64),
    ];
    per.into_iter()
        .map(|(name, f)| {
            crate::bench::core::over_rounds::metric(
                name,
                rounds.iter().map(f).collect(),
                None,
                Rule::COUNT,
            )
        })
        .collect()
}

/// Requests and writes per scheduled run (0 when nothing ran).
pub fn per_run(total: u64, runs: u64) -> f64 {
    if runs == 0 {
        0.0
    } else {
        total as f64 / runs as f64
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

/// Each round: start a cluster, create the CronJobs, measure K minutes,
/// stop it.
pub async fn bench_cron(opts: &CronBenchOptions) -> Result<CronBenchResult> {
    opts.check()?;
    let mut rounds = Vec::new();
    let take = opts
        .shard
        .map_or(0..opts.rounds as usize, |s| s.rounds(opts.rounds as usize));
    for round in take.clone() {
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
        rounds.push(r.with_context(|| format!("cron benchmark on cluster {name}"))?);
        down?;
    }
    let like = CronBenchResult {
        schema: SCHEMA.into(),
        harness_version: env!("CARGO_PKG_VERSION").into(),
        k8s_version: opts.release.version.to_string(),
        tenants: opts.tenants,
        cronjobs: opts.cronjobs,
        minutes: opts.minutes,
        pod_seconds: opts.pod_seconds,
        expected_runs: opts.expected_runs(),
        mean: CronRound::default(),
        over_rounds: Vec::new(),
        rounds: Vec::new(),
        shard: opts.shard.map(|sh| ShardOf {
            k: sh.k,
            n: sh.n,
            first: take.start,
            of: opts.rounds as usize,
        }),
        merged: Vec::new(),
    };
    Ok(of_rounds(&like, rounds))
}

async fn measure(cluster: &impl Cluster, opts: &CronBenchOptions) -> Result<CronRound> {
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
    let f = closed.figures;
    let runs = f.objects_created.get("jobs").copied().unwrap_or(0);
    Ok(CronRound {
        window_s: closed.elapsed.as_secs_f64(),
        scheduled_runs: runs,
        api_requests: f.api_requests_total,
        etcd_writes: f.etcd_writes_total,
        requests_per_run: per_run(f.api_requests_total, runs),
        etcd_writes_per_run: per_run(f.etcd_writes_total, runs),
        api_requests_by_client: f.api_requests_by_client,
        objects_created: f.objects_created,
    })
}

/// The figures as a Markdown table, clients by requests per run.
pub fn markdown(r: &CronBenchResult) -> String {
    let m = &r.mean;
    let rounds = match r.rounds.len() {
        0 | 1 => String::new(),
        n => format!(" (means of {n} rounds, each on a fresh cluster)"),
    };
    let mut out = format!(
        "## Scheduled jobs (harness bench cron)\n\n\
         Kubernetes {}: {} tenants × {} CronJobs every minute (Forbid, history 1), \
         pods of {} s, {:.0} s window: **{} scheduled runs** ({} expected){rounds}.\n\n\
         | per scheduled run | value |\n|---|---:|\n\
         | API requests (everyone but the harness) | {:.1} |\n\
         | etcd writes | {:.1} |\n",
        r.k8s_version,
        r.tenants,
        r.cronjobs,
        r.pod_seconds,
        m.window_s,
        m.scheduled_runs,
        r.expected_runs,
        m.requests_per_run,
        m.etcd_writes_per_run
    );
    for (c, n) in crate::metrics::attribution::largest_first(&m.api_requests_by_client) {
        out.push_str(&format!(
            "| … by {c} | {:.2} |\n",
            per_run(n, m.scheduled_runs)
        ));
    }
    if !r.over_rounds.is_empty() {
        let rows: Vec<(Vec<String>, &MetricRounds)> = r
            .over_rounds
            .iter()
            .map(|x| (vec![x.metric.clone()], x))
            .collect();
        out.push_str(&format!(
            "\nOver the rounds:\n\n{}",
            crate::bench::core::over_rounds::table(&["figure"], &rows, "—")
        ));
    }
    out
}

/// Write cron-load.json and cron-load.md into `out`.
pub fn write(r: &CronBenchResult, out: &Path) -> Result<Vec<PathBuf>> {
    crate::output::write_reports(out, "cron-load", r, markdown(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_of_a_cron_run_set_merge_into_its_rounds() {
        let round = |n: u64| CronRound {
            window_s: 60.0,
            scheduled_runs: 20,
            api_requests: n,
            etcd_writes: n / 2,
            requests_per_run: n as f64 / 20.0,
            etcd_writes_per_run: n as f64 / 40.0,
            ..Default::default()
        };
        let base = CronBenchResult {
            schema: SCHEMA.into(),
            harness_version: "0".into(),
            k8s_version: "1.37.1".into(),
            tenants: 5,
            cronjobs: 4,
            minutes: 1,
            pod_seconds: 2,
            expected_runs: 20,
            mean: CronRound::default(),
            rounds: Vec::new(),
            over_rounds: Vec::new(),
            shard: None,
            merged: Vec::new(),
        };
        let whole = of_rounds(&base, vec![round(400), round(420), round(410)]);
        let shard = |k: u32, first: usize, rounds: Vec<CronRound>| CronBenchResult {
            shard: Some(ShardOf {
                k,
                n: 2,
                first,
                of: 3,
            }),
            ..of_rounds(&base, rounds)
        };
        let merged = merge(vec![
            ("b".into(), shard(2, 2, vec![round(410)])),
            ("a".into(), shard(1, 0, vec![round(400), round(420)])),
        ])
        .unwrap();
        assert_eq!(merged.rounds, whole.rounds, "every round, in order");
        assert_eq!(merged.mean, whole.mean);
        assert_eq!(merged.over_rounds, whole.over_rounds);
        assert_eq!(merged.merged.len(), 2);
        let mut other = shard(2, 2, vec![round(410)]);
        other.tenants = 6;
        let e = merge(vec![
            ("a".into(), shard(1, 0, vec![round(400), round(420)])),
            ("b".into(), other),
        ]);
        assert!(format!("{:#}", e.unwrap_err()).contains("not a shard of the run set"));
    }

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
    fn per_run_figures_and_table() {
        assert_eq!(per_run(90, 60), 1.5);
        assert_eq!(per_run(5, 0), 0.0);
        let round = |requests: u64| CronRound {
            window_s: 100.0,
            scheduled_runs: 4,
            api_requests: requests,
            etcd_writes: 20,
            api_requests_by_client: BTreeMap::from([
                ("a".into(), requests / 5),
                ("b".into(), requests - requests / 5),
            ]),
            objects_created: BTreeMap::new(),
            requests_per_run: per_run(requests, 4),
            etcd_writes_per_run: 5.0,
        };
        let rounds = vec![round(36), round(44)];
        let r = CronBenchResult {
            schema: SCHEMA.into(),
            harness_version: "0".into(),
            k8s_version: "1.37.1".into(),
            tenants: 2,
            cronjobs: 1,
            minutes: 2,
            pod_seconds: 2,
            expected_runs: 4,
            mean: mean_round(&rounds),
            over_rounds: over_rounds(&rounds),
            rounds,
            shard: None,
            merged: Vec::new(),
        };
        assert_eq!(r.mean.api_requests, 40);
        assert_eq!(r.over_rounds[0].samples, vec![9.0, 11.0]);
        assert!(over_rounds(&r.rounds[..1]).is_empty());
        let md = markdown(&r);
        assert!(
            md.contains("**4 scheduled runs** (4 expected) (means of 2 rounds"),
            "{md}"
        );
        assert!(
            md.contains("| API requests / scheduled run | 10.00 | 9.00–11.00 |"),
            "{md}"
        );
        assert!(md.contains("| API requests (everyone but the harness) | 10.0 |"));
        let b = md.find("… by b | 8.25").expect("b first");
        let a = md.find("… by a | 2.00").expect("a");
        assert!(b < a);
        let c = cronjob("task-0", 2);
        assert_eq!(c["spec"]["concurrencyPolicy"], "Forbid");
        let _: CronJob = serde_json::from_value(c).unwrap();
    }
}
