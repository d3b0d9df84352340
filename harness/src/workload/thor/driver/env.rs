//! What the Thor driver works with: the cluster clients and HPCC's
//! kubectl identities (`ThorEnv`), the plan it follows (`Plan`, from a
//! scenario), and what it reports per instance.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::metrics::pods::PodTracker;
use crate::workload::thor::capacity::ThorResources;
use crate::workload::thor::driver::calls::{CallLog, Kubectl};
use crate::workload::thor::driver::dispatch::Dispatcher;
use crate::workload::thor::realpods::RealPods;
use crate::workload::thor::scenario::KeepJobs;
use crate::workload::thor::template::{Mode, ThorParams};

/// The chart's labels that select an instance's pods (`job=<job name>`)
/// and their role (`component=thormanager|thorworker`), in every mode.
pub const JOB_LABEL: &str = "job";
pub const COMPONENT_LABEL: &str = "component";
/// kwok keeps Thor pods Running this long; processes end when the driver
/// says so.
pub const POD_RUNTIME: &str = "24h";

/// What a driver run needs from its surroundings.
pub struct ThorEnv {
    /// The harness's own client (admin): setup, watches, checks.
    pub admin: kube::Client,
    /// How processes end: fake kubelets' status PATCHes or real exits.
    pub exits: crate::workload::thor::driver::exits::Exits,
    /// thoragent and the Thor manager (ServiceAccount hpcc-thoragent).
    pub thor: Kubectl,
    /// eclccserver (ServiceAccount hpcc-agent).
    pub eclcc: Kubectl,
    pub namespace: String,
    pub tracker: Arc<PodTracker>,
    /// The Thor queue, shared by thoragent and lingering managers.
    pub dispatcher: Dispatcher,
    pub calls: CallLog,
    /// Background work to wait for before the run ends (pods ending).
    pub background: Mutex<Vec<tokio::task::JoinHandle<Result<()>>>>,
    /// Longest wait for any one step.
    pub step_timeout: Duration,
    pub started: Instant,
    /// The cluster's Kubernetes minor (37 for 1.37): picks the gang templates.
    pub k8s_minor: u32,
}

/// eclccserver's compile Jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct CompilePlan {
    /// How long compiling a workunit takes.
    pub duration: Duration,
    /// How long a compile pod waits for another compile before it exits.
    pub linger: Duration,
    /// eclccserver's `maxActive`: compile Jobs at once.
    pub max_active: u32,
}

/// The run a driver makes, from a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub mode: Mode,
    pub thor_name: String,
    /// The thoragent pod's name suffix, `<replicaset hash>-<pod hash>`.
    pub agent_suffix: String,
    pub num_workers: u32,
    pub num_workers_per_pod: u32,
    pub job_version: String,
    /// Thor instances at once (running or lingering).
    pub max_graphs: u32,
    /// Workunits at once (the Thor eclagent's maxActive).
    pub max_jobs: u32,
    pub linger: Duration,
    pub keep_jobs: KeepJobs,
    pub workunits: u32,
    pub graphs_per_workunit: u32,
    pub graph: Duration,
    pub compile: Option<CompilePlan>,
    /// How long after a main container exits its postrun sidecar notices.
    pub postrun_exit: Duration,
    /// JobSet modes: the JobSet's network.enableDNSHostnames.
    pub dns_hostnames: bool,
    pub namespace: String,
    /// What the manager and worker containers request.
    pub resources: ThorResources,
    /// The pods run on real nodes, made so; None: kwok's fake nodes.
    pub real_pods: Option<RealPods>,
    /// waitJob's limit on a Job's only pod staying unscheduled
    /// (`schedulingTimeoutSecs`).
    pub scheduling_timeout: Duration,
    /// How long a manager waits for its workers to register before it
    /// fails (`expert.maxWorkerRegistrationMins`).
    pub max_registration: Duration,
}

impl Plan {
    /// What the scenario changes in rendered pod templates: the
    /// containers' resources, and the real nodes' image and placement.
    pub fn adapt_pods(&self, docs: &mut [serde_json::Value]) {
        self.resources.apply(docs);
        if let Some(r) = &self.real_pods {
            r.apply(docs);
        }
    }

    pub fn worker_pods(&self) -> u32 {
        self.num_workers / self.num_workers_per_pod.max(1)
    }

    /// The template parameters of instance `n`: job name
    /// `<thor>-<agent suffix>-<n>` (agentexec.cpp `WaitThread`).
    pub fn params(&self, n: u32) -> ThorParams {
        ThorParams {
            thor_name: self.thor_name.clone(),
            job_name: format!("{}-{}-{n}", self.thor_name, self.agent_suffix),
            num_workers: self.num_workers,
            num_workers_per_pod: self.num_workers_per_pod,
            job_version: self.job_version.clone(),
            pod_runtime: POD_RUNTIME.into(),
            namespace: self.namespace.clone(),
            dns_hostnames: self.dns_hostnames,
        }
    }
}

/// One Thor instance.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceResult {
    pub job_name: String,
    /// Graphs its manager ran (the first, then those it took lingering).
    pub graphs: u32,
    pub wall_ms: f64,
    /// First pod of the instance created → last pod Running.
    pub start_ms: Option<f64>,
    /// Its worker pods per second created, bound and Running.
    pub worker_rates: crate::metrics::pods::PodRates,
    /// Why it failed, as HPCC reports it; None when its graphs ran.
    pub failed: Option<String>,
}
