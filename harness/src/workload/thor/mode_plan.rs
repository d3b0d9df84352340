//! The driver's plan a Thor scenario makes for one mode: HPCC's instance
//! (name, workers, limits, lingering), the workunits and their graphs, in
//! HPCC's `default` namespace until a site puts it elsewhere; and the
//! kubectl the scenario's HPCC forks.

use std::time::Duration;

use anyhow::Result;

use crate::error::bad_input;
use crate::workload::thor::discovery::DiscoveryCache;
use crate::workload::thor::driver::env::{CompilePlan, Plan};
use crate::workload::thor::kubectl::KubectlModel;
use crate::workload::thor::scenario::{DiscoveryCacheSpec, ThorScenario, parse_duration};
use crate::workload::thor::template::Mode;

/// HPCC is installed, as its own docs do, without a namespace: `default`
/// (kubectl then makes no namespace lookups after a 404; see
/// workload::thor::kubectl).
pub const NAMESPACE: &str = "default";
/// The thoragent pod's name suffix HPCC builds job names from.
pub const AGENT_SUFFIX: &str = "6d9f7c8b5d-x2v9k";
/// The platform version the pods run (the pinned chart's).
pub const JOB_VERSION: &str = crate::tools::versions::HPCC_CHART_VERSION;

fn duration(v: &str) -> Result<Duration> {
    parse_duration(v).map_err(bad_input)
}

/// The plan a scenario makes for `mode`.
pub fn plan(s: &ThorScenario, mode: Mode) -> Result<Plan> {
    Ok(Plan {
        mode,
        thor_name: s.thor.name.clone(),
        agent_suffix: AGENT_SUFFIX.into(),
        num_workers: s.thor.num_workers,
        num_workers_per_pod: s.thor.num_workers_per_pod,
        job_version: JOB_VERSION.into(),
        max_graphs: s.thor.max_graphs,
        max_jobs: s.thor.max_jobs,
        linger: duration(&s.thor.linger_period)?,
        keep_jobs: s.thor.keep_jobs,
        workunits: s.workunits,
        graphs_per_workunit: s.graphs_per_workunit,
        graph: duration(&s.graph_duration)?,
        compile: match s.compile.enabled {
            false => None,
            true => Some(CompilePlan {
                duration: duration(&s.compile.duration)?,
                linger: duration(&s.compile.linger_period)?,
                max_active: s.compile.max_active,
            }),
        },
        postrun_exit: duration(&s.postrun_exit)?,
        dns_hostnames: s.jobset.enable_dns_hostnames,
        namespace: NAMESPACE.into(),
        resources: s.resources(),
        scheduling_timeout: Duration::from_secs(s.thor.scheduling_timeout_secs.into()),
        max_registration: Duration::from_secs(
            u64::from(s.thor.expert.max_worker_registration_mins) * 60,
        ),
        real_pods: None,
    })
}

/// The kubectl HPCC runs in scenario `s` (its version and discovery cache).
pub fn kubectl_model(s: &ThorScenario) -> Result<KubectlModel> {
    let cache = match s.kubectl.discovery_cache {
        DiscoveryCacheSpec::None => DiscoveryCache::None,
        DiscoveryCacheSpec::Warm => DiscoveryCache::Warm,
    };
    KubectlModel::new(&s.kubectl.version, cache)
}
