//! The one measurement window every workload uses: `Window::open` snapshots
//! the API server's and etcd's metrics (and the scheduler's, when asked)
//! and the audit log's end; `close` snapshots again, reads the audit events
//! in between and turns both into `WindowFigures` — requests per client
//! (the cluster's harness identities set apart), API latency, etcd writes,
//! objects created and stored; in between, `during` samples every second
//! each component's CPU and memory (metrics::usage) into a timeline
//! (metrics::timeline) that `close` completes from the audit log, and,
//! when asked, from the API server's and etcd's metrics.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::cluster::provider::Cluster;

/// The names providers give the two components a window's headline CPU
/// figure adds up (the local provider's process names).
const APISERVER: &str = "kube-apiserver";
const ETCD: &str = "etcd";
use crate::cluster::apf_flows::ApfFlows;
use crate::metrics::apf::{self, Agreement};
use crate::metrics::attribution::{Attribution, Attributor};
use crate::metrics::figures::{EtcdFigures, api_figures, etcd_figures};
use crate::metrics::percentiles::Percentiles;
use crate::metrics::slo::{self, SloRow};
use crate::metrics::snapshot::{Snapshot, snapshot};
use crate::metrics::throttle::{self, Throttle};
use crate::metrics::timeline::{self, Raw, Timeline};
use crate::metrics::usage::{Usage, UsageTracker};

/// What the control plane did in a window. Flattened into every workload's
/// result (Thor modes, ECL cases), so these keys are the same everywhere.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowFigures {
    /// Requests by every client but the harness (from the audit log).
    #[serde(default)]
    pub api_requests_total: u64,
    /// "verb resource[/subresource]" → count.
    #[serde(default)]
    pub api_requests: BTreeMap<String, u64>,
    /// client identity → count.
    #[serde(default)]
    pub api_requests_by_client: BTreeMap<String, u64>,
    /// client identity → "verb resource" → count.
    #[serde(default)]
    pub api_requests_by_client_request: BTreeMap<String, BTreeMap<String, u64>>,
    /// client → "verb resource code" → count of failed requests (≥ 400,
    /// not 404/409).
    #[serde(default)]
    pub failed_requests: BTreeMap<String, BTreeMap<String, u64>>,
    /// The harness's own requests in the window (excluded above).
    #[serde(default)]
    pub harness_requests: u64,
    /// What apiserver_request_total counted (everyone, the harness too).
    #[serde(default)]
    pub apiserver_requests_counted: u64,
    /// The audited requests that metric counts: those for a resource,
    /// everyone's (discovery and OpenAPI GETs are audited, not counted).
    #[serde(default)]
    pub audited_resource_requests: u64,
    #[serde(default)]
    pub etcd_writes_total: u64,
    #[serde(default)]
    pub etcd: EtcdFigures,
    /// Objects created by clients other than the harness, by resource.
    #[serde(default)]
    pub objects_created: BTreeMap<String, u64>,
    /// Latency (ms) of mutating and read-only requests.
    #[serde(default)]
    pub api_latency_ms: BTreeMap<String, Percentiles>,
    /// Objects stored at the end, by resource.
    #[serde(default)]
    pub objects_after: BTreeMap<String, u64>,
    /// CPU seconds and memory per component (the control-plane processes
    /// on this machine, the harness, its kubectl children).
    #[serde(default)]
    pub resources: BTreeMap<String, Usage>,
    /// kube-apiserver + etcd CPU seconds (0 when the provider's processes
    /// are not on this machine: see `resources`).
    #[serde(default)]
    pub apiserver_etcd_cpu_s: f64,
    /// API call latency per (verb, resource, scope) against the SLOs,
    /// worst first.
    #[serde(default)]
    pub api_latency_slo: Vec<SloRow>,
    /// What this cluster did not let the window measure ("etcd",
    /// "control-plane CPU and memory"): those figures are 0, not zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_measured: Vec<String>,
    /// Where requests per client come from: "audit log" or "apf" (the
    /// API server's priority-and-fairness counts per FlowSchema, see
    /// metrics::apf); empty in results written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub attribution: String,
    /// With both the audit log and APF: each followed identity's requests
    /// as each counted them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub apf_agreement: BTreeMap<String, Agreement>,
    /// Client-side throttling per component whose metrics the provider
    /// serves (kube-controller-manager; kube-scheduler when the window
    /// took its metrics): seconds its requests waited on its own QPS
    /// limit (metrics::throttle).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_throttle: BTreeMap<String, Throttle>,
    /// Per kind ("job", "jobset"), the lifecycle of the objects created in
    /// the window: created → started → finished, from a watch
    /// (metrics::jobs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub job_lifecycle: BTreeMap<String, crate::metrics::jobs::JobLifecycle>,
    /// Watch events the API server sent, per resource, and their bytes
    /// (`apiserver_watch_events_total`, `apiserver_watch_events_sizes`):
    /// what fanning out each change to the watchers cost it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub watch_events: BTreeMap<String, crate::metrics::figures::WatchEvents>,
    /// The machine's speed as the window opened: the speed probe's score,
    /// its load at that moment included (`machine::Speed`). Absent in
    /// results written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<crate::machine::Speed>,
}

/// The typical window of several runs: every figure combined
/// (metrics::combine); what describes how the window measured (what it
/// could not, where requests per client came from, the APF check) is the
/// first run's.
impl crate::metrics::combine::Combine for WindowFigures {
    fn combine(runs: &[&Self]) -> Self {
        use crate::metrics::combine::first;
        crate::metrics::combine::typical!(runs; WindowFigures {
            api_requests_total,
            api_requests,
            api_requests_by_client,
            api_requests_by_client_request,
            failed_requests,
            harness_requests,
            apiserver_requests_counted,
            audited_resource_requests,
            etcd_writes_total,
            etcd,
            objects_created,
            api_latency_ms,
            objects_after,
            resources,
            apiserver_etcd_cpu_s,
            api_latency_slo,
            not_measured by first,
            attribution by first,
            apf_agreement by first,
            client_throttle,
            job_lifecycle,
            watch_events,
            speed by first,
        })
    }
}

/// The `client_throttle` key of the controller manager.
pub const KCM: &str = "kube-controller-manager";

impl WindowFigures {
    /// Rename every client identity by `f` (names that carry one run's
    /// cluster or namespace, made comparable across runs); identities that
    /// become one are added up.
    pub fn rename_clients(&mut self, f: impl Fn(&str) -> String) {
        fn rekey<V>(
            m: &mut BTreeMap<String, V>,
            f: &impl Fn(&str) -> String,
            add: impl Fn(&mut V, V),
        ) {
            for (k, v) in std::mem::take(m) {
                match m.entry(f(&k)) {
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(v);
                    }
                    std::collections::btree_map::Entry::Occupied(mut e) => add(e.get_mut(), v),
                }
            }
        }
        fn merge(a: &mut BTreeMap<String, u64>, b: BTreeMap<String, u64>) {
            for (k, n) in b {
                *a.entry(k).or_default() += n;
            }
        }
        rekey(&mut self.api_requests_by_client, &f, |a, b| *a += b);
        rekey(&mut self.api_requests_by_client_request, &f, merge);
        rekey(&mut self.failed_requests, &f, merge);
        rekey(&mut self.apf_agreement, &f, |_, _| {});
    }
}

/// What a window samples besides its two snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Snapshot the scheduler's metrics too.
    pub scheduler: bool,
    /// Also scrape the API server's and etcd's metrics every second into
    /// the timeline (costs the API server CPU: off unless asked).
    pub scrape: bool,
    /// Count requests per identity by the FlowSchemas set up for them
    /// (cluster::existing::apf): alone where there is no audit log,
    /// checked against it where there is.
    pub apf: Option<ApfFlows>,
    /// Name clients by user and user agent (metrics::attribution::
    /// client_key) rather than by user: `measure`'s "requests by client".
    pub agents: bool,
}

/// `WindowFigures.not_measured` entries other code looks for.
pub const NOT_MEASURED_ETCD: &str = "etcd";
pub const NOT_MEASURED_USAGE: &str = "control-plane CPU and memory";
pub const NOT_MEASURED_REQUESTS: &str =
    "API requests (no audit log, no APF attribution on this cluster)";

/// What `cluster` does not let a window measure.
fn not_measured(cluster: &impl Cluster) -> Vec<String> {
    let mut out = Vec::new();
    if !cluster.measures_etcd() {
        out.push(NOT_MEASURED_ETCD.to_string());
    }
    if cluster.processes() == crate::cluster::provider::Processes::Unseen {
        out.push(NOT_MEASURED_USAGE.to_string());
    }
    out
}

/// Requests per client from the audit log since the window opened; the
/// log is streamed: at 1024 workers a window holds ~50 000 events, which
/// the harness must not hold at once. Its request spans go into the
/// timeline.
/// The window's audit events: from the audit log's end when it opened to
/// its end when it closed (taken beside the API server's counters, so
/// the two count the same requests), not to wherever the log has grown
/// by the time it is read.
fn audit_attribution(
    cluster: &impl Cluster,
    agents: bool,
    (before, after): (&Snapshot, &Snapshot),
    opened_at: time::OffsetDateTime,
    timeline: &mut Timeline,
) -> Result<Attribution> {
    let harness = cluster.harness_users();
    let mut attributor = Attributor::new(&harness);
    if agents {
        attributor = attributor.by_agent();
    }
    let mut spans = timeline::AuditSpans::new(opened_at, &harness);
    cluster.visit_audit_until(before.audit_offset, after.audit_offset, &mut |e| {
        attributor.add(&e);
        spans.add(&e);
    })?;
    spans.apply(timeline);
    Ok(attributor.finish())
}

/// An open window.
/// The window's watch of Jobs and JobSets (JobSets where the API is
/// served); None, and said in the log, where the cluster does not let the
/// harness list them.
async fn job_tracker(cluster: &impl Cluster) -> Option<crate::metrics::jobs::JobTracker> {
    let client = cluster.client().await.ok()?;
    let jobs: kube::Api<k8s_openapi::api::batch::v1::Job> = kube::Api::all(client.clone());
    if let Err(e) = jobs
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await
    {
        tracing::debug!("Job lifecycle not measured: {e:#}");
        return None;
    }
    let jobsets = kube::discovery::group(&client, crate::k8s::jobset::GROUP)
        .await
        .is_ok();
    Some(crate::metrics::jobs::JobTracker::start(client, jobsets))
}

pub struct Window {
    before: Snapshot,
    /// The Jobs and JobSets created in the window; None where the cluster
    /// did not let the harness watch them.
    jobs: Option<crate::metrics::jobs::JobTracker>,
    opened: Instant,
    opened_at: time::OffsetDateTime,
    opts: Options,
    usage: UsageTracker,
    timeline: Timeline,
    last_raw: Option<Raw>,
    speed: Option<crate::machine::Speed>,
}

/// A closed window: its figures and the raw snapshots (for workload-
/// specific metrics such as the scheduler's podgroup histograms).
#[derive(Debug, Clone)]
pub struct Closed {
    pub figures: WindowFigures,
    pub before: Snapshot,
    pub after: Snapshot,
    pub elapsed: Duration,
    /// The metrics over time (empty unless asked for).
    pub timeline: Timeline,
}

/// How often `during` samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

impl Window {
    /// Snapshot the API server, etcd and the audit log's end.
    pub async fn open(cluster: &impl Cluster) -> Result<Window> {
        Self::open_with(cluster, Options::default()).await
    }

    /// As `open`, with the scheduler's metrics or a timeline.
    pub async fn open_with(cluster: &impl Cluster, opts: Options) -> Result<Window> {
        // Before anything of the window is counted: the probe's own CPU
        // falls outside it.
        let speed = tokio::task::spawn_blocking(crate::machine::Speed::now)
            .await
            .ok();
        let jobs = job_tracker(cluster).await;
        let before = snapshot(cluster, opts.scheduler).await?;
        let mut w = Window {
            before,
            jobs,
            opened: Instant::now(),
            opened_at: time::OffsetDateTime::now_utc(),
            opts,
            usage: UsageTracker::new(cluster.processes()),
            timeline: Timeline::default(),
            last_raw: None,
            speed,
        };
        w.sample(cluster).await;
        Ok(w)
    }

    /// One sample: the processes' CPU and memory; when scraping, the API
    /// server's and etcd's metrics too (a failed scrape is counted as
    /// missed, not fatal: the workload's own checks see a dead cluster).
    async fn sample(&mut self, cluster: &impl Cluster) {
        let t_s = self.opened.elapsed().as_secs_f64();
        let point = self.usage.sample().await;
        let raw = match self.opts.scrape {
            false => timeline::reduce(t_s, point, &[], &[]),
            true => {
                let (api, etcd) = tokio::join!(cluster.apiserver_metrics(), cluster.etcd_metrics());
                let (Ok(api), Ok(etcd)) = (api, etcd) else {
                    self.timeline.missed += 1;
                    return;
                };
                timeline::reduce(
                    t_s,
                    point,
                    &timeline::parse_families(&api, timeline::APISERVER_FAMILIES),
                    &timeline::parse_families(&etcd, timeline::ETCD_FAMILIES),
                )
            }
        };
        if let Some(prev) = &self.last_raw {
            self.timeline.push(prev, &raw, self.usage.ticks_per_s());
        }
        self.last_raw = Some(raw);
    }

    /// Run `work` while sampling every second; its output.
    pub async fn during<T>(&mut self, cluster: &impl Cluster, work: impl Future<Output = T>) -> T {
        let done = tokio::sync::Notify::new();
        let work = async {
            let out = work.await;
            done.notify_one();
            out
        };
        let sampling = async {
            let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => self.sample(cluster).await,
                    _ = done.notified() => break,
                }
            }
        };
        tokio::join!(work, sampling).0
    }

    /// Snapshot again and compute the window's figures.
    pub async fn close(self, cluster: &impl Cluster) -> Result<Closed> {
        let mut this = self;
        this.sample(cluster).await;
        let elapsed = this.opened.elapsed();
        let after = snapshot(cluster, this.opts.scheduler).await?;
        let (before, mut timeline) = (this.before, this.timeline);
        let resources = this.usage.figures();
        let cpu = |n: &str| resources.get(n).map_or(0.0, |u| u.cpu_s);
        let apf = this
            .opts
            .apf
            .as_ref()
            .map(|f| apf::counts(&before.apiserver, &after.apiserver, f));
        let mut not_measured = not_measured(cluster);
        let (attribution, source, apf_agreement) = match (cluster.audit_log().is_some(), apf) {
            (true, apf) => {
                let a = audit_attribution(
                    cluster,
                    this.opts.agents,
                    (&before, &after),
                    this.opened_at,
                    &mut timeline,
                )?;
                let agreement = apf.map(|c| apf::agreement(&c, &a)).unwrap_or_default();
                (a, "audit log", agreement)
            }
            (false, Some(c)) => {
                if let Some(f) = &this.opts.apf
                    && f.harness.iter().any(|h| f.exempt.contains(h))
                {
                    let others: Vec<&str> = f
                        .exempt
                        .iter()
                        .filter(|l| !f.harness.contains(*l))
                        .map(String::as_str)
                        .collect();
                    not_measured.push(format!(
                        "the requests of system:masters members ({}the API server's loopback client, any other), which APF's exempt schema takes before any other schema: set apart with the harness's own",
                        others.iter().map(|o| format!("{o}, ")).collect::<String>()
                    ));
                }
                not_measured.push(
                    "requests by verb and resource, failed requests and objects created (they need the audit log; requests per client are APF's)"
                        .to_string(),
                );
                let a = Attribution {
                    by_client: c.by_client,
                    total: c.total,
                    harness: c.harness,
                    ..Default::default()
                };
                (a, "apf", BTreeMap::new())
            }
            (false, None) => {
                not_measured.push(NOT_MEASURED_REQUESTS.to_string());
                (Attribution::default(), "none", BTreeMap::new())
            }
        };
        let api = api_figures(&before, &after);
        let etcd = etcd_figures(&before, &after);
        let client_throttle = [
            (KCM, &before.controller_manager, &after.controller_manager),
            ("kube-scheduler", &before.scheduler, &after.scheduler),
        ]
        .into_iter()
        .filter_map(|(c, b, a)| throttle::between(b, a).map(|t| (c.to_string(), t)))
        .collect();
        let figures = WindowFigures {
            api_requests_total: attribution.total,
            api_requests: attribution.by_request,
            api_requests_by_client: attribution.by_client,
            api_requests_by_client_request: attribution.by_client_request,
            failed_requests: attribution.failed,
            harness_requests: attribution.harness,
            apiserver_requests_counted: api.requests_total,
            audited_resource_requests: attribution.resource_requests,
            etcd_writes_total: etcd.writes,
            etcd,
            objects_created: attribution.created,
            api_latency_ms: api.latency_ms,
            objects_after: api.objects_after,
            apiserver_etcd_cpu_s: cpu(APISERVER) + cpu(ETCD),
            api_latency_slo: slo::rows(&before.apiserver, &after.apiserver),
            resources,
            not_measured,
            attribution: source.to_string(),
            apf_agreement,
            client_throttle,
            job_lifecycle: this.jobs.as_ref().map(|j| j.figures()).unwrap_or_default(),
            watch_events: api.watch_events,
            speed: this.speed,
        };
        crate::metrics::usage::release_freed_heap();
        Ok(Closed {
            figures,
            before,
            after,
            elapsed,
            timeline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_clients_that_become_one_are_added_up() {
        let mut w = WindowFigures::default();
        for (who, n) in [
            ("system:node:c1-worker", 3),
            ("system:node:c2-worker", 4),
            ("kubectl", 1),
        ] {
            w.api_requests_by_client.insert(who.into(), n);
            w.api_requests_by_client_request
                .insert(who.into(), BTreeMap::from([("get pods".to_string(), n)]));
        }
        w.rename_clients(|c| c.replace("c1-", "").replace("c2-", ""));
        assert_eq!(
            w.api_requests_by_client,
            BTreeMap::from([
                ("kubectl".to_string(), 1),
                ("system:node:worker".to_string(), 7)
            ])
        );
        assert_eq!(
            w.api_requests_by_client_request["system:node:worker"]["get pods"],
            7
        );
    }
}
