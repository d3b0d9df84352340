//! HPCC Platform on a running cluster: the released `hpcc` Helm chart
//! (baseline) or the JobSet proof-of-concept chart (jobset), installed by
//! `helm` as a subprocess with the cluster's kubeconfig.
//!
//! 1. Values: our `manifests/hpcc/values/kind.yaml`, then the user's
//!    `--hpcc-values`, merged as Helm merges values files (maps deep,
//!    everything else replaced; `null` removes a key), then the scenario's
//!    numWorkers and, in jobset mode, `thor[0].jobset.enabled=true`, written
//!    to `<state dir>/hpcc-values.yaml` and passed with `-f`.
//! 2. jobset mode: the JobSet API must be served; the Thor agent's JobSet
//!    Role (`manifests/hpcc/rbac/jobset.yaml`) is bound to the chart's
//!    `hpcc-thoragent` service account.
//! 3. `helm upgrade --install` (no `--wait`: readiness is ours).
//! 4. Wait for the Deployments of dali, ESP, eclccserver, the ECL agents and
//!    Thor's eclagent/thoragent to be Ready; on timeout the error names the
//!    failing pod with its events and the tail of its containers' logs.
//!
//! `spec` holds the options and the record of an install, `install` the
//! orchestration, `rbac` the Thor agent's JobSet RBAC, `values` the chart
//! values, `helm` the helm command, `sources` where the chart and image
//! come from, and `diagnose` the wait for readiness and the failing-pod
//! diagnosis.
//!
//! Tests use constructed Pod/Event objects for the diagnosis and the pure
//! rendering functions; helm itself runs only against a real cluster.

pub mod diagnose;
pub mod helm;
pub mod install;
pub mod rbac;
pub mod sources;
pub mod spec;
pub mod values;

pub use crate::install::hpcc::diagnose::{
    LogRequest, deployment_ready, event_lines, failing_pod, logs_to_fetch, pod_trouble, wait_ready,
};
pub use crate::install::hpcc::helm::{ChartRef, chart_ref, find_helm, find_helm_from, helm_args};
pub use crate::install::hpcc::install::{check_sources, install, preflight, render_options};
pub use crate::install::hpcc::rbac::jobset_rbac;
pub use crate::install::hpcc::spec::{
    HpccInstall, HpccMode, HpccOptions, KIND_VALUES, KIND_VALUES_PATH, NAMESPACE, RELEASE,
    THOR_AGENT_SERVICE_ACCOUNT, describe,
};
pub use crate::install::hpcc::values::{
    HpccDali, HpccEclAgent, HpccEclccServer, HpccEsp, HpccEspService, HpccGlobal, HpccImage,
    HpccPlane, HpccRoxie, HpccSasha, HpccStorage, HpccThor, HpccThorJobset, HpccValues,
    PLANE_CATEGORIES, STORAGE_MODES, VISIBILITIES, default_workers, merge_values, render_values,
};
