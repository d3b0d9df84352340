//! What the Thor benchmark brings to the benchmark core: its metrics,
//! declared once (HPCC's identities' requests and calls, instance start,
//! worker pod rates, beside the figures every run has), how its runs
//! combine into a typical run, and what only its report and verdicts
//! add (contention, the Thor identity's requests, its calls against the
//! plan).

use std::collections::BTreeMap;

use crate::bench::core::figures::MACHINE;
use crate::bench::core::figures::{self, RunFigures};
use crate::bench::core::metric::{Driver, Kind, Metric, POLLS, Spec, Views};
use crate::bench::core::result::Run;
use crate::bench::thor::result::{ModeResult, OTHERS, RESULT_SCHEMA, ThorResult, ThorShape};

/// The Thor identity's requests: HPCC's clients poll with a doubling
/// backoff until a pod is scheduled and a Job is done, and every poll is
/// a cold kubectl (~27 requests): one poll more per instance moves a
/// smoke run by ~5 %. Off the recording machine a change must pass
/// [`POLLS_FLOOR`].
const AGENT_REQUESTS: Spec = Spec::new("thor_agent_requests", "… by the Thor identity", "requests")
    .views(SHOWN)
    .machine_floor(POLLS_FLOOR)
    .driver(Driver::Pace(POLLS));
/// Off the recording machine, HPCC's identities' requests that move by
/// fewer than this are not judged: two cold kubectl polls (~27 requests
/// each), what another machine's pace alone adds. In the smoke
/// baseline's 63 runs on three machines (2026-12-07) the identities'
/// totals stood still in a mode but for single runs one poll higher
/// (27, on an idle and a loaded machine) and two (54, eclccserver's in
/// jobset mode, beside 1.6 busy cores of a Go build); a change of HPCC's
/// own — a call added per instance — is four polls or more.
const POLLS_FLOOR: f64 = 60.0;
const AGENT_WRITES: Spec = Spec::new("thor_agent_writes", "… of which writes", "requests")
    .driver(Driver::Workload)
    .kind(Kind::Fixed, 0.0)
    .views(SHOWN);
const AGENT_PREDICTED: Spec = Spec::new(
    "thor_agent_requests_predicted",
    "the Thor identity's requests as its call list predicts",
    "requests",
)
.driver(Driver::Workload)
.views(Views::HEADLINE.and(Views::JUDGED));
const ECLCC_REQUESTS: Spec =
    Spec::new("eclccserver_requests", "eclccserver's requests", "requests")
        .views(SHOWN.without_row())
        .machine_floor(POLLS_FLOOR)
        .driver(Driver::Pace(POLLS));
const ECLCC_PREDICTED: Spec = Spec::new(
    "eclccserver_requests_predicted",
    "eclccserver's requests as its call list predicts",
    "requests",
)
.driver(Driver::Workload)
.views(Views::HEADLINE.and(Views::JUDGED));
const INSTANCE_START: Spec = Spec::new(
    "instance_start_ms.p99",
    "instance start p99 (ms, first pod created → last Running)",
    "ms",
)
.driver(Driver::Pace(MACHINE))
.short("instance start p99")
.kind(Kind::Latency, 1000.0)
.views(SHOWN.and(Views::ANSWER));
const CREATED_PER_S: Spec = Spec::new(
    "worker_pod_rates.created_per_s",
    "worker pods created / s (per instance)",
    "pods/s",
)
.driver(Driver::Pace(MACHINE))
.views(Views::ROW);
const BOUND_PER_S: Spec = Spec::new(
    "worker_pod_rates.bound_per_s",
    "worker pods bound / s",
    "pods/s",
)
.driver(Driver::Pace(MACHINE))
.views(Views::ROW);
const RUNNING_PER_S: Spec = Spec::new(
    "worker_pod_rates.running_per_s",
    "worker pods Running / s",
    "pods/s",
)
.driver(Driver::Pace(MACHINE))
.views(Views::ROW);
const INSTANCE_WALL: Spec = Spec::new("instance_wall_s.p50", "instance wall p50 (s)", "s")
    .driver(Driver::Pace(MACHINE))
    .views(Views::ROW);
const CPU_PER_INSTANCE: Spec = Spec::new(
    "apiserver_etcd_cpu_s_per_instance",
    "… per instance",
    "cpu-s",
)
.driver(Driver::Pace(MACHINE))
.cost()
.views(Views::ROW);
/// Everyone's requests but HPCC's two identities': the controllers', the
/// kubelets', the scheduler's. Unlike the total it does not follow how
/// long HPCC polled, but it does follow the machine's timing: how the
/// controllers' work queues coalesced events and which of two
/// controllers won a race (measured: jobset ×1.056 on unchanged code on
/// the CI machine, where ten idle runs here spread 1.5 %).
const OTHERS_SPEC: Spec = Spec::new(OTHERS, "API requests of everyone but HPCC", "requests")
    .views(Views::KEPT)
    .driver(Driver::Pace(
        "controllers' requests follow how their queues coalesced events",
    ));
/// The Thor identity's kubectl calls by kind (polls included): a
/// regression that adds calls shows here by name. Off the recording
/// machine a change must pass [`POLL_CALLS_FLOOR`] calls.
const AGENT_CALLS: Spec = Spec::new(
    "thor_agent_calls.{}",
    "the Thor identity's calls",
    "requests",
)
.machine_floor(POLL_CALLS_FLOOR)
.views(Views::JUDGED.and(Views::KEPT))
.driver(Driver::Calls)
.new_members_are_behaviour();
/// eclccserver's identity the same way (its compile Jobs' polls).
const ECLCC_CALLS: Spec = Spec::new("eclccserver_calls.{}", "eclccserver's calls", "requests")
    .machine_floor(POLL_CALLS_FLOOR)
    .views(Views::JUDGED.and(Views::KEPT))
    .driver(Driver::Calls)
    .new_members_are_behaviour();

/// Off the recording machine, HPCC's calls of one kind that move by
/// fewer than this are not judged:
/// a poll is one call, and a pod seen one poll later makes one more — in
/// the smoke baseline's 63 runs on three machines (2026-12-07) a kind of
/// call that stood still in the rest moved by up to 2 in a run
/// (eclccserver's `get-job` 36 → 38, the Thor identity's `list-pods`
/// 4 → 5), where a change of HPCC's own (a call added per instance) is 4
/// or more.
const POLL_CALLS_FLOOR: f64 = 3.0;

const SHOWN: Views = Views::HEADLINE
    .and(Views::JUDGED)
    .and(Views::KEPT)
    .and(Views::ROW)
    .and(Views::ROUNDS);

fn run_of(m: &ModeResult) -> &RunFigures {
    &m.run
}

fn calls(m: &BTreeMap<String, u64>) -> Vec<(String, f64)> {
    m.iter().map(|(k, n)| (k.clone(), *n as f64)).collect()
}

/// kube-apiserver + etcd CPU seconds per Thor instance.
pub fn cpu_per_instance(m: &ModeResult) -> f64 {
    if m.instances == 0 {
        0.0
    } else {
        m.run.window.apiserver_etcd_cpu_s / f64::from(m.instances)
    }
}

/// The Thor benchmark's metrics, in the order its report shows them: its
/// own among the common ones it places, then the rest of those.
pub fn metrics() -> Vec<Metric<ModeResult>> {
    let mut c = figures::common();
    let mut v = vec![
        c.take(&figures::API_REQUESTS, run_of),
        Metric::one(AGENT_REQUESTS, |m: &ModeResult| {
            m.thor_agent_requests as f64
        }),
        Metric::one(AGENT_WRITES, |m: &ModeResult| m.thor_agent_writes as f64),
        Metric::one(AGENT_PREDICTED, |m: &ModeResult| {
            m.thor_agent_requests_predicted as f64
        }),
        Metric::one(ECLCC_REQUESTS, |m: &ModeResult| {
            m.eclccserver_requests as f64
        }),
        Metric::one(ECLCC_PREDICTED, |m: &ModeResult| {
            m.eclccserver_requests_predicted as f64
        }),
        c.take(&figures::ETCD_WRITES, run_of),
        c.take(&figures::ETCD_BYTES, run_of),
        c.take(&figures::CPU, run_of),
        c.take(&figures::OBJECTS_SUM, run_of),
        c.take(&figures::PODS, run_of),
        c.take(&figures::CONTAINERS, run_of),
        c.take(&figures::POD_P50, run_of),
        c.take(&figures::POD_P99, run_of),
        Metric::one(INSTANCE_START, |m: &ModeResult| m.instance_start_ms.p99),
        Metric::one(CREATED_PER_S, |m: &ModeResult| {
            m.worker_pod_rates.created_per_s.round()
        }),
        Metric::one(BOUND_PER_S, |m: &ModeResult| {
            m.worker_pod_rates.bound_per_s.round()
        }),
        Metric::one(RUNNING_PER_S, |m: &ModeResult| {
            m.worker_pod_rates.running_per_s.round()
        }),
        Metric::one(INSTANCE_WALL, |m: &ModeResult| m.instance_wall_s.p50),
        c.take(&figures::API_LATENCY, run_of),
        c.take(&figures::WALL, run_of),
        Metric::one(CPU_PER_INSTANCE, cpu_per_instance),
        c.take(&figures::APISERVER_RSS, run_of),
        c.take(&figures::ETCD_RSS, run_of),
        Metric::one(OTHERS_SPEC, |m: &ModeResult| {
            m.run
                .window
                .api_requests_total
                .saturating_sub(m.thor_agent_requests + m.eclccserver_requests) as f64
        }),
        Metric::each(AGENT_CALLS, |m: &ModeResult| calls(&m.thor_agent_calls)),
        Metric::each(ECLCC_CALLS, |m: &ModeResult| calls(&m.eclccserver_calls)),
    ];
    v.extend(c.rest(run_of));
    v
}

impl Run for ModeResult {
    type Shape = ThorShape;
    const SCHEMA: &'static str = RESULT_SCHEMA;
    const TITLE: &'static str = "Thor benchmark";
    const COUNTED_CLIENT_SIDE: &'static str = "Requests are HPCC's two identities' only, counted client-side from their kubectl's request log (--attribution client): the rows of everyone else read 0.";
    const REQUEST_TOTALS: &'static [&'static str] = &[figures::API_REQUESTS.key, OTHERS];
    const KUBECTL: &'static str = "kubectl (HPCC's drivers)";
    const IN_RANGE: &'static str = "pods, containers, objects and the Thor identity's writes";
    const HERE: &'static str = "`harness bench thor … --compare --here --repeat 3` (the baseline's own versions run round by round beside yours on this machine, judged against each other: here.md)";

    fn html_heading() -> String {
        "Thor on Kubernetes: baseline vs JobSet".into()
    }

    fn metrics() -> Vec<Metric<Self>> {
        metrics()
    }

    fn figures(&self) -> &RunFigures {
        &self.run
    }

    fn figures_mut(&mut self) -> &mut RunFigures {
        &mut self.run
    }

    /// Every field combined; what describes the run rather than measures
    /// it (its identity's name, the plan's inputs, its profiles, the
    /// contention found) is the first run's — each run's own stays in the
    /// repeats, where the plan check and the contention table read it.
    fn typical(runs: &[&Self]) -> Self {
        use crate::metrics::combine::first;
        crate::metrics::combine::typical!(runs; ModeResult {
            run,
            instances,
            workunits,
            graphs,
            compile_jobs,
            thor_agent_requests,
            thor_agent_user by first,
            thor_agent_writes,
            thor_agent_requests_predicted,
            thor_agent_calls,
            thor_agent_calls_by_purpose,
            call_plan by first,
            eclccserver_requests,
            eclccserver_calls,
            eclccserver_requests_predicted,
            instance_start_ms,
            gang_start_ms,
            worker_pod_rates,
            instance_wall_s,
            profiles by first,
            contention by first,
        })
    }

    /// A baseline of Thor's holds the modes `bench thor` runs.
    fn known_mode(mode: &str) -> bool {
        crate::workload::thor::Mode::parse(mode).is_some()
    }

    fn heading(r: &ThorResult) -> String {
        format!(
            "## Thor benchmark: {} — {} workers ({} per pod), {} at a time, graph {} — Kubernetes v{} ({})\n\n",
            r.scenario,
            r.shape.num_workers,
            r.shape.num_workers_per_pod,
            r.shape.max_graphs,
            r.shape.graph_duration,
            r.k8s_version,
            r.provider
        )
    }

    fn per_run(r: &ThorResult) -> String {
        format!(
            "per run of {} instances",
            r.modes.values().next().map_or(0, |m| m.result.instances)
        )
    }

    fn after_rounds(r: &ThorResult) -> String {
        crate::bench::thor::report::contention(r)
    }

    fn after_clients(r: &ThorResult) -> String {
        crate::bench::thor::report::identity_requests(r)
    }

    fn own_verdicts(r: &ThorResult) -> Vec<crate::bench::core::verdict::model::Verdict> {
        crate::bench::thor::plan::against_plan(r)
    }

    fn chart_group(r: &ThorResult) -> String {
        format!("{} workers", r.shape.num_workers)
    }

    fn junit_names(r: &ThorResult) -> (String, String) {
        (
            format!("harness bench thor {}", r.scenario),
            format!("bench.thor.{}", r.scenario),
        )
    }
}
