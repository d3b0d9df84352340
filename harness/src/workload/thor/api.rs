//! What each mode's driver may ask of the API server, as the Thor agent
//! identity: one rule per resource, the whole list per mode.

use crate::workload::thor::mode::Mode;

/// One rule of API use: the verbs a driver issues on one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiUse {
    pub group: &'static str,
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
}

/// Exactly what the Thor agent identity's driver does in each mode. The
/// RBAC in manifests/hpcc/rbac/ must grant this, no more and no less
/// (`harness validate` checks it), and the drivers must stay inside it.
pub fn api_usage(mode: Mode) -> Vec<ApiUse> {
    const BASELINE: &[ApiUse] = &[
        // kubectl replace --force: delete (tolerating NotFound), create,
        // and get while waiting for the deletion.
        ApiUse {
            group: "networking.k8s.io",
            resource: "networkpolicies",
            verbs: &["get", "create", "delete"],
        },
        // ... and for Jobs also the status polls (get, list, watch).
        ApiUse {
            group: "batch",
            resource: "jobs",
            verbs: &["get", "list", "watch", "create", "delete"],
        },
        // `kubectl get pods --selector=job-name=…` while waiting.
        ApiUse {
            group: "",
            resource: "pods",
            verbs: &["get", "list"],
        },
    ];
    // JobSet mode: thoragent applies the instance's two NetworkPolicies
    // (the chart's default-deny makes them necessary) and one JobSet with
    // `kubectl replace --force`, polls the JobSet, lists its pods while
    // waiting, and deletes all three.
    const JOBSET: &[ApiUse] = &[
        ApiUse {
            group: "jobset.x-k8s.io",
            resource: "jobsets",
            verbs: &["get", "list", "watch", "create", "delete"],
        },
        ApiUse {
            group: "networking.k8s.io",
            resource: "networkpolicies",
            verbs: &["get", "create", "delete"],
        },
        ApiUse {
            group: "",
            resource: "pods",
            verbs: &["get", "list"],
        },
        // The manager's look at its workers' Job (the JobSet's
        // `<job>-workers-0`) after each idle minute while they register:
        // a waitJob pass, `kubectl get jobs NAME -o jsonpath=…`. Only when
        // registering takes over a minute (1024 workers here), so the smoke
        // runs never make it.
        ApiUse {
            group: "batch",
            resource: "jobs",
            verbs: &["get"],
        },
    ];
    // Gang mode: JobSet mode plus the bring-your-own Workload and PodGroup
    // (list and watch because kubectl delete waits with a watch).
    const GANG_EXTRA: &[ApiUse] = &[
        ApiUse {
            group: "scheduling.k8s.io",
            resource: "workloads",
            verbs: &["get", "list", "watch", "create", "delete"],
        },
        ApiUse {
            group: "scheduling.k8s.io",
            resource: "podgroups",
            verbs: &["get", "list", "watch", "create", "delete"],
        },
    ];
    match mode {
        Mode::Baseline => BASELINE.to_vec(),
        Mode::Jobset | Mode::JobsetKueue => JOBSET.to_vec(),
        Mode::JobsetGang => [JOBSET, GANG_EXTRA].concat(),
    }
}

/// The user name of the Thor agent identity (a client certificate).
pub const THOR_AGENT_USER: &str = "thor-agent";
