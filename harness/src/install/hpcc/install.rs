//! Installing HPCC on a running cluster: the values `opts` install with,
//! what can be checked before a cluster exists (`preflight`,
//! `check_sources`), and `install` — values file, the JobSet RBAC in
//! jobset mode, `helm upgrade --install`, the wait for readiness and the
//! record of the install.

use anyhow::{Context, Result};
use serde_json::Value;

use crate::cluster::Cluster;
use crate::error::env_missing;
use crate::install::hpcc::diagnose::{group_served, wait_ready};
use crate::install::hpcc::helm::{chart_ref, find_helm, helm_args, run_helm};
use crate::install::hpcc::rbac::jobset_rbac;
use crate::install::hpcc::sources;
use crate::install::hpcc::spec::{
    HpccInstall, HpccMode, HpccOptions, KIND_VALUES_PATH, NAMESPACE, RELEASE,
};
use crate::install::hpcc::values::{HpccValues, on, render_values};
use crate::progress::Step;

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
