//! What a Thor run asks of a cluster it did not start (`Needs`): the
//! harness's own access, what the modes' Roles grant (a user may only
//! grant what it holds), JobSet and the gang APIs where the modes use
//! them, kwok's or real nodes, a default StorageClass and how requests
//! are told apart. The existing provider's probe checks it
//! (lifecycle::thor).

use anyhow::Result;
use serde_json::Value;

use crate::cluster::needs::{Access, Attribution, Needs};
use crate::workload::thor::mode_plan::plan;
use crate::workload::thor::scenario::ThorScenario;
use crate::workload::thor::template::Mode;
use crate::workload::thor::template::{self, render};

/// Every access the run needs: the harness's own (namespaces, identities,
/// HPCC's setup objects, the fake kubelets' pod status, /metrics) and what
/// the modes' Roles grant (a user may only grant what it holds).
pub fn needs(s: &ThorScenario, modes: &[Mode], attribution: Attribution) -> Result<Needs> {
    let apf = attribution == Attribution::Apf;
    let mut access = crate::cluster::needs::run_access(apf);
    for (verb, group, resource) in [
        ("create", "rbac.authorization.k8s.io", "roles"),
        ("create", "", "configmaps"),
        ("create", "", "persistentvolumeclaims"),
        ("list", "", "persistentvolumeclaims"),
        ("create", "networking.k8s.io", "networkpolicies"),
        ("list", "batch", "jobs"),
    ] {
        access.push(Access::new(verb, group, resource, true));
    }
    // Ending processes: the fake kubelets' status PATCH, or on real nodes
    // a container's /exit through the pod proxy.
    access.push(match s.cluster.real_node {
        false => Access::new("patch", "", "pods/status", true),
        true => Access::new("get", "", "pods/proxy", true),
    });
    let params = plan(s, modes.first().copied().unwrap_or(Mode::Baseline))?.params(0);
    let mut roles = render(&template::eclccserver_rbac(), &params)?;
    for m in modes {
        roles.extend(render(&template::rbac(*m), &params)?);
    }
    for rule in roles
        .iter()
        .filter(|d| d["kind"] == "Role")
        .flat_map(|d| d["rules"].as_array().cloned().unwrap_or_default())
    {
        let list = |k: &str| -> Vec<String> {
            rule[k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        for g in list("apiGroups") {
            for r in list("resources") {
                for v in list("verbs") {
                    access.push(Access::new(&v, &g, &r, true));
                }
            }
        }
    }
    let jobset = modes.iter().any(|m| *m != Mode::Baseline);
    if jobset {
        access.push(Access::new("list", "jobset.x-k8s.io", "jobsets", true));
    }
    access.sort();
    access.dedup();
    Ok(Needs {
        access,
        jobset,
        gang_apis: modes.contains(&Mode::JobsetGang),
        kwok_nodes: !s.cluster.real_node,
        real_nodes: s.cluster.real_node,
        default_storage_class: true,
        audit_log: attribution == Attribution::Audit,
        apf,
    })
}
