//! One mode of a Thor scenario on a running cluster: the namespace with
//! what HPCC's chart installs once (service accounts, ConfigMaps, storage
//! claims, its NetworkPolicies, RBAC), then the driver inside one
//! measurement window, then the figures of the mode.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, ServiceAccount};
use kube::api::Api;

use crate::cluster::provider::Cluster;
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::metrics::attribution::is_write_request;
use crate::metrics::percentiles::Percentiles;
use crate::metrics::pods::{self, PodTracker};
use crate::metrics::pprof;
use crate::metrics::timeline::Timeline;
use crate::metrics::window::NOT_MEASURED_REQUESTS;
use crate::metrics::window::{Options, Window};
use crate::poll::Poll;
use crate::workload::thor::discovery::{Discovery, DiscoveryCache};
use crate::workload::thor::driver::callplan;
use crate::workload::thor::driver::calls::{CallLog, Kubectl, Who};
use crate::workload::thor::driver::dispatch::Dispatcher;
use crate::workload::thor::driver::env::{Plan, ThorEnv};
use crate::workload::thor::driver::{self, DriverReport};
use crate::workload::thor::kubectl::KubectlModel;
use crate::workload::thor::mode_plan::{kubectl_model, plan};
use crate::workload::thor::scenario::{KeepJobs, ThorScenario};
use crate::workload::thor::setup_objects::setup_objects;
use crate::workload::thor::site::Site;
use crate::workload::thor::template::{self, Mode};

use crate::bench::core::figures::RunFigures;
use crate::bench::thor::contention::{self, Contention};
use crate::bench::thor::result::ModeResult;

/// The namespace, HPCC's once-per-release objects and both identities'
/// RBAC, as the harness; waits until pods can be created and the storage
/// claims are bound.
async fn setup(admin: &kube::Client, plan: &Plan, site: &Site) -> Result<Vec<String>> {
    let docs = setup_objects(plan, site.service_accounts.as_ref())?;
    crate::install::apply::apply_all(admin, &docs)
        .await
        .context("creating the namespace, HPCC's setup objects and RBAC")?;
    let ns = plan.namespace.as_str();
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), ns);
    Poll::new(
        format!("namespace {ns}'s default service account"),
        Duration::from_secs(30),
    )
    .until(|| async { Ok(sas.get_opt("default").await?.map(|_| ())) })
    .await?;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(admin.clone(), ns);
    Poll::new("HPCC's storage claims Bound", Duration::from_secs(60))
        .until_state(|| async {
            let list = pvcs.list(&Default::default()).await?;
            let pending: Vec<String> = list
                .items
                .iter()
                .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Bound"))
                .filter_map(|c| c.metadata.name.clone())
                .collect();
            Ok(if pending.is_empty() {
                Ok(())
            } else {
                Err(format!("pending: {}", pending.join(", ")))
            })
        })
        .await?;
    // The setup's NetworkPolicies stay when the driver's are gone.
    Ok(docs
        .iter()
        .filter(|d| d["kind"] == "NetworkPolicy")
        .filter_map(|d| d["metadata"]["name"].as_str().map(str::to_string))
        .collect())
}

/// `--attribution client`: the window counted no client (no audit log,
/// no APF); HPCC's two identities are counted from their kubectl's
/// request log instead, and the figures say that everyone else is not.
fn client_side(w: &mut crate::metrics::WindowFigures, calls: &CallLog, thor: &str, eclcc: &str) {
    w.not_measured.retain(|m| m != NOT_MEASURED_REQUESTS);
    w.not_measured.push(
        "API requests of clients other than HPCC's two identities, and their writes (counted client-side, from their kubectl's request count)"
            .to_string(),
    );
    w.attribution = "client".into();
    w.api_requests_by_client.clear();
    for (who, user) in [(Who::ThorAgent, thor), (Who::Eclccserver, eclcc)] {
        w.api_requests_by_client
            .insert(user.to_string(), calls.requests(who));
    }
    w.api_requests_total = w.api_requests_by_client.values().sum();
}

/// Run one mode on a running cluster and measure it. `kubectl` is the
/// binary of the scenario's kubectl version. The mode's timeline is
/// returned beside its figures; with `scrape` it has the API server's and
/// etcd's own metrics every second too.
pub async fn run_mode(
    cluster: &impl Cluster,
    site: &Site,
    s: &ThorScenario,
    mode: Mode,
    kubectl: &Path,
    scrape: bool,
    profile: Option<(&pprof::Request, String)>,
) -> Result<(ModeResult, Timeline)> {
    let ready = prepare(cluster, site, s, mode, kubectl).await?;
    let opts = Options {
        scrape,
        apf: site.apf.clone(),
        ..Default::default()
    };
    let window = Window::open_with(cluster, opts).await?;
    let (report, closed, profiles) = measured(cluster, window, &ready, profile).await?;
    let result = mode_result(&ready, site, s, mode, &report, &closed, &profiles)?;
    Ok((result, closed.timeline))
}

/// A mode made ready on its cluster, before its window opens.
struct Ready {
    plan: Plan,
    env: ThorEnv,
    model: KubectlModel,
    tracker: Arc<PodTracker>,
    /// What HPCC's chart installed once (kept when the Jobs go).
    keep: Vec<String>,
    /// What the API server serves, for the calls' predicted requests.
    served: Discovery,
    minor: u32,
}

/// Everything before the window: the mode's templates checked, its plan in
/// the site's namespace, HPCC's setup objects (and Kueue's queues), the
/// two identities' kubectl, the pod tracker, and a warm discovery cache
/// filled.
async fn prepare(
    cluster: &impl Cluster,
    site: &Site,
    s: &ThorScenario,
    mode: Mode,
    kubectl: &Path,
) -> Result<Ready> {
    let minor = K8sRelease::parse(&s.cluster.k8s_minor)?.minor_number();
    if template::templates_for(mode, minor).is_empty() {
        bail!(bad_input(format!(
            "{} mode has no templates for Kubernetes {}",
            mode.name(),
            s.cluster.k8s_minor
        )));
    }
    let mut plan = plan(s, mode)?;
    plan.namespace = site.namespace.clone();
    plan.real_pods = site.real_pods.clone();
    let ns = plan.namespace.clone();
    let admin = cluster.client().await?;
    let keep = setup(&admin, &plan, site).await?;
    if mode.needs_kueue() {
        let cpu = s.total_cpu_milli().map_err(bad_input)?;
        let queues = crate::workload::thor::mode::kueue_objects(&ns, cpu);
        crate::install::apply::apply_all(&admin, &queues)
            .await
            .context("creating Thor's Kueue queues")?;
    }
    let model = kubectl_model(s)?;
    let cache = model.cache();
    let identity = |who: Who, (kubeconfig, user): &(PathBuf, String)| Kubectl {
        who,
        model: model.clone(),
        binary: kubectl.to_path_buf(),
        kubeconfig: kubeconfig.clone(),
        cache_root: site.work_dir.join(user.replace(':', "-")),
        namespace: ns.clone(),
        count_requests: site.count_requests,
    };
    let tracker = Arc::new(PodTracker::start(admin.clone(), &ns));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let env = ThorEnv {
        admin: admin.clone(),
        exits: site.exits.clone(),
        thor: identity(Who::ThorAgent, &site.thor),
        eclcc: identity(Who::Eclccserver, &site.eclcc),
        namespace: ns.clone(),
        tracker: tracker.clone(),
        dispatcher: Dispatcher::new(plan.max_graphs),
        calls: CallLog::default(),
        background: Default::default(),
        step_timeout: Duration::from_secs(900),
        started: Instant::now(),
        k8s_minor: minor,
    };
    // A warm cache is warm before the window opens: one call fills it.
    if cache == DiscoveryCache::Warm {
        let scratch = CallLog::default();
        for k in [&env.thor, &env.eclcc] {
            k.list_pods(&scratch, "app=warm-up", "{.items}").await?;
        }
    }
    let served = Discovery::read(&admin).await?;
    Ok(Ready {
        plan,
        env,
        model,
        tracker,
        keep,
        served,
        minor,
    })
}

/// The driver inside the open `window` (and, until HPCC's Jobs are gone,
/// the wait for them), the window closed, and beside it the control
/// plane's profiles when asked.
async fn measured(
    cluster: &impl Cluster,
    mut window: Window,
    ready: &Ready,
    profile: Option<(&pprof::Request, String)>,
) -> Result<(DriverReport, crate::metrics::window::Closed, Vec<PathBuf>)> {
    let (env, plan) = (&ready.env, &ready.plan);
    let work = async {
        let report: DriverReport = driver::run(env, plan).await?;
        // keepJobs all (or podfailures after a failure) leaves Jobs and
        // their pods behind on purpose: nothing to wait for then.
        let kept = match plan.keep_jobs {
            KeepJobs::None => false,
            KeepJobs::Podfailures => report.instances.iter().any(|i| i.failed.is_some()),
            KeepJobs::All => true,
        };
        if !kept {
            driver::wait_all_gone(env, &ready.keep, Duration::from_secs(600)).await?;
        }
        Ok::<_, anyhow::Error>(report)
    };
    let measured = async {
        let report = window.during(cluster, work).await?;
        let closed = window.close(cluster).await?;
        Ok::<_, anyhow::Error>((report, closed))
    };
    // Profiles run beside the window, not inside it: a CPU profile longer
    // than the workload does not stretch the mode's wall time.
    let profiles = async {
        match &profile {
            Some((req, prefix)) => {
                pprof::collect(cluster, req, prefix, Duration::from_secs(1)).await
            }
            None => Ok(Vec::new()),
        }
    };
    let (measured, profiles) = tokio::join!(measured, profiles);
    let (report, closed) = measured?;
    let profiles = profiles.context("taking the control plane's profiles")?;
    Ok((report, closed, profiles))
}

/// The mode's figures: the window's, HPCC's identities' requests measured
/// and predicted from their calls, the pods' and instances' times, and
/// (when the scenario has a capacity or an instance failed) contention.
fn mode_result(
    ready: &Ready,
    site: &Site,
    s: &ThorScenario,
    mode: Mode,
    report: &DriverReport,
    closed: &crate::metrics::window::Closed,
    profiles: &[PathBuf],
) -> Result<ModeResult> {
    let (env, plan, ns) = (&ready.env, &ready.plan, &ready.plan.namespace);
    let predicted = |who: Who| -> u64 {
        env.calls
            .calls()
            .into_iter()
            .filter(|(w, _)| *w == who)
            .map(|(_, c)| u64::from(ready.model.expected_requests(&c, ns, &ready.served).total()))
            .sum()
    };
    let pf = pods::figures(&ready.tracker.snapshot());
    let starts: Vec<f64> = report.instances.iter().filter_map(|i| i.start_ms).collect();
    let walls: Vec<f64> = report.instances.iter().map(|i| i.wall_ms).collect();
    let instance_start_ms = Percentiles::of_ms(&starts);
    let mut w = closed.figures.clone();
    if site.count_requests {
        client_side(&mut w, &env.calls, &site.thor.1, &site.eclcc.1);
    }
    let of = |user: &str| w.api_requests_by_client.get(user).copied().unwrap_or(0);
    let contention = contention_of(ready, s, report, &of);
    let thor_agent_writes = w
        .api_requests_by_client_request
        .get(&site.thor.1)
        .map_or(0, |reqs| {
            reqs.iter()
                .filter(|(req, _)| is_write_request(req))
                .map(|(_, n)| n)
                .sum()
        });
    let (thor_agent_requests, eclccserver_requests) = (of(&site.thor.1), of(&site.eclcc.1));
    Ok(ModeResult {
        run: RunFigures {
            mode: mode.name().into(),
            window: w,
            pods_created: pf.pods_created,
            containers_created: pf.containers_created,
            pod_startup_ms: pf.startup_ms,
            pod_schedule_ms: pf.schedule_ms,
            wall_s: closed.elapsed.as_secs_f64(),
        },
        instances: report.instances.len() as u32,
        workunits: plan.workunits,
        graphs: report.instances.iter().map(|i| i.graphs).sum(),
        compile_jobs: report.compile_jobs,
        thor_agent_requests,
        thor_agent_user: site.thor.1.clone(),
        thor_agent_writes,
        thor_agent_requests_predicted: predicted(Who::ThorAgent),
        thor_agent_calls: env.calls.count(Who::ThorAgent),
        thor_agent_calls_by_purpose: callplan::count_by_purpose(&env.calls, Who::ThorAgent),
        call_plan: Some(callplan::PlanInputs::of(
            plan,
            ready.minor,
            &report.instances,
        )?),
        eclccserver_requests,
        eclccserver_calls: env.calls.count(Who::Eclccserver),
        eclccserver_requests_predicted: predicted(Who::Eclccserver),
        gang_start_ms: (mode == Mode::JobsetGang).then_some(instance_start_ms),
        worker_pod_rates: pods::PodRates::mean(
            &report
                .instances
                .iter()
                .map(|i| i.worker_rates)
                .collect::<Vec<_>>(),
        ),
        instance_start_ms,
        instance_wall_s: Percentiles::of_ms(&walls).scaled(0.001),
        profiles: profiles
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect(),
        contention,
    })
}

/// How the instances competed for room, when the scenario has a capacity
/// or an instance failed (`of`: a user's requests in the window).
fn contention_of(
    ready: &Ready,
    s: &ThorScenario,
    report: &DriverReport,
    of: &dyn Fn(&str) -> u64,
) -> Option<Contention> {
    let failures: Vec<String> = report
        .instances
        .iter()
        .filter_map(|i| i.failed.clone().map(|f| format!("{}: {f}", i.job_name)))
        .collect();
    (s.capacity.is_some() || !failures.is_empty()).then(|| {
        let pods = ready.tracker.snapshot();
        let expected = 1 + ready.plan.worker_pods();
        let end = Instant::now();
        Contention {
            room_for_instances: s.room_for_instances(),
            instances_completed: (report.instances.len() - failures.len()) as u32,
            instances_failed: failures.len() as u32,
            failures,
            workunits_failed: report.failed_workunits,
            deadlock: contention::deadlock(&pods, expected, end),
            wasted_pod_seconds: contention::wasted_pod_seconds(&pods, expected, end),
            scheduler_requests: of(crate::cluster::controllers::SCHEDULER_USER),
            kueue_requests: of(crate::cluster::controllers::KUEUE_USER),
            most_instances_at_once: contention::most_instances_at_once(&pods, expected, end),
        }
    })
}
