//! The shape `harness bench cron` saved before it was a workload of the
//! core (`harness.cron-load/v1`, cron-load.json: the mean round flattened
//! beside every round), read back as the core's Result so it renders,
//! merges and re-judges as today's does. Nothing is invented: the figures
//! v1 kept go where today's keep them, the rest read 0 or empty.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::bench::core::figures::RunFigures;
use crate::bench::core::result::{MergedShard, ShardOf, Statistics};
use crate::bench::cron::result::{CronResult, CronRun, CronShape, MODE};
use crate::metrics::window::WindowFigures;

pub const SCHEMA: &str = "harness.cron-load/v1";

/// What today's report shows and v1 did not keep.
const NOT_KEPT: &str = "CPU, memory, API latency, etcd's own counts and pod start-up (a harness.cron-load/v1 result did not keep them)";

/// One round as v1 kept it.
#[derive(Debug, Clone, Default, Deserialize)]
struct Round {
    window_s: f64,
    scheduled_runs: u64,
    api_requests: u64,
    etcd_writes: u64,
    #[serde(default)]
    api_requests_by_client: BTreeMap<String, u64>,
    #[serde(default)]
    objects_created: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Deserialize)]
struct V1 {
    harness_version: String,
    k8s_version: String,
    tenants: u32,
    cronjobs: u32,
    minutes: u32,
    pod_seconds: u32,
    expected_runs: u64,
    #[serde(flatten)]
    mean: Round,
    #[serde(default)]
    rounds: Vec<Round>,
    #[serde(default)]
    shard: Option<ShardOf>,
    #[serde(default)]
    merged: Vec<MergedShard>,
}

fn run(r: Round) -> CronRun {
    let pods = r.objects_created.get("pods").copied().unwrap_or(0);
    CronRun {
        figures: RunFigures {
            mode: MODE.into(),
            window: WindowFigures {
                api_requests_total: r.api_requests,
                api_requests_by_client: r.api_requests_by_client,
                etcd_writes_total: r.etcd_writes,
                objects_created: r.objects_created,
                not_measured: vec![NOT_KEPT.to_string()],
                ..WindowFigures::default()
            },
            pods_created: pods,
            wall_s: r.window_s,
            ..RunFigures::default()
        },
        scheduled_runs: r.scheduled_runs,
    }
}

/// `text`, a v1 cron-load.json, as today's Result (every round a run of
/// the one mode, in order; a single-round v1 kept only its mean).
pub fn read(text: &str) -> serde_json::Result<CronResult> {
    let v: V1 = serde_json::from_str(text)?;
    let rounds = match v.rounds.is_empty() {
        true => vec![v.mean.clone()],
        false => v.rounds.clone(),
    };
    let n = rounds.len();
    let shape = CronShape {
        tenants: v.tenants,
        cronjobs: v.cronjobs,
        minutes: v.minutes,
        pod_seconds: v.pod_seconds,
        expected_runs: v.expected_runs,
    };
    let statistics = Statistics {
        shard: v.shard,
        merged: v.merged,
        ..Statistics::new(0, vec![vec![MODE.to_string()]; n], MODE.into())
    };
    let mut r = CronResult {
        harness_version: v.harness_version,
        started: String::new(),
        machine: None,
        ..CronResult::begin(MODE, "local", v.k8s_version, shape, statistics)
    };
    for round in rounds {
        r.add_run(MODE, run(round));
    }
    r.harness_peak_rss_kib = 0;
    Ok(r)
}
