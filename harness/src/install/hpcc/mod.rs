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
//! This file holds the options, the record of an install and the
//! orchestration; `values` the chart values, `helm` the helm command and
//! `diagnose` the wait for readiness and the failing-pod diagnosis.
//!
//! Tests use constructed Pod/Event objects for the diagnosis and the pure
//! rendering functions; helm itself runs only against a real cluster.

pub mod diagnose;
pub mod helm;
pub mod sources;
pub mod spec;
pub mod values;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::error::env_missing;
use crate::progress::Step;
use crate::tools::versions::HPCC_CHART_VERSION;
use crate::workload::thor::{self, Mode, ThorParams};
use diagnose::group_served;
use helm::run_helm;
use values::on;

pub use spec::{
    HpccInstall, HpccMode, HpccOptions, KIND_VALUES, KIND_VALUES_PATH, NAMESPACE, RELEASE,
    THOR_AGENT_SERVICE_ACCOUNT, describe,
};

pub use diagnose::{
    LogRequest, deployment_ready, event_lines, failing_pod, logs_to_fetch, pod_trouble, wait_ready,
};
pub use helm::{ChartRef, chart_ref, find_helm, find_helm_from, helm_args};
pub use values::{
    HpccDali, HpccEclAgent, HpccEclccServer, HpccEsp, HpccEspService, HpccGlobal, HpccImage,
    HpccPlane, HpccRoxie, HpccSasha, HpccStorage, HpccThor, HpccThorJobset, HpccValues,
    PLANE_CATEGORIES, STORAGE_MODES, VISIBILITIES, default_workers, merge_values, render_values,
};

/// The values `opts` install with: ours, the user's `--hpcc-values` (read
/// through the bounded reader), numWorkers; and that numWorkers.
pub fn render_options(opts: &HpccOptions) -> Result<(Value, u32)> {
    let user = match &opts.values {
        Some(p) => Some(crate::input::read(p).map_err(|e| e.context("--hpcc-values"))?),
        None => None,
    };
    render_values(
        opts.mode,
        opts.values.as_deref().zip(user.as_deref()),
        opts.workers,
    )
}

/// HPCC's chart and platform image can be had here (sources.rs): the
/// image's name, or exit 3 naming what cannot.
pub fn check_sources(opts: &HpccOptions, docker: &std::path::Path) -> Result<String> {
    let (values, _) = render_options(opts)?;
    sources::check(opts, &values, docker)
}

/// Everything that can be checked before a cluster exists: the chart
/// reference, the values (ours + the user's + numWorkers), and helm.
pub fn preflight(opts: &HpccOptions) -> Result<()> {
    chart_ref(opts.mode, opts.chart.as_deref())?;
    render_options(opts)?;
    find_helm()?;
    Ok(())
}

/// Install HPCC on `cluster` and wait until it is Ready.
pub async fn install<C: Cluster>(cluster: &C, opts: &HpccOptions) -> Result<HpccInstall> {
    let chart = chart_ref(opts.mode, opts.chart.as_deref())?;
    let (values, num_workers) = render_options(opts)?;
    let helm = find_helm()?;
    let dir = crate::cluster::state::cluster_dir(cluster.name());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let values_file = dir.join("hpcc-values.yaml");
    let header = format!(
        "# Effective HPCC values written by `harness up --hpcc {}`: {KIND_VALUES_PATH}{}, numWorkers {num_workers}{}.\n",
        opts.mode.name(),
        opts.values
            .as_ref()
            .map(|p| format!(" + {}", p.display()))
            .unwrap_or_default(),
        if opts.mode == HpccMode::Jobset {
            ", thor[0].jobset.enabled"
        } else {
            ""
        }
    );
    let body = serde_saphyr::to_string(&values).context("serialising the HPCC values")?;
    std::fs::write(&values_file, format!("{header}{body}"))
        .with_context(|| format!("writing {}", values_file.display()))?;

    let client = cluster.client().await?;
    if opts.mode == HpccMode::Jobset {
        if !group_served(&client, "jobset.x-k8s.io").await? {
            return Err(env_missing(
                format!(
                    "cluster {:?} does not serve the JobSet API (jobset.x-k8s.io), which --hpcc jobset needs",
                    cluster.name()
                ),
                "bring the cluster up with a JobSet profile (kind-configs/jobset-<minor>.yaml), which installs JobSet",
            ));
        }
        let step = Step::start("applying the Thor agent's JobSet RBAC");
        crate::install::apply::apply_all(&client, &jobset_rbac(num_workers)?)
            .await
            .context("applying manifests/hpcc/rbac/jobset.yaml for hpcc-thoragent")?;
        step.done("applied");
    }

    let args = helm_args(&chart, cluster.kubeconfig(), &values_file, opts.mode);
    let step = Step::start(format!(
        "helm install {} {}{}",
        RELEASE,
        chart.chart,
        chart
            .version
            .as_ref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default()
    ));
    run_helm(&helm, &args, &dir.join("helm-install.log"))
        .await
        .with_context(|| format!("installing HPCC ({} mode)", opts.mode.name()))?;
    step.done("installed");

    let typed: HpccValues =
        serde_json::from_value(values.clone()).context("re-reading the effective values")?;
    let names = typed.deployments();
    wait_ready(&client, &names, opts.timeout)
        .await
        .with_context(|| format!("values in {}", values_file.display()))?;

    let esp = typed
        .esp
        .iter()
        .flatten()
        .find(|e| e.application == "eclwatch" && on(e.disabled))
        .context("no eclwatch ESP in the effective values")?;
    let thor = typed.thors()[0].clone();
    let record = HpccInstall {
        mode: opts.mode,
        release: RELEASE.into(),
        namespace: NAMESPACE.into(),
        chart: chart.chart.clone(),
        chart_version: chart.version.clone(),
        values_file,
        num_workers,
        thor_name: thor.name,
        eclwatch_service: esp.name.clone(),
        eclwatch_port: esp
            .service
            .as_ref()
            .and_then(|s| s.service_port)
            .unwrap_or(8010),
        deployments: names.into_iter().map(|(n, _)| n).collect(),
    };
    let path = dir.join("hpcc.json");
    std::fs::write(&path, serde_json::to_string_pretty(&record)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(record)
}

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
