//! The Thor agent's JobSet RBAC in jobset mode: the Role of
//! `manifests/hpcc/rbac/jobset.yaml`, bound to the chart's Thor agent
//! service account.

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::install::hpcc::spec::{NAMESPACE, THOR_AGENT_SERVICE_ACCOUNT};
use crate::tools::versions::HPCC_CHART_VERSION;
use crate::workload::thor::{self, Mode, ThorParams};

/// The JobSet Role of `manifests/hpcc/rbac/jobset.yaml`, bound to the
/// chart's Thor agent service account.
pub fn jobset_rbac(num_workers: u32) -> Result<Vec<Value>> {
    let params = ThorParams {
        thor_name: "thor".into(),
        job_name: "thor-rbac-0".into(),
        num_workers,
        num_workers_per_pod: 1,
        job_version: HPCC_CHART_VERSION.into(),
        pod_runtime: "0s".into(),
        namespace: NAMESPACE.into(),
        dns_hostnames: false,
    };
    let mut docs = thor::render(&thor::rbac(Mode::Jobset), &params)?;
    for d in &mut docs {
        if d["kind"] == "RoleBinding" {
            d["subjects"] = json!([{
                "kind": "ServiceAccount",
                "name": THOR_AGENT_SERVICE_ACCOUNT,
                "namespace": NAMESPACE,
            }]);
        }
    }
    if !docs.iter().any(|d| d["kind"] == "RoleBinding") {
        bail!("manifests/hpcc/rbac/jobset.yaml has no RoleBinding");
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobset_rbac_binds_the_thor_agent_service_account() {
        let docs = jobset_rbac(2).unwrap();
        let role = docs.iter().find(|d| d["kind"] == "Role").unwrap();
        assert_eq!(role["metadata"]["namespace"], NAMESPACE);
        assert!(
            role["rules"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["resources"] == json!(["jobsets"])
                    && r["verbs"].as_array().unwrap().contains(&json!("create")))
        );
        let rb = docs.iter().find(|d| d["kind"] == "RoleBinding").unwrap();
        assert_eq!(
            rb["subjects"],
            json!([{"kind": "ServiceAccount", "name": "hpcc-thoragent", "namespace": "default"}])
        );
    }
}
