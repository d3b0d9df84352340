//! The metrics a baseline keeps of a run, and the kind each is judged
//! as: requests and writes by identity and call, etcd bytes, the counts
//! the scenario fixes (judged exactly), start-up and wall time, API
//! latencies and SLO classes, CPU, the controller manager's wait on its
//! own limit. `baseline` stores them, `compare` reads a run's values by
//! the same names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bench::thor::result::ModeResult;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// Request, write, object counts: near-deterministic.
    Count,
    /// Latencies and durations: noisy.
    Latency,
    /// Sizes.
    Bytes,
    /// Counts the scenario fixes (pods, containers, objects, the Thor
    /// identity's writes): judged exactly, against the recorded runs'
    /// range.
    Exact,
}

/// API requests of every client but HPCC's (the Thor agent and
/// eclccserver identities).
pub const OTHERS: &str = "api_requests_others";

/// Why a count follows the machine's speed, not only what the run did;
/// None for the counts that do not.
/// - HPCC's clients poll with a backoff until a pod is scheduled or a
///   Job done (`get job`/`get jobset`, `list pods`, each a cold kubectl),
///   so on a slower or busier machine than the one that recorded the
///   baseline they make more calls of the same kinds — measured:
///   jobset-gang's Thor identity +12.5 % with two CPU-bound loops beside
///   the smoke suite.
/// - Everyone else's requests ([`OTHERS`]) follow how the controllers'
///   work queues coalesced events and which of two controllers won a
///   race: the JobSet controller's status updates, the PVC-protection
///   controller's pod lists (one per pod event it saw), kwok or the
///   garbage collector deleting a pod, the collector's retries — measured:
///   jobset ×1.056 on unchanged code on the CI machine, where ten idle
///   runs here spread 1.5 %.
///
/// Where latencies are not judged (`--counts-only`, the smoke suite)
/// these are not judged either; the Thor identity's calls are judged
/// against the plan HPCC's backoff allows over each instance's measured
/// life instead (compare::against_plan).
pub fn time_bound(name: &str) -> Option<&'static str> {
    const POLLS: &[&str] = &["get-", "list-pods"];
    let polls = "polls follow the run's length";
    let queues = "controllers' requests follow how their queues coalesced events";
    match name {
        "api_requests_total" => Some("polls and controllers' requests follow the machine's timing"),
        OTHERS => Some(queues),
        "thor_agent_requests" | "eclccserver_requests" => Some(polls),
        _ => ["thor_agent_calls.", "eclccserver_calls."]
            .iter()
            .any(|id| {
                name.strip_prefix(id)
                    .is_some_and(|call| POLLS.iter().any(|p| call.starts_with(p)))
            })
            .then_some(polls),
    }
}

/// The metrics a baseline keeps: name, value, unit, kind. Each is judged
/// by `crate::bench::thor::result::rule_of` (its minimum effect and noise
/// floor) and the band of its recorded runs; the kinds `Exact` exactly.
pub fn metric_specs(r: &ModeResult) -> Vec<(String, f64, &'static str, MetricKind)> {
    use MetricKind::{Count, Latency};
    let mut v: Vec<(String, f64, &'static str, MetricKind)> = vec![
        // HPCC's clients poll with a doubling backoff until a pod is
        // scheduled and a Job is done, and every poll is a cold kubectl
        // (~27 requests): one poll more per instance moves a smoke run by
        // ~5 %. The band comes from the recorded runs' spread.
        (
            "api_requests_total".into(),
            r.window.api_requests_total as f64,
            "requests",
            Count,
        ),
        // Everyone's but HPCC's two identities': the controllers', the
        // kubelets', the scheduler's. Unlike the total it does not follow
        // how long HPCC polled, but it does follow the machine's timing
        // (`time_bound`).
        (
            OTHERS.into(),
            r.window
                .api_requests_total
                .saturating_sub(r.thor_agent_requests + r.eclccserver_requests) as f64,
            "requests",
            Count,
        ),
        (
            "thor_agent_requests".into(),
            r.thor_agent_requests as f64,
            "requests",
            Count,
        ),
        (
            "thor_agent_writes".into(),
            r.thor_agent_writes as f64,
            "requests",
            Count,
        ),
        (
            "eclccserver_requests".into(),
            r.eclccserver_requests as f64,
            "requests",
            Count,
        ),
        (
            "etcd_writes_total".into(),
            r.window.etcd_writes_total as f64,
            "writes",
            Count,
        ),
        // What etcd stored, in bytes (etcd's total put size): JobSet's
        // objects are larger, so writes alone understate its cost.
        (
            "etcd.put_bytes".into(),
            r.window.etcd.put_bytes as f64,
            "bytes",
            MetricKind::Bytes,
        ),
        ("pods_created".into(), r.pods_created as f64, "pods", Count),
        (
            "containers_created".into(),
            r.containers_created as f64,
            "containers",
            Count,
        ),
        (
            "pod_startup_ms.p99".into(),
            r.pod_startup_ms.p99,
            "ms",
            Latency,
        ),
        (
            "instance_start_ms.p99".into(),
            r.instance_start_ms.p99,
            "ms",
            Latency,
        ),
        ("wall_s".into(), r.wall_s, "s", Latency),
    ];
    // Events are recorded with rate limiting and aggregation: their count
    // is not a property of the workload, so it is not kept.
    for (res, n) in r
        .window
        .objects_created
        .iter()
        .filter(|(res, _)| res.as_str() != "events")
    {
        v.push((
            format!("objects_created.{res}"),
            *n as f64,
            "objects",
            Count,
        ));
    }
    // The Thor identity's kubectl calls by kind (polls included): a
    // regression that adds calls shows here by name.
    for (call, n) in &r.thor_agent_calls {
        v.push((
            format!("thor_agent_calls.{call}"),
            *n as f64,
            "requests",
            Count,
        ));
    }
    // eclccserver's identity the same way (its compile Jobs' polls).
    for (call, n) in &r.eclccserver_calls {
        v.push((
            format!("eclccserver_calls.{call}"),
            *n as f64,
            "requests",
            Count,
        ));
    }
    for (class, p) in &r.window.api_latency_ms {
        v.push((class_p99_metric(class), p.p99, "ms", Latency));
    }
    // The API server's own work, judged like a latency: it depends on the
    // machine.
    v.push((
        "apiserver_etcd_cpu_s".into(),
        r.window.apiserver_etcd_cpu_s,
        "cpu-s",
        Latency,
    ));
    // The controller manager's wait on its own QPS limit, where the
    // provider serves its metrics: too low a limit shows here, not in the
    // counts. Time on this machine, judged like a latency.
    if let Some(w) = crate::bench::thor::result::kcm_wait_s(r) {
        v.push((crate::bench::thor::result::KCM_WAIT.into(), w, "s", Latency));
    }
    // Per (verb, resource, scope) SLO classes with enough calls for a p99
    // to mean something; the bucket edges make anything under 250 ms noise.
    for row in r
        .window
        .api_latency_slo
        .iter()
        .filter(|x| x.count >= SLO_MIN_CALLS)
    {
        v.push((slo_p99_metric(row), row.latency_ms.p99, "ms", Latency));
    }
    for x in &mut v {
        if crate::bench::thor::result::is_deterministic(&x.0) {
            x.3 = MetricKind::Exact;
        }
    }
    v
}

/// Every metric a baseline would keep of one run, by name.
pub fn metric_values(r: &ModeResult) -> BTreeMap<String, f64> {
    metric_specs(r)
        .into_iter()
        .map(|(n, v, ..)| (n, v))
        .collect()
}

/// SLO classes with fewer calls in a run are not kept in a baseline.
const SLO_MIN_CALLS: u64 = 20;
const SLO_PREFIX: &str = "api_slo_p99_ms.";

/// The metric of a request class's p99 ("mutating", "read-only").
pub fn class_p99_metric(class: &str) -> String {
    format!("api_latency_ms.{class}.p99")
}

/// Whether `name` is an SLO class's p99 ([`slo_p99_metric`]).
pub fn is_slo_p99_metric(name: &str) -> bool {
    name.starts_with(SLO_PREFIX)
}

/// The metric of an SLO class's p99.
pub fn slo_p99_metric(row: &crate::metrics::slo::SloRow) -> String {
    format!("{SLO_PREFIX}{}:{}:{}", row.verb, row.resource, row.scope)
}

/// The current value of a baseline metric in a run.
pub fn metric_value(r: &ModeResult, name: &str) -> Option<f64> {
    metric_specs(r)
        .into_iter()
        .find(|(n, ..)| n == name)
        .map(|(_, v, ..)| v)
        .or_else(|| {
            // A kind of call the run did not make.
            name.strip_prefix("thor_agent_calls.")
                .or_else(|| name.strip_prefix("eclccserver_calls."))
                .map(|_| 0.0)
        })
        .or_else(|| {
            // An object kind the run did not create at all counts as zero;
            // so does an SLO class with too few calls to keep (no latency).
            name.strip_prefix("objects_created.")
                .or_else(|| name.strip_prefix(SLO_PREFIX))
                .map(|_| 0.0)
        })
}
