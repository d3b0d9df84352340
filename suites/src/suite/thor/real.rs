//! The Thor smoke on a real node (`bench thor --real-node`): HPCC's pods
//! run real containers (agnhost's netexec in HPCC's pod spec, its volumes
//! really mounted), the driver ends their processes through the pod
//! network or, as on a cluster the harness did not start, through the API
//! server's pod proxy, and the real kubelet reports them. The trials of the
//! realnode suite call these (one real node per machine).

use anyhow::{Context, Result, ensure};
use harness::bench::thor::result::{ModeResult, ThorResult};
use harness::bench::thor::{ThorBenchOptions, bench_thor};
use harness::cluster::Cluster;
use harness::cluster::existing::ExistingOptions;
use harness::cluster::existing::site::new_run_id;
use harness::cluster::local::LocalCluster;
use harness::cluster::local::realnode::NODE_USER;
use harness::cluster::{ExistingTarget, Provider};
use harness::workload::thor::Mode;

use crate::unique_name;

fn options(modes: Vec<Mode>, existing: Option<ExistingTarget>) -> ThorBenchOptions {
    ThorBenchOptions {
        provider: match existing {
            Some(t) => Provider::Existing(t),
            None => Provider::Local { real_node: true },
        },
        real_node: true,
        ..crate::thor_options("smoke.yaml", modes, unique_name("t-thor-real"))
    }
}

/// What every real-node run must show, for one mode's figures: HPCC's
/// work done, only the real kubelet reporting pods (no kwok shortcut), its
/// volume reads, and HPCC's identities costing what their calls predict
/// (the node kind changes none of HPCC's own requests).
pub fn check_mode(mode: &str, m: &ModeResult, node_user: &str) -> Result<()> {
    ensure!(
        m.graphs == m.workunits,
        "{mode}: {} graphs of {} workunits ran",
        m.graphs,
        m.workunits
    );
    ensure!(m.run.pods_created > 0, "{mode}: no pods");
    let by = &m.run.window.api_requests_by_client_request;
    let node = by
        .get(node_user)
        .with_context(|| format!("{mode}: no requests of {node_user}: {:?}", by.keys()))?;
    let patches = node.get("patch pods/status").copied().unwrap_or(0);
    // accepted, sandbox ready, containers running, containers ended: at
    // least four status writes per pod (kwok-minimal makes at most three).
    ensure!(
        patches >= 4 * m.run.pods_created,
        "{mode}: the kubelet wrote pod status {patches} times for {} pods",
        m.run.pods_created
    );
    // The scheduler writes pod status too (the PodScheduled condition of a
    // pod it cannot place yet: gang scheduling's waiting pods on the 1.36
    // gang profile), and on a kind cluster the other real kubelets write
    // their own pods' (the control plane's static pods); what must not
    // appear is a writer that is no kubelet, such as kwok.
    for (client, requests) in by.iter().filter(|(c, _)| {
        c.as_str() != node_user
            && c.as_str() != "system:kube-scheduler"
            && !c.starts_with("system:node:")
    }) {
        ensure!(
            !requests.contains_key("patch pods/status"),
            "{mode}: {client} patched pod status on a real node: {requests:?}"
        );
    }
    ensure!(
        node.get("get persistentvolumeclaims").copied().unwrap_or(0) > 0,
        "{mode}: the kubelet never read HPCC's storage claims (were the volumes mounted?): {node:?}"
    );
    crate::suite::thor::smoke::identities_cost_what_their_calls_predict(mode, m)
}

pub fn report(r: &ThorResult, node_user: &str) {
    for (mode, sum) in &r.modes {
        let m = &sum.result;
        let node = m.run.window.api_requests_by_client.get(node_user).copied();
        eprintln!(
            "{mode}: {} API requests ({} by the Thor identity), {} etcd writes, {} pods; the kubelet {node:?}",
            m.run.window.api_requests_total,
            m.thor_agent_requests,
            m.run.window.etcd_writes_total,
            m.run.pods_created
        );
    }
}

/// The smoke in baseline and JobSet modes on fresh local clusters with a
/// real node (the driver reaches the containers over the pod network).
pub fn smoke_on_the_real_node() -> Result<()> {
    let rt = crate::runtime()?;
    let r = rt.block_on(bench_thor(&options(
        vec![Mode::Baseline, Mode::Jobset],
        None,
    )))?;
    report(&r, NODE_USER);
    ensure!(
        r.model.get("kubelet").map(String::as_str) == Some("real"),
        "the Result does not say the kubelets were real: {:?}",
        r.model
    );
    for (mode, sum) in &r.modes {
        check_mode(mode, &sum.result, NODE_USER)?;
    }
    Ok(())
}

/// The smoke's baseline mode on `cluster` (which has a real node) used as
/// an existing cluster: ServiceAccount identities, the run's own
/// namespace, pods kept off kwok's nodes, exits through the pod proxy.
pub fn smoke_on_an_existing_clusters_real_node(cluster: &LocalCluster) -> Result<()> {
    smoke_as_an_existing_cluster(
        cluster.kubeconfig(),
        &cluster.layout.audit_log(),
        &cluster.state.k8s_version,
        &[Mode::Baseline],
        NODE_USER,
    )
    .map(|_| ())
}

/// The smoke's `modes` on the cluster of `kubeconfig` used as an existing
/// cluster whose real nodes (the kubelet `node_user`) run agnhost at
/// `k8s_version` (a local cluster's real node, a kind cluster's worker).
pub fn smoke_as_an_existing_cluster(
    kubeconfig: &std::path::Path,
    audit_log: &std::path::Path,
    k8s_version: &str,
    modes: &[Mode],
    node_user: &str,
) -> Result<ThorResult> {
    let target = ExistingTarget {
        cluster: ExistingOptions {
            kubeconfig: kubeconfig.to_path_buf(),
            audit_log: Some(audit_log.to_path_buf()),
            ..Default::default()
        },
        run_id: new_run_id(),
        yes: false,
        node_image: harness::cluster::local::realnode::image::image_name(k8s_version),
    };
    let rt = crate::runtime()?;
    let r = rt.block_on(bench_thor(&options(modes.to_vec(), Some(target))))?;
    report(&r, node_user);
    for mode in modes {
        let name = mode.name();
        let m = &r
            .modes
            .get(name)
            .with_context(|| format!("no {name} mode"))?
            .result;
        // Pods on kwok's nodes would have been patched by kwok: check_mode
        // finds only the real kubelet reporting.
        check_mode(&format!("{name} (existing)"), m, node_user)?;
    }
    Ok(r)
}
