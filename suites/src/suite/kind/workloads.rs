//! Workloads on the kind suite's shared clusters (fixtures.rs): a JobSet
//! admitted by its webhook and run to completion, a real container's exit
//! code, a claim of the default class bound and mounted, and the Thor
//! smoke with the cluster used as an existing one — HPCC's pods as real
//! containers on the worker's kubelet — and kwok's kubelet-like model
//! against that kubelet.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use harness::cluster::Cluster;
use harness::install::busy;
use harness::poll::Poll;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use crate::suite::kind::fixtures::{KindFx, shared};

pub fn jobset_admitted_by_its_webhook_runs_to_completion(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let image = agnhost(fx)?;
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let gvk = GroupVersionKind::gvk("jobset.x-k8s.io", "v1alpha2", "JobSet");
        let ar = ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
        // JobSet's validating webhook (not the CRD schema) refuses a
        // success policy naming a replicated job that does not exist
        // (pkg/webhooks/jobset_webhook.go).
        let mut bad = jobset("t-bad", &image);
        bad["spec"]["successPolicy"] = json!({"operator": "All", "targetReplicatedJobs": ["nope"]});
        let refused = api
            .create(&PostParams::default(), &serde_json::from_value(bad)?)
            .await;
        match refused {
            Ok(_) => bail!("a JobSet whose success policy names no replicated job was accepted"),
            Err(e) => ensure!(
                format!("{e}").contains("does not appear in .spec.ReplicatedJobs"),
                "refused, but not by JobSet's webhook: {e}"
            ),
        }
        api.create(
            &PostParams::default(),
            &serde_json::from_value(jobset("t-ok", &image))?,
        )
        .await
        .context("creating a JobSet")?;
        Poll::new("JobSet t-ok Completed", Duration::from_secs(180))
            .tolerate_errors()
            .until(|| async {
                let j = api.get("t-ok").await?;
                let conds = j.data["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if conds
                    .iter()
                    .any(|c| c["type"] == "Failed" && c["status"] == "True")
                {
                    bail!("JobSet t-ok failed: {conds:?}");
                }
                Ok(conds
                    .iter()
                    .any(|c| c["type"] == "Completed" && c["status"] == "True")
                    .then_some(()))
            })
            .await
    })
}

fn jobset(name: &str, image: &str) -> serde_json::Value {
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicatedJobs": [{
            "name": "w",
            "replicas": 2,
            "template": {"spec": {
                "completions": 1, "parallelism": 1, "backoffLimit": 0,
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "c", "image": image, "imagePullPolicy": "Never",
                        "args": ["entrypoint-tester", "done"],
                    }],
                }},
            }},
        }]},
    })
}

/// The agnhost image loaded into the nodes.
fn agnhost(fx: &KindFx) -> Result<String> {
    ensure!(
        fx.cluster.built(),
        "this trial runs agnhost from the image the harness loads into built nodes; the cluster's nodes were pulled"
    );
    Ok(harness::cluster::local::realnode::image::image_name(
        &fx.cluster.state.k8s_version,
    ))
}

/// A claim of the default class (kind's fallback `standard`, the in-tree
/// host-path provisioner the controller manager runs on built nodes) is
/// bound and mounted by a pod on the worker.
pub fn a_claim_of_the_default_class_is_bound_and_mounted(minor: &'static str) -> Result<()> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let fx = shared(minor)?;
    let image = agnhost(fx)?;
    let client = fx.rt.block_on(fx.cluster.client())?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let claim = serde_json::from_value(json!({
        "metadata": {"name": "t-claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}}},
    }))?;
    let pod = serde_json::from_value(json!({
        "metadata": {"name": "t-claim"},
        "spec": {
            "containers": [{"name": "c", "image": image, "imagePullPolicy": "Never",
                "args": ["pause"], "volumeMounts": [{"name": "v", "mountPath": "/data"}]}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "t-claim"}}],
            "terminationGracePeriodSeconds": 0,
        },
    }))?;
    fx.rt.block_on(async {
        busy::create(&claims, &claim).await?;
        busy::create(&pods, &pod).await?;
        Poll::new(
            "t-claim Bound and its pod Running",
            Duration::from_secs(120),
        )
        .until_ok(|| async {
            let c = claims.get("t-claim").await?;
            let p = pods.get("t-claim").await?;
            let cp = c.status.and_then(|s| s.phase).unwrap_or_default();
            let pp = p.status.and_then(|s| s.phase).unwrap_or_default();
            ensure!(cp == "Bound" && pp == "Running", "claim {cp:?}, pod {pp:?}");
            Ok(())
        })
        .await?;
        busy::delete(&pods, "t-claim").await?;
        busy::delete(&claims, "t-claim").await?;
        Ok(())
    })
}

pub fn a_real_containers_exit_code_is_reported(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let image = agnhost(fx)?;
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
        let pods: Api<Pod> = Api::namespaced(client, "default");
        // agnhost's `fake-gitserver` is not asked for: an unknown
        // subcommand makes agnhost exit 1 — a real process's exit code.
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "t-exit"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": image, "imagePullPolicy": "Never",
                                "args": ["no-such-command"]}],
            }}},
        }))?;
        busy::create(&jobs, &job).await?;
        let code = Poll::new("t-exit's container terminated", Duration::from_secs(120))
            .tolerate_errors()
            .until(|| async {
                let list = pods
                    .list(&ListParams::default().labels("job-name=t-exit"))
                    .await?;
                Ok(list.items.iter().find_map(|p| {
                    p.status
                        .as_ref()?
                        .container_statuses
                        .as_ref()?
                        .iter()
                        .find_map(|s| s.state.as_ref()?.terminated.as_ref().map(|t| t.exit_code))
                }))
            })
            .await?;
        ensure!(code != 0, "agnhost no-such-command exited 0");
        Ok(())
    })
}

/// The Thor smoke on the kind cluster, used as an existing cluster: HPCC's
/// pods (the real-node templates: agnhost in HPCC's pod specs) run as real
/// containers on the worker's kubelet, in baseline and JobSet modes.
pub fn thor_smoke_on_the_kind_workers(minor: &'static str) -> Result<()> {
    let fx = shared(minor)?;
    let c = &fx.cluster;
    agnhost(fx)?;
    let worker = c
        .state
        .nodes
        .iter()
        .find(|n| n.ends_with("-worker"))
        .context("the gang profile has a worker node")?;
    let r = crate::suite::thor::real::smoke_as_an_existing_cluster(
        &c.state.kubeconfig,
        &c.state.audit_log,
        &c.state.k8s_version,
        &[
            harness::workload::thor::Mode::Baseline,
            harness::workload::thor::Mode::Jobset,
        ],
        &format!("system:node:{worker}"),
    )?;
    ensure!(r.modes.len() == 2, "modes run: {:?}", r.modes.keys());
    Ok(())
}

/// kwok's kubelet-like model against the kubelet of a kind worker
/// (suite/kubelet/real.rs): the same three pod lives the local provider's real
/// node plays, of real containers in the worker's containerd.
pub fn the_kubelet_like_model_against_a_kind_workers_kubelet(minor: &'static str) -> Result<()> {
    use crate::suite::kubelet::real::{RealKubelet, model_against_the_real_kubelet};
    let fx = shared(minor)?;
    let c = &fx.cluster;
    let worker = c
        .state
        .nodes
        .iter()
        .find(|n| **n != c.state.control_plane)
        .with_context(|| format!("{} has no worker node: {:?}", c.state.name, c.state.nodes))?;
    model_against_the_real_kubelet(&RealKubelet {
        rt: &fx.rt,
        cluster: c,
        // kind names each node's container after the node.
        node: worker,
        image: agnhost(fx)?,
        k8s_version: &c.state.k8s_version,
    })
}
