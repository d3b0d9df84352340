//! Integration tests against a real local control plane (etcd,
//! kube-apiserver, kube-controller-manager, kube-scheduler, the JobSet
//! controller, kwok), one cluster shared by every trial of this binary.

use std::time::Duration;

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use crate::{Fixture, namespace, teardown, trial_result};
use anyhow::{Context, Result, bail, ensure};
use harness::cluster::{Cluster, NodeSpec};
use harness::k8s::jobset;
use harness::poll::Poll;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use libtest_mimic::Arguments;
use serde_json::json;

const PREFIX: &str = "t-local";

fn trial<F>(name: &str, body: F) -> Test
where
    F: FnOnce(&'static crate::Fixture) -> Result<()> + Send + 'static,
{
    Test::new(name, move || {
        let fx = Fixture::shared(PREFIX)?;
        trial_result(body(fx))
    })
    .needs(default_cluster_and(&[]))
}

fn job(name: &str, parallelism: i32) -> Result<Job> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "backoffLimit": 0,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "work", "image": "registry.invalid/work:none"}]
            }}
        }
    }))?)
}

fn job_condition(j: &Job, kind: &str) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == kind && c.status == "True"))
}

/// A Job with parallelism 3 runs on kwok nodes and reaches Complete.
fn job_with_parallelism_3_completes(fx: &'static crate::Fixture) -> Result<()> {
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, "t-job").await?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), "t-job");
        jobs.create(&PostParams::default(), &job("three", 3)?)
            .await?;
        let done = Poll::new("Job three Complete", Duration::from_secs(90))
            .tolerate_errors()
            .until(|| {
                let jobs = jobs.clone();
                async move {
                    let j = jobs.get("three").await?;
                    if job_condition(&j, "Failed") {
                        bail!("Job failed: {:?}", j.status);
                    }
                    Ok(job_condition(&j, "Complete").then_some(j))
                }
            })
            .await?;
        let status = done.status.context("Job has no status")?;
        ensure!(
            status.succeeded == Some(3),
            "succeeded = {:?}",
            status.succeeded
        );
        let pods: Api<Pod> = Api::namespaced(client, "t-job");
        let list = pods
            .list(&ListParams::default().labels("job-name=three"))
            .await?;
        ensure!(list.items.len() == 3, "{} pods", list.items.len());
        for p in &list.items {
            let node = p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            ensure!(node.starts_with("kwok-node-"), "pod bound to {node:?}");
            let phase = p
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default();
            ensure!(phase == "Succeeded", "pod phase {phase}");
        }
        Ok(())
    })
}

fn jobset_manifest(ns: &str, name: &str) -> serde_json::Value {
    let rjob = |rname: &str, n: i32| {
        json!({
            "name": rname,
            "replicas": 1,
            "template": {"spec": {
                "parallelism": n,
                "completions": n,
                "backoffLimit": 0,
                "template": {"spec": {
                    "containers": [{"name": rname, "image": "registry.invalid/thor:none"}]
                }}
            }}
        })
    };
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicatedJobs": [rjob("manager", 1), rjob("workers", 2)]}
    })
}

/// A JobSet with two replicated Jobs reaches Completed, and the fields its
/// mutating webhook defaults are present.
fn jobset_completes_with_webhook_defaults(fx: &'static crate::Fixture) -> Result<()> {
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, "t-jobset").await?;
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "t-jobset", &jobset::api_resource());
        let obj: DynamicObject = serde_json::from_value(jobset_manifest("t-jobset", "pair"))?;
        let created = api
            .create(&PostParams::default(), &obj)
            .await
            .context("creating JobSet pair")?;
        let spec = &created.data["spec"];
        // Set by the webhook (Default()), not by the CRD schema.
        ensure!(
            spec["successPolicy"]["operator"] == "All",
            "successPolicy = {}",
            spec["successPolicy"]
        );
        ensure!(
            spec["startupPolicy"]["startupPolicyOrder"] == "AnyOrder",
            "startupPolicy = {}",
            spec["startupPolicy"]
        );
        ensure!(
            spec["network"]["enableDNSHostnames"] == true,
            "network = {}",
            spec["network"]
        );
        for rj in spec["replicatedJobs"]
            .as_array()
            .context("replicatedJobs")?
        {
            ensure!(
                rj["template"]["spec"]["completionMode"] == "Indexed",
                "completionMode in {rj}"
            );
            ensure!(
                rj["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure",
                "restartPolicy in {rj}"
            );
        }
        let done = Poll::new("JobSet pair Completed", Duration::from_secs(90))
            .tolerate_errors()
            .until(|| {
                let api = api.clone();
                async move {
                    let js = api.get("pair").await?;
                    let conds = js.data["status"]["conditions"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    if conds
                        .iter()
                        .any(|c| c["type"] == "Failed" && c["status"] == "True")
                    {
                        bail!("JobSet failed: {}", js.data["status"]);
                    }
                    Ok(conds
                        .iter()
                        .any(|c| c["type"] == "Completed" && c["status"] == "True")
                        .then_some(js))
                }
            })
            .await?;
        ensure!(
            done.data["status"]["terminalState"] == "Completed",
            "{}",
            done.data["status"]
        );
        let jobs: Api<Job> = Api::namespaced(client, "t-jobset");
        let list = jobs
            .list(&ListParams::default().labels("jobset.sigs.k8s.io/jobset-name=pair"))
            .await?;
        ensure!(list.items.len() == 2, "child Jobs: {}", list.items.len());
        Ok(())
    })
}

/// An invalid JobSet is rejected by the validating webhook, with its message.
fn invalid_jobset_is_rejected(fx: &'static crate::Fixture) -> Result<()> {
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, "t-invalid").await?;
        let api: Api<DynamicObject> =
            Api::namespaced_with(client, "t-invalid", &jobset::api_resource());
        let mut m = jobset_manifest("t-invalid", "bad");
        // Only the webhook checks that success-policy targets exist.
        m["spec"]["successPolicy"] = json!({"operator": "All", "targetReplicatedJobs": ["ghost"]});
        let obj: DynamicObject = serde_json::from_value(m)?;
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => bail!("the JobSet was accepted"),
            Err(kube::Error::Api(s)) => {
                ensure!(
                    s.code == 422 || s.code == 400,
                    "code {}: {}",
                    s.code,
                    s.message
                );
                ensure!(
                    s.message.contains("vjobset.kb.io"),
                    "not from the webhook: {}",
                    s.message
                );
                ensure!(
                    s.message.contains(
                        "invalid replicatedJob name 'ghost' does not appear in .spec.ReplicatedJobs"
                    ),
                    "message: {}",
                    s.message
                );
                Ok(())
            }
            Err(e) => bail!("unexpected error: {e}"),
        }
    })
}

/// A Job owned by nobody is created by `admin`, its pods by the
/// job-controller identity — read from the audit log.
fn job_pods_are_created_by_the_job_controller(fx: &'static crate::Fixture) -> Result<()> {
    fx.rt.block_on(async {
        let ns = "t-audit";
        let client = namespace(&fx.cluster, ns).await?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
        jobs.create(&PostParams::default(), &job("audited", 2)?)
            .await?;
        let pods: Api<Pod> = Api::namespaced(client, ns);
        Poll::new("2 pods of Job audited", Duration::from_secs(60))
            .tolerate_errors()
            .until(|| {
                let pods = pods.clone();
                async move {
                    let n = pods
                        .list(&ListParams::default().labels("job-name=audited"))
                        .await?
                        .items
                        .len();
                    Ok((n == 2).then_some(()))
                }
            })
            .await?;
        let events = Poll::new(
            "audit events for the Job and its pods",
            Duration::from_secs(30),
        )
        .tolerate_errors()
        .until(|| async {
            let (events, _) = fx.cluster.audit_events(0)?;
            let mine: Vec<_> = events
                .into_iter()
                .filter(|e| e.stage == "ResponseComplete" && e.verb == "create")
                .filter(|e| e.object_ref.as_ref().is_some_and(|o| o.namespace == ns))
                .collect();
            let pods = mine
                .iter()
                .filter(|e| {
                    e.object_ref
                        .as_ref()
                        .is_some_and(|o| o.resource == "pods" && o.subresource.is_empty())
                })
                .count();
            Ok((pods >= 2).then_some(mine))
        })
        .await?;
        let job_creators: Vec<&str> = events
            .iter()
            .filter(|e| e.object_ref.as_ref().is_some_and(|o| o.resource == "jobs"))
            .map(|e| e.user.username.as_str())
            .collect();
        ensure!(job_creators == ["admin"], "Job created by {job_creators:?}");
        // Pod creates proper; the scheduler's pods/binding creates are a
        // subresource.
        let pod_creators: Vec<&str> = events
            .iter()
            .filter(|e| {
                e.object_ref
                    .as_ref()
                    .is_some_and(|o| o.resource == "pods" && o.subresource.is_empty())
            })
            .map(|e| e.user.username.as_str())
            .collect();
        ensure!(
            pod_creators.len() == 2
                && pod_creators
                    .iter()
                    .all(|u| *u == "system:serviceaccount:kube-system:job-controller"),
            "pods created by {pod_creators:?}"
        );
        Ok(())
    })
}

/// The API server's and etcd's metrics endpoints answer with the series
/// the benchmarks read.
fn metrics_endpoints_answer(fx: &'static crate::Fixture) -> Result<()> {
    fx.rt.block_on(async {
        let api = fx.cluster.apiserver_metrics().await?;
        ensure!(
            api.contains("apiserver_request_total{"),
            "no apiserver_request_total"
        );
        // 1.37 reports object counts as apiserver_resource_objects (the
        // apiserver_storage_objects of earlier releases is gone).
        ensure!(
            api.contains("apiserver_resource_objects{"),
            "no apiserver_resource_objects"
        );
        let etcd = fx.cluster.etcd_metrics().await?;
        for series in [
            "etcd_mvcc_put_total",
            "etcd_disk_wal_fsync_duration_seconds_bucket",
            "etcd_mvcc_db_total_size_in_bytes",
        ] {
            ensure!(etcd.contains(series), "etcd metrics lack {series}");
        }
        Ok(())
    })
}

/// set_capacity adds nodes of the new size and removes surplus ones.
fn capacity_can_grow_and_shrink(fx: &'static crate::Fixture) -> Result<()> {
    // Runs alone in spirit: it only adds nodes past the three the other
    // trials use, and removes exactly those again.
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let nodes: Api<Node> = Api::all(client.clone());
        let five = NodeSpec {
            count: 5,
            cpu: "16".into(),
            memory: "64Gi".into(),
            pods: 110,
        };
        fx.cluster.set_capacity(&five).await?;
        harness::lifecycle::wait_nodes_ready(&client, 5, Duration::from_secs(60), || Ok(()))
            .await?;
        let n4 = nodes.get("kwok-node-4").await?;
        let cpu = n4
            .status
            .and_then(|s| s.capacity)
            .and_then(|c| c.get("cpu").cloned());
        ensure!(
            cpu.map(|q| q.0) == Some("16".into()),
            "kwok-node-4 cpu capacity"
        );
        fx.cluster
            .set_capacity(&crate::test_spec("x").nodes)
            .await?;
        let left = nodes
            .list(&ListParams::default().labels("type=kwok"))
            .await?
            .items
            .len();
        ensure!(left == 3, "{left} nodes after shrinking");
        Ok(())
    })
}

/// Every group/version the live API server serves is in the validator's
/// table for its minor (the table is generated from source; this checks it
/// against the real thing). CRD groups (jobset) are not Kubernetes'.
fn served_api_versions_are_in_the_validation_table(fx: &'static crate::Fixture) -> Result<()> {
    fx.rt.block_on(async {
        let client = fx.cluster.client().await?;
        let facts =
            harness::k8s::facts::for_minor(&fx.cluster.state.spec.k8s_minor).context("no table")?;
        let groups = client.list_api_groups().await?;
        let mut missing = Vec::new();
        let mut checked = 0;
        for g in groups.groups.iter().filter(|g| g.name != "jobset.x-k8s.io") {
            for v in &g.versions {
                checked += 1;
                if !facts.api_versions.contains(&v.group_version) {
                    missing.push(v.group_version.clone());
                }
            }
        }
        for v in client.list_core_api_versions().await?.versions {
            checked += 1;
            if !facts.api_versions.contains(&v) {
                missing.push(v);
            }
        }
        ensure!(
            missing.is_empty(),
            "served but not in harness/data/k8s: {missing:?}"
        );
        ensure!(checked > 20, "only {checked} group/versions served");
        Ok(())
    })
}

/// A deliberately slow request class — LISTs of 2000 ConfigMaps of 8 KiB
/// across the cluster — shows up in the window's per (verb, resource,
/// scope) latency table, slower than the single-object reads, judged
/// against the cluster-scope LIST SLO (30 s).
fn slow_lists_show_in_the_slo_table(fx: &'static crate::Fixture) -> Result<()> {
    use futures::{StreamExt, TryStreamExt};
    use harness::metrics::Window;
    use k8s_openapi::api::core::v1::ConfigMap;
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, "t-slow-list").await?;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "t-slow-list");
        let payload = "x".repeat(8 * 1024);
        futures::stream::iter(0..2000)
            .map(|i| {
                let (cms, payload) = (cms.clone(), payload.clone());
                async move {
                    let cm: ConfigMap = serde_json::from_value(json!({
                        "metadata": {"name": format!("cm-{i}")},
                        "data": {"payload": payload},
                    }))?;
                    cms.create(&PostParams::default(), &cm).await?;
                    Ok::<_, anyhow::Error>(())
                }
            })
            .buffer_unordered(32)
            .try_collect::<Vec<()>>()
            .await?;
        // Lists by someone other than the harness: the kwok identity.
        let other = fx.cluster.client_as("kwok").await?;
        let all: Api<ConfigMap> = Api::all(other.clone());
        let one: Api<ConfigMap> = Api::namespaced(other, "t-slow-list");
        let mut window = Window::open(&fx.cluster).await?;
        window
            .during(&fx.cluster, async {
                for i in 0..5 {
                    all.list(&ListParams::default()).await?;
                    for j in 0..10 {
                        one.get(&format!("cm-{}", i * 10 + j)).await?;
                    }
                }
                Ok::<_, anyhow::Error>(())
            })
            .await?;
        let rows = window.close(&fx.cluster).await?.figures.api_latency_slo;
        let row = |scope: &str| {
            rows.iter()
                .find(|r| r.resource == "configmaps" && r.scope == scope && r.verb == "GET/LIST")
                .with_context(|| {
                    format!(
                        "no GET/LIST configmaps {scope} row in {:?}",
                        rows.iter().map(|r| r.key()).collect::<Vec<_>>()
                    )
                })
        };
        let (list, get) = (row("cluster")?, row("resource")?);
        ensure!(list.count >= 5 && get.count >= 50, "{list:?} {get:?}");
        ensure!(list.slo_ms == 30_000.0 && get.slo_ms == 1_000.0);
        ensure!(
            list.latency_ms.p50 > get.latency_ms.p50,
            "a 16 MiB LIST (p50 {:.1} ms) not slower than a GET (p50 {:.1} ms)",
            list.latency_ms.p50,
            get.latency_ms.p50
        );
        Ok(())
    })
}

/// The tuned control-plane profile reaches the processes: the API
/// server's total concurrency (API Priority and Fairness' nominal seats)
/// is its --max-requests-inflight + --max-mutating-requests-inflight,
/// 3000 + 1000 tuned against 400 + 200 stock.
fn tuned_profile_raises_the_api_servers_concurrency(fx: &'static crate::Fixture) -> Result<()> {
    let seats = |text: &str| -> f64 {
        harness::metrics::prom::parse(text)
            .iter()
            .filter(|s| s.name == "apiserver_flowcontrol_nominal_limit_seats")
            .map(|s| s.value)
            .sum()
    };
    let stock = fx.rt.block_on(fx.cluster.apiserver_metrics())?;
    let mut spec = crate::test_spec(&crate::unique_name("t-tuned"));
    spec.nodes.count = 1;
    spec.control_plane = harness::cluster::profile::ControlPlane::tuned();
    let tuned = Fixture::start(spec)?;
    let r = tuned.rt.block_on(tuned.cluster.apiserver_metrics());
    let argv: Vec<String> = tuned
        .cluster
        .proc("kube-controller-manager")
        .map(|p| p.argv.clone())
        .unwrap_or_default();
    tuned.stop()?;
    let (stock, tuned) = (seats(&stock), seats(&r?));
    // The seats are shared out over priority levels with rounding.
    ensure!((595.0..=605.0).contains(&stock), "stock seats {stock}");
    ensure!((3990.0..=4010.0).contains(&tuned), "tuned seats {tuned}");
    ensure!(
        argv.iter().any(|a| a == "--kube-api-qps=100"),
        "controller-manager argv: {argv:?}"
    );
    Ok(())
}

/// The local-provider suite, on one shared cluster.
pub fn suite(_: &Arguments) -> Suite {
    let tests = vec![
        trial(
            "job_with_parallelism_3_completes",
            job_with_parallelism_3_completes,
        ),
        trial(
            "jobset_completes_with_webhook_defaults",
            jobset_completes_with_webhook_defaults,
        ),
        trial(
            "invalid_jobset_is_rejected_by_the_validating_webhook",
            invalid_jobset_is_rejected,
        ),
        trial(
            "job_pods_are_created_by_the_job_controller_identity",
            job_pods_are_created_by_the_job_controller,
        ),
        trial("metrics_endpoints_answer", metrics_endpoints_answer),
        trial("capacity_can_grow_and_shrink", capacity_can_grow_and_shrink),
        trial(
            "served_api_versions_are_in_the_validation_table",
            served_api_versions_are_in_the_validation_table,
        ),
        trial(
            "slow_lists_show_in_the_slo_latency_table",
            slow_lists_show_in_the_slo_table,
        ),
        trial(
            "tuned_profile_raises_the_api_servers_concurrency",
            tuned_profile_raises_the_api_servers_concurrency,
        ),
    ];
    Suite::new("local", tests)
        .after(|| teardown(PREFIX).map_err(|e| format!("tearing down the shared cluster: {e:#}")))
}
