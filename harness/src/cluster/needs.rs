//! What a run needs of a cluster it did not start, and what such a
//! cluster was found to offer, as plain data: the accesses (`Access`), a
//! run's `Needs`, where its requests per client come from
//! (`Attribution`), the probe's `Capabilities` (kept in a Result, so that
//! results are compared by what was measurable). The probe that fills
//! them is the existing provider's (cluster::existing::probe); a workload
//! names its needs and reads the capabilities here, without naming the
//! provider.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::error::bad_input;

/// One access a run needs: a verb on a resource (namespaced ones are
/// checked in the run's namespace) or on a non-resource path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Access {
    pub verb: String,
    /// "" for the core group.
    pub group: String,
    /// "pods", "pods/status", or a path such as "/metrics".
    pub resource: String,
    pub namespaced: bool,
}

impl Access {
    pub fn new(verb: &str, group: &str, resource: &str, namespaced: bool) -> Access {
        Access {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespaced,
        }
    }

    /// "create batch/jobs in the run's namespace", "get /metrics".
    pub fn label(&self) -> String {
        let what = match (self.resource.starts_with('/'), self.group.as_str()) {
            (true, _) => self.resource.clone(),
            (false, "") => self.resource.clone(),
            (false, g) => format!("{g}/{}", self.resource),
        };
        let scope = match (self.resource.starts_with('/'), self.namespaced) {
            (true, _) => "",
            (false, true) => " in the run's namespace",
            (false, false) => " cluster-wide",
        };
        format!("{} {what}{scope}", self.verb)
    }
}

/// What the harness itself does on any run on an existing cluster: the
/// run's namespaces, ServiceAccounts with tokens and RoleBindings in
/// them, the pod watch, `/metrics`, and with `apf` the FlowSchemas that
/// follow identities. Runs add what their workloads need.
pub fn run_access(apf: bool) -> Vec<Access> {
    let mut access: Vec<Access> = vec![
        Access::new("create", "", "namespaces", false),
        Access::new("delete", "", "namespaces", false),
        Access::new("list", "", "namespaces", false),
        Access::new("get", "", "/metrics", false),
    ];
    for (verb, group, resource) in [
        ("create", "", "serviceaccounts"),
        ("create", "", "serviceaccounts/token"),
        ("create", "rbac.authorization.k8s.io", "rolebindings"),
        ("list", "", "pods"),
        ("watch", "", "pods"),
    ] {
        access.push(Access::new(verb, group, resource, true));
    }
    if apf {
        for verb in ["create", "list", "delete"] {
            access.push(Access::new(
                verb,
                "flowcontrol.apiserver.k8s.io",
                "flowschemas",
                false,
            ));
        }
    }
    access
}

/// What a run needs of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    pub access: Vec<Access>,
    pub jobset: bool,
    pub gang_apis: bool,
    /// kwok fake nodes (the harness ends pods as a kubelet would).
    pub kwok_nodes: bool,
    /// Real nodes (Thor's pods run real containers: `--real-node`).
    pub real_nodes: bool,
    pub default_storage_class: bool,
    pub audit_log: bool,
    /// Requests per client by APF FlowSchemas (cluster::existing::apf).
    pub apf: bool,
}

/// What the probe found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    pub server_version: String,
    pub user: String,
    /// Access label → allowed.
    pub access: BTreeMap<String, bool>,
    /// API versions served: jobset.x-k8s.io, scheduling.k8s.io versions
    /// with Workload or PodGroup resources, kueue.x-k8s.io.
    pub jobset_versions: Vec<String>,
    pub gang_versions: Vec<String>,
    pub kueue_versions: Vec<String>,
    pub nodes: u32,
    pub kwok_nodes: u32,
    /// Sum of the nodes' allocatable pods.
    pub allocatable_pods: u64,
    pub default_storage_class: Option<String>,
    /// Pods in namespaces other than kube-* and the harness's: the
    /// cluster runs real workloads.
    pub other_pods: u32,
    /// None: not asked for (no --etcd-metrics-url / --audit-log).
    pub etcd_metrics: Option<bool>,
    pub audit_log: Option<bool>,
    /// Where requests per client come from: "audit" or "apf".
    #[serde(default)]
    pub attribution: String,
    /// API server instances (their identity leases in kube-system; 0 when
    /// they cannot be listed). Metrics come from whichever one answers.
    #[serde(default)]
    pub apiservers: u32,
}

impl Capabilities {
    /// The release the server runs (its patch if pinned here, else its
    /// minor's): the templates and tools follow it, not a scenario's.
    pub fn server_release(&self) -> Result<crate::k8s::K8sRelease> {
        use crate::k8s::K8sRelease;
        K8sRelease::parse(&self.server_version).or_else(|_| {
            let v = self.server_version.trim_start_matches('v');
            let minor: String = v.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
            K8sRelease::parse(&minor)
        })
    }

    /// The set a result is comparable by: what was measurable, not counts
    /// that change between runs (nodes, other pods).
    pub fn comparable(&self) -> String {
        format!(
            "jobset {:?}, gang {:?}, kueue {:?}, kwok {}, etcd metrics {}, audit log {}, attribution {}",
            self.jobset_versions,
            self.gang_versions,
            self.kueue_versions,
            self.kwok_nodes > 0,
            self.etcd_metrics == Some(true),
            self.audit_log == Some(true),
            match self.attribution.as_str() {
                "" => "audit",
                a => a,
            }
        )
    }
}

/// Where requests per client come from on an existing cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Attribution {
    /// The API server's audit log (`--audit-log`): every request, by
    /// client, verb and resource.
    #[default]
    Audit,
    /// APF's counts per FlowSchema, one added per followed identity.
    Apf,
    /// Where neither is allowed: only the identities the harness drives
    /// (HPCC's, through kubectl -v=6), counted client-side.
    Client,
}

impl Attribution {
    /// `--attribution audit|apf`.
    pub fn parse(s: &str) -> Result<Attribution> {
        match s {
            "audit" => Ok(Attribution::Audit),
            "apf" => Ok(Attribution::Apf),
            "client" => Ok(Attribution::Client),
            other => Err(bad_input(format!(
                "--attribution {other:?}: audit (the audit log), apf (FlowSchema counts) or client (HPCC's kubectl, counted client-side)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Attribution::Audit => "audit",
            Attribution::Apf => "apf",
            Attribution::Client => "client",
        }
    }
}
