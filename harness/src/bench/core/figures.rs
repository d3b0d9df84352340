//! What every measured run has, whatever its workload: the window's
//! figures (requests per client, etcd, latency, CPU and memory per
//! component), the pods it created and how fast they started, and its wall
//! time — and the metrics declared on them, which every workload's list
//! starts from (a workload with no figures of its own runs exactly these).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bench::core::metric::{self, Driver, Kind, Metric, Spec, Views};
use crate::metrics::WindowFigures;
use crate::metrics::percentiles::Percentiles;

/// One run's figures every workload has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    /// The mode (or variant) it ran.
    pub mode: String,
    /// What the control plane did: requests per client, latency, etcd,
    /// objects (the same keys in every workload's result).
    #[serde(flatten)]
    pub window: WindowFigures,
    pub pods_created: u64,
    pub containers_created: u64,
    /// Pod created → Running (ms), from the watch.
    pub pod_startup_ms: Percentiles,
    pub pod_schedule_ms: Percentiles,
    /// The measurement window's length.
    pub wall_s: f64,
}

impl crate::metrics::combine::Combine for RunFigures {
    fn combine(runs: &[&Self]) -> Self {
        use crate::metrics::combine::first;
        crate::metrics::combine::typical!(runs; RunFigures {
            mode by first,
            window,
            pods_created,
            containers_created,
            pod_startup_ms,
            pod_schedule_ms,
            wall_s,
        })
    }
}

/// The metric of a request class's p99 ("mutating", "read-only").
pub fn class_p99_metric(class: &str) -> String {
    API_LATENCY.member(class)
}

/// Whether `name` is an SLO class's p99 ([`slo_p99_metric`]).
pub fn is_slo_p99_metric(name: &str) -> bool {
    SLO_P99.names(name)
}

/// The metric of an SLO class's p99.
pub fn slo_p99_metric(row: &crate::metrics::slo::SloRow) -> String {
    SLO_P99.member(&slo_member(row))
}

fn slo_member(row: &crate::metrics::slo::SloRow) -> String {
    format!("{}:{}:{}", row.verb, row.resource, row.scope)
}

/// SLO classes with fewer calls in a run are not kept in a baseline.
const SLO_MIN_CALLS: u64 = 20;

/// Why a time, a latency or CPU seconds differ between machines.
pub const MACHINE: &str = "a time is the machine's speed and load";
/// Why etcd's writes and bytes do: controllers' status writes coalesce,
/// and lease renewals are among them.
const WRITES: &str = "status writes coalesce and leases renew with the clock";
/// Why a peak RSS does.
const MEMORY: &str = "memory follows how much work was in hand at once";

/// Requests, everyone's but the harness's.
pub const API_REQUESTS: Spec = Spec::new(
    "api_requests_total",
    "API requests (all clients but the harness)",
    "requests",
)
.short("API requests")
.views(ALL)
.driver(Driver::Pace(
    "polls and controllers' requests follow the machine's timing",
));
pub const ETCD_WRITES: Spec = Spec::new(
    "etcd_writes_total",
    "etcd writes (puts + deletes)",
    "writes",
)
.driver(Driver::Pace(WRITES))
.short("etcd writes")
.views(ALL);
/// What etcd stored, in bytes (etcd's total put size): larger objects
/// cost more than their count says.
pub const ETCD_BYTES: Spec = Spec::new("etcd.put_bytes", "etcd bytes written", "bytes")
    .driver(Driver::Pace(WRITES))
    .short("etcd bytes written")
    .kind(Kind::Bytes, 0.0)
    .views(ALL.without_row());
/// The API server's and etcd's own CPU: machine-bound.
pub const CPU: Spec = Spec::new(
    "apiserver_etcd_cpu_s",
    "kube-apiserver + etcd CPU (s)",
    "cpu-s",
)
.driver(Driver::Pace(MACHINE))
.short("kube-apiserver + etcd CPU seconds")
.kind(Kind::Cpu, 2.0)
.cost()
.views(ALL);
pub const OBJECTS_SUM: Spec = Spec::new("objects_created", "objects created", "objects")
    .driver(Driver::Workload)
    .views(Views::ROW);
pub const PODS: Spec = Spec::new("pods_created", "pods created", "pods")
    .driver(Driver::Workload)
    .kind(Kind::Fixed, 0.0)
    .views(JUDGED_ROW);
pub const CONTAINERS: Spec = Spec::new("containers_created", "containers created", "containers")
    .driver(Driver::Workload)
    .kind(Kind::Fixed, 0.0)
    .views(JUDGED_ROW);
pub const POD_P50: Spec = Spec::new("pod_startup_ms.p50", "pod start-up p50 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 1000.0)
    .views(Views::ROW);
/// Shown in report.html's pod start-up chart only.
pub const POD_P90: Spec = Spec::new("pod_startup_ms.p90", "pod start-up p90 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 1000.0);
pub const POD_P99: Spec = Spec::new("pod_startup_ms.p99", "pod start-up p99 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 1000.0)
    .views(JUDGED_ROW);
/// API latency per request class.
pub const API_LATENCY: Spec = Spec::new("api_latency_ms.{}.p99", "API latency p99 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 50.0)
    .views(Views::JUDGED.and(Views::KEPT).and(Views::ROUNDS));
/// A request class's p50 and p90 (report.md's API latency lines, beside
/// the p99 [`API_LATENCY`]): shown, never judged.
pub const API_LATENCY_P50: Spec = Spec::new("api_latency_ms.{}.p50", "API latency p50 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 50.0);
pub const API_LATENCY_P90: Spec = Spec::new("api_latency_ms.{}.p90", "API latency p90 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 50.0);
/// etcd's own figures of the window, the rows of report.md's etcd table
/// in its order (shown there, never judged): its requests by kind, its
/// database's size, and how long its disk took.
pub const ETCD_PUTS: Spec = Spec::new("etcd.puts", "puts", "requests").driver(Driver::Pace(WRITES));
pub const ETCD_DELETES: Spec =
    Spec::new("etcd.deletes", "deletes", "requests").driver(Driver::Pace(WRITES));
pub const ETCD_TXNS: Spec = Spec::new("etcd.txns", "txns", "requests").driver(Driver::Pace(WRITES));
pub const ETCD_RANGES: Spec =
    Spec::new("etcd.ranges", "ranges", "requests").driver(Driver::Pace(metric::POLLS));
pub const ETCD_DB_SIZE: Spec = Spec::new("etcd.db_size_mib", "db size (MiB)", "MiB")
    .driver(Driver::Pace(WRITES))
    .kind(Kind::Bytes, 0.0);
pub const ETCD_WAL_FSYNC: Spec = Spec::new("etcd.wal_fsync_ms.p99", "WAL fsync p99 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 0.0);
pub const ETCD_COMMIT: Spec = Spec::new(
    "etcd.backend_commit_ms.p99",
    "backend commit p99 (ms)",
    "ms",
)
.driver(Driver::Pace(MACHINE))
.kind(Kind::Latency, 0.0);
/// report.md's etcd table: its rows, in order.
pub const ETCD_TABLE: [Spec; 7] = [
    ETCD_PUTS,
    ETCD_DELETES,
    ETCD_TXNS,
    ETCD_RANGES,
    ETCD_DB_SIZE,
    ETCD_WAL_FSYNC,
    ETCD_COMMIT,
];
pub const WALL: Spec = Spec::new("wall_s", "mode wall time (s)", "s")
    .driver(Driver::Pace(MACHINE))
    .short("wall time")
    .kind(Kind::Time, 5.0)
    .views(ALL);
pub const APISERVER_RSS: Spec = Spec::new(
    "rss_peak_mib.kube-apiserver",
    "peak kube-apiserver RSS (MiB)",
    "MiB",
)
.driver(Driver::Pace(MEMORY))
.cost()
.views(Views::ROW);
pub const ETCD_RSS: Spec = Spec::new("rss_peak_mib.etcd", "peak etcd RSS (MiB)", "MiB")
    .driver(Driver::Pace(MEMORY))
    .cost()
    .views(Views::ROW);
/// Objects created per resource (events are recorded with rate limiting
/// and aggregation: their count is not a property of the workload).
pub const OBJECTS: Spec = Spec::new("objects_created.{}", "objects created", "objects")
    .driver(Driver::Workload)
    .kind(Kind::Fixed, 0.0)
    .views(Views::KEPT)
    .missing_is_zero();
/// Seconds kube-controller-manager's requests waited on its own QPS
/// limit (metrics::throttle): a controller manager paced by
/// `--kube-api-qps` makes no more requests, it makes them later. Where the
/// provider serves its metrics.
pub const KCM_WAIT: Spec = Spec::new(
    "kcm_client_wait_s",
    "kube-controller-manager's wait on its own QPS limit (s)",
    "s",
)
.driver(Driver::Pace(MACHINE))
.kind(Kind::Time, 1.0)
.views(Views::JUDGED.and(Views::KEPT));
/// Per (verb, resource, scope) SLO classes with enough calls for a p99 to
/// mean something; the bucket edges make anything under 250 ms noise.
pub const SLO_P99: Spec = Spec::new("api_slo_p99_ms.{}", "SLO class p99 (ms)", "ms")
    .driver(Driver::Pace(MACHINE))
    .kind(Kind::Latency, 250.0)
    .views(Views::KEPT)
    .missing_is_zero();

/// Job and JobSet lifecycle (metrics::jobs), per kind ("job",
/// "jobset"): created → started (a Job's controller's first sync; a
/// JobSet's first child Job), as clusterloader2's JobLifecycleLatency and
/// kube-burner's jobLatency report it, but from watch events in ms.
pub const JOB_START_P50: Spec = Spec::new(
    "job_lifecycle.{}.create_to_start_ms.p50",
    "{} created → started p50 (ms)",
    "ms",
)
.driver(Driver::Pace(MACHINE))
.kind(Kind::Latency, 1000.0)
.views(Views::ROW);
pub const JOB_START_P99: Spec = Spec::new(
    "job_lifecycle.{}.create_to_start_ms.p99",
    "{} created → started p99 (ms)",
    "ms",
)
.driver(Driver::Pace(MACHINE))
.kind(Kind::Latency, 1000.0)
.views(LIFECYCLE);
/// Created → its first pod Ready.
pub const JOB_READY_P99: Spec = Spec::new(
    "job_lifecycle.{}.create_to_ready_ms.p99",
    "{} created → first pod ready p99 (ms)",
    "ms",
)
.driver(Driver::Pace(MACHINE))
.kind(Kind::Latency, 1000.0)
.views(LIFECYCLE);
/// Started → Complete or Failed: the workload's own run time besides
/// what the control plane added.
pub const JOB_FINISH_P99: Spec = Spec::new(
    "job_lifecycle.{}.start_to_finish_ms.p99",
    "{} started → finished p99 (ms)",
    "ms",
)
.driver(Driver::Pace(MACHINE))
.kind(Kind::Time, 1000.0)
.views(LIFECYCLE);
/// Watch events the API server sent to its watchers, and their bytes:
/// each change costs as many events as there are watchers of it, and a
/// larger object costs more bytes to every one of them. The server's
/// counters do not say who watched, so the harness's own watches (its pod
/// watch and the window's Job and JobSet watch: one watcher each) are in
/// them, alike in every mode. Chosen over the scheduler's SLI duration
/// because every provider serves it (the API server's own metrics), and
/// it is what a JobSet's larger objects cost beyond their writes.
pub const WATCH_EVENTS: Spec = Spec::new("watch_events_total", "watch events sent", "events")
    .driver(Driver::Pace(metric::WATCHERS))
    .views(
        Views::JUDGED
            .and(Views::KEPT)
            .and(Views::ROW)
            .and(Views::ROUNDS),
    );
pub const WATCH_BYTES: Spec =
    Spec::new("watch_event_bytes_total", "watch event bytes sent", "bytes")
        .driver(Driver::Pace(metric::WATCHERS))
        .kind(Kind::Bytes, 0.0)
        .views(
            Views::JUDGED
                .and(Views::KEPT)
                .and(Views::ROW)
                .and(Views::ROUNDS),
        );
/// Per resource: which resource's watchers a change of events is.
/// Judged past a floor of [`WATCH_FLOOR`] events.
pub const WATCH_EVENTS_BY: Spec = Spec::new("watch_events.{}", "watch events sent", "events")
    .kind(Kind::Count, WATCH_FLOOR)
    .driver(Driver::Watches)
    .views(Views::KEPT)
    .missing_is_zero();
/// A resource's watch events that move by fewer than this are not
/// judged: every write reaches each of its few watchers, and writes the
/// workload does not make come and go — measured on the smoke's 20
/// recorded runs of one build (2026-11-29) the events of
/// PersistentVolumeClaims ranged 16–24, of ClusterTrustBundles 0–2, of
/// PersistentVolumes 0–1, and in a run with a CPU kept busy beside it
/// (2026-12-05) ConfigMaps' and PersistentVolumes' went from none to a
/// few; a write of the workload's own reaches every watcher of every
/// object it makes, tens of events in the smoke.
const WATCH_FLOOR: f64 = 10.0;

/// Every client's requests (the audit log's user, as the attribution
/// names it): judged one by one, so a regression of the total or of
/// everyone-but-the-workload names the clients behind it, each with its own
/// interval. A client absent from a run made no request in it (0).
pub const BY_CLIENT: Spec =
    per_client("api_requests_by_client.{}", "API requests of {}").new_members_are_behaviour();
/// A client's requests that move by fewer than this between two sets of
/// runs are not judged: measured on 3 rounds of one build (the smoke on
/// a real node, 2026-11-29), a client's requests ranged by up to 28
/// between rounds — one cold kubectl poll of the workload's (~27 requests), a
/// controller's resyncs by up to 14 — and small clients (9 requests of
/// kwok's) by 3 with no spread in the other rounds, where the t interval
/// alone would call any change a difference.
const CLIENT_FLOOR: f64 = 30.0;
/// Each client's most frequent request (verb and resource) in the run,
/// "client: verb resource": what the client that moved was doing.
pub const BY_CLIENT_TOP: Spec = per_client("api_requests_by_client_top.{}", "top request of {}");

/// Every client's requests summed by what drives their request class
/// (`drivers::of_class`): `workload` (creates, kwok's stage patches: the
/// same on any machine, so judged against the recorded runs everywhere
/// and tightly), `pace` (status writes, reads, deletes, discovery: given
/// the allowance the machines showed) and `clock` (leases: per second).
/// A total of everyone's requests mixes the three; its parts do not.
pub const BY_DRIVER: Spec = Spec::new(
    "api_requests_by_driver.{}",
    "API requests the {} drives",
    "requests",
)
.views(Views::KEPT)
.driver(Driver::Named)
.missing_is_zero();

/// Every request class of a window ("client: verb resource") and its
/// requests.
fn classes(w: &WindowFigures) -> Vec<(String, f64)> {
    w.api_requests_by_client_request
        .iter()
        .flat_map(|(c, reqs)| {
            reqs.iter()
                .map(move |(req, n)| (format!("{c}: {req}"), *n as f64))
        })
        .collect()
}

/// `classes` ("client: verb resource" → requests) summed by what
/// drives each (the members of [`BY_DRIVER`]).
pub fn by_driver<'a>(classes: impl Iterator<Item = (&'a str, f64)>) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for (class, n) in classes {
        *out.entry(
            crate::bench::core::drivers::of_class(class)
                .name()
                .to_string(),
        )
        .or_default() += n;
    }
    out
}

/// Each client's requests by "verb resource" ("client: verb resource"):
/// what the client that moved was doing, judged past the client floor; a
/// lease's follow the clock, so they are compared per second.
pub const BY_CLIENT_REQUEST: Spec = Spec::new(
    "api_requests_by_client_request.{}",
    "API requests of {}",
    "requests",
)
.kind(Kind::Count, CLIENT_FLOOR)
.views(Views::KEPT)
.driver(Driver::Requests)
.new_members_are_behaviour();
/// Why a client's requests differ between machines.
const CLIENT_PACE: &str = "a client's polls, leases and resyncs follow the machine's timing";

/// A family of per-client request counts: judged past the client floor,
/// kept in baselines, following the machine's timing, 0 where a client
/// made no request.
const fn per_client(key: &'static str, label: &'static str) -> Spec {
    Spec::new(key, label, "requests")
        .kind(Kind::Count, CLIENT_FLOOR)
        .views(Views::JUDGED.and(Views::KEPT))
        .driver(Driver::Pace(CLIENT_PACE))
        .missing_is_zero()
}

const LIFECYCLE: Views = Views::JUDGED
    .and(Views::KEPT)
    .and(Views::ROW)
    .and(Views::ROUNDS);
const ALL: Views = Views::HEADLINE
    .and(Views::JUDGED)
    .and(Views::KEPT)
    .and(Views::ROW)
    .and(Views::ROUNDS)
    .and(Views::ANSWER);
const JUDGED_ROW: Views = Views::HEADLINE
    .and(Views::JUDGED)
    .and(Views::KEPT)
    .and(Views::ROW)
    .and(Views::ROUNDS);

/// Peak resident memory of one component (MiB; 0 when not measured).
pub fn peak_rss(w: &WindowFigures, component: &str) -> f64 {
    w.resources.get(component).map_or(0.0, |u| u.rss_peak_mib)
}

/// Per request class, one of its latency percentiles.
fn by_class(r: &RunFigures, of: fn(&Percentiles) -> f64) -> Vec<(String, f64)> {
    r.window
        .api_latency_ms
        .iter()
        .map(|(class, p)| (class.clone(), of(p)))
        .collect()
}

/// Per kind of job, a lifecycle percentile, where at least one object
/// reached the step (`count`).
fn lifecycle(
    r: &RunFigures,
    value: fn(&crate::metrics::jobs::JobLifecycle) -> f64,
    count: fn(&crate::metrics::jobs::JobLifecycle) -> u64,
) -> Vec<(String, f64)> {
    r.window
        .job_lifecycle
        .iter()
        .filter(|(_, l)| count(l) > 0)
        .map(|(kind, l)| (kind.clone(), value(l)))
        .collect()
}

/// Watch events (or bytes) over every resource; None where the window
/// did not read them. Summed as f64: a result read back may claim counts
/// whose u64 sum overflows.
fn watch_total(
    w: &WindowFigures,
    of: fn(&crate::metrics::figures::WatchEvents) -> u64,
) -> Option<f64> {
    (!w.watch_events.is_empty()).then(|| w.watch_events.values().map(|e| of(e) as f64).sum::<f64>())
}

/// The seconds the controller manager waited on its own limit; None
/// where the provider does not serve its metrics.
pub fn kcm_wait_s(w: &WindowFigures) -> Option<f64> {
    w.client_throttle
        .get(crate::metrics::window::KCM)
        .map(|t| t.waited_s)
}

/// The metrics every run has, in the order reports show them when a
/// workload does not place them itself. A workload's list takes the ones
/// it places among its own ([`Common::take`]) and then the rest
/// ([`Common::rest`]): a metric added here shows in every workload's
/// results without touching them.
pub struct Common(Vec<Metric<RunFigures>>);

impl Common {
    /// The metric `spec` names, for runs of type `R` (`part` finds their
    /// figures).
    pub fn take<R: 'static>(&mut self, spec: &Spec, part: fn(&R) -> &RunFigures) -> Metric<R> {
        let at = self
            .0
            .iter()
            .position(|m| m.spec.key == spec.key)
            .unwrap_or_else(|| panic!("{} is not a common metric, or was taken twice", spec.key));
        self.0.remove(at).of(part)
    }

    /// The metric `spec` (one of this module's) names, still here.
    pub fn of(&self, spec: &Spec) -> &Metric<RunFigures> {
        self.0
            .iter()
            .find(|m| m.spec.key == spec.key)
            .unwrap_or_else(|| panic!("{} is not a common metric, or was taken", spec.key))
    }

    /// Every common metric's spec, in declaration order.
    pub fn specs(&self) -> impl Iterator<Item = &Spec> {
        self.0.iter().map(|m| &m.spec)
    }

    /// Every common metric not taken, in declaration order.
    pub fn rest<R: 'static>(self, part: fn(&R) -> &RunFigures) -> Vec<Metric<R>> {
        self.0.into_iter().map(|m| m.of(part)).collect()
    }
}

/// The metrics every run has, declared: how a run's figures give each
/// (those only report.md's detail tables and report.html's charts show
/// last: [`detail`]).
pub fn common() -> Common {
    let mut all = vec![
        Metric::one(API_REQUESTS, |r: &RunFigures| {
            r.window.api_requests_total as f64
        }),
        Metric::one(ETCD_WRITES, |r: &RunFigures| {
            r.window.etcd_writes_total as f64
        }),
        Metric::one(ETCD_BYTES, |r: &RunFigures| r.window.etcd.put_bytes as f64),
        Metric::one(CPU, |r: &RunFigures| r.window.apiserver_etcd_cpu_s),
        Metric::one(OBJECTS_SUM, |r: &RunFigures| {
            // As f64: summed u64 counts read back may overflow.
            r.window
                .objects_created
                .values()
                .map(|v| *v as f64)
                .sum::<f64>()
        }),
        Metric::one(PODS, |r: &RunFigures| r.pods_created as f64),
        Metric::one(CONTAINERS, |r: &RunFigures| r.containers_created as f64),
        Metric::one(POD_P50, |r: &RunFigures| r.pod_startup_ms.p50),
        Metric::one(POD_P99, |r: &RunFigures| r.pod_startup_ms.p99),
        Metric::each(API_LATENCY, |r: &RunFigures| by_class(r, |p| p.p99)),
        Metric::one(WALL, |r: &RunFigures| r.wall_s),
        Metric::one(APISERVER_RSS, |r: &RunFigures| {
            peak_rss(&r.window, "kube-apiserver").round()
        }),
        Metric::one(ETCD_RSS, |r: &RunFigures| {
            peak_rss(&r.window, "etcd").round()
        }),
        Metric::each(OBJECTS, |r: &RunFigures| {
            r.window
                .objects_created
                .iter()
                .filter(|(res, _)| res.as_str() != "events")
                .map(|(res, n)| (res.clone(), *n as f64))
                .collect()
        }),
        Metric::maybe(KCM_WAIT, |r: &RunFigures| kcm_wait_s(&r.window)),
        Metric::each(JOB_START_P50, |r: &RunFigures| {
            lifecycle(r, |l| l.create_to_start_ms.p50, |l| l.started)
        }),
        Metric::each(JOB_START_P99, |r: &RunFigures| {
            lifecycle(r, |l| l.create_to_start_ms.p99, |l| l.started)
        }),
        Metric::each(JOB_READY_P99, |r: &RunFigures| {
            lifecycle(r, |l| l.create_to_ready_ms.p99, |l| l.started)
        }),
        Metric::each(JOB_FINISH_P99, |r: &RunFigures| {
            lifecycle(r, |l| l.start_to_finish_ms.p99, |l| l.finished)
        }),
        Metric::maybe(WATCH_EVENTS, |r: &RunFigures| {
            watch_total(&r.window, |w| w.events)
        }),
        Metric::maybe(WATCH_BYTES, |r: &RunFigures| {
            watch_total(&r.window, |w| w.bytes)
        }),
        Metric::each(WATCH_EVENTS_BY, |r: &RunFigures| {
            r.window
                .watch_events
                .iter()
                .map(|(res, w)| (res.clone(), w.events as f64))
                .collect()
        }),
        Metric::each(BY_CLIENT, |r: &RunFigures| {
            r.window
                .api_requests_by_client
                .iter()
                .map(|(c, n)| (c.clone(), *n as f64))
                .collect()
        }),
        Metric::each(BY_CLIENT_TOP, |r: &RunFigures| {
            r.window
                .api_requests_by_client_request
                .iter()
                .filter_map(|(c, reqs)| {
                    // The largest count; ties to the first by name, so a
                    // run's top is the same however the map was filled.
                    let (req, n) =
                        reqs.iter()
                            .fold(None::<(&String, u64)>, |best, (k, v)| match best {
                                Some((_, b)) if b >= *v => best,
                                _ => Some((k, *v)),
                            })?;
                    Some((format!("{c}: {req}"), n as f64))
                })
                .collect()
        }),
        Metric::each(BY_CLIENT_REQUEST, |r: &RunFigures| classes(&r.window)),
        Metric::each(BY_DRIVER, |r: &RunFigures| {
            let classes = classes(&r.window);
            by_driver(classes.iter().map(|(c, n)| (c.as_str(), *n)))
                .into_iter()
                .collect()
        }),
        Metric::each(SLO_P99, |r: &RunFigures| {
            r.window
                .api_latency_slo
                .iter()
                .filter(|x| x.count >= SLO_MIN_CALLS)
                .map(|x| (slo_member(x), x.latency_ms.p99))
                .collect()
        }),
    ];
    all.extend(detail());
    Common(all)
}

/// The metrics every run has that only the report's detail tables and
/// charts show (`Views::NONE`): etcd's own figures ([`ETCD_TABLE`]), each
/// request class's p50 and p90, the pod start-up p90.
fn detail() -> Vec<Metric<RunFigures>> {
    vec![
        Metric::one(POD_P90, |r: &RunFigures| r.pod_startup_ms.p90),
        Metric::each(API_LATENCY_P50, |r: &RunFigures| by_class(r, |p| p.p50)),
        Metric::each(API_LATENCY_P90, |r: &RunFigures| by_class(r, |p| p.p90)),
        Metric::one(ETCD_PUTS, |r: &RunFigures| r.window.etcd.puts as f64),
        Metric::one(ETCD_DELETES, |r: &RunFigures| r.window.etcd.deletes as f64),
        Metric::one(ETCD_TXNS, |r: &RunFigures| r.window.etcd.txns as f64),
        Metric::one(ETCD_RANGES, |r: &RunFigures| r.window.etcd.ranges as f64),
        Metric::one(ETCD_DB_SIZE, |r: &RunFigures| {
            r.window.etcd.db_size_bytes as f64 / 1048576.0
        }),
        Metric::maybe(ETCD_WAL_FSYNC, |r: &RunFigures| {
            r.window.etcd.wal_fsync_ms.as_ref().map(|p| p.p99)
        }),
        Metric::maybe(ETCD_COMMIT, |r: &RunFigures| {
            r.window.etcd.backend_commit_ms.as_ref().map(|p| p.p99)
        }),
    ]
}
