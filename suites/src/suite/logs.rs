//! Container logs on fake nodes: `kubectl logs` of a Job's pod, served by
//! kwok's own server (ClusterLogs in its config; harness
//! `cluster::local::kwok_logs`) through the API server's `pods/log`
//! request, as on a real node. What is read back is compared with the
//! file kwok serves, and what the call cost is counted in the audit log.

use std::time::Duration;

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use crate::{Fixture, namespace, teardown, trial_result};
use anyhow::{Context, Result, ensure};
use harness::cluster::Cluster;
use harness::cluster::local::kwok_logs;
use harness::k8s::K8sRelease;
use harness::poll::Poll;
use harness::tools::{Component, Resolver};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use libtest_mimic::Arguments;
use serde_json::json;

const NS: &str = "t-logs";
/// The shared cluster's prefix.
const PREFIX: &str = "t-logs";

fn kubectl_logs_of_a_job_come_from_kwok(fx: &'static Fixture) -> Result<()> {
    let kubectl = Resolver::from_env(K8sRelease::default_release(), Default::default())
        .resolve(Component::Kubectl)?
        .path;
    let (_, before) = fx.cluster.audit_events(0)?;
    fx.rt.block_on(async {
        let client = namespace(&fx.cluster, NS).await?;
        let job: Job = serde_json::from_value(json!({
            "metadata": {"name": "talks"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "work", "image": "registry.invalid/work:none"}]
            }}}
        }))?;
        Api::<Job>::namespaced(client.clone(), NS)
            .create(&PostParams::default(), &job)
            .await?;
        let pods: Api<Pod> = Api::namespaced(client, NS);
        Poll::new("the pod of Job talks on a node", Duration::from_secs(60))
            .tolerate_errors()
            .until(|| async {
                let l = pods
                    .list(&ListParams::default().labels("job-name=talks"))
                    .await?;
                Ok(l.items
                    .iter()
                    .any(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
                    .then_some(()))
            })
            .await
    })?;
    let out = std::process::Command::new(&kubectl)
        .arg(format!(
            "--kubeconfig={}",
            fx.cluster.layout.admin_kubeconfig().display()
        ))
        .args(["logs", "job/talks", "-n", NS])
        .output()
        .with_context(|| format!("running {}", kubectl.display()))?;
    ensure!(
        out.status.success(),
        "kubectl logs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let served = std::fs::read_to_string(fx.cluster.layout.kwok_log())?;
    let got = String::from_utf8_lossy(&out.stdout);
    ensure!(
        got == kwok_logs::texts(&served),
        "kubectl logs printed\n{got}\nbut kwok serves\n{served}"
    );
    // What the call cost: every request of the admin's kubectl in the
    // namespace after the Job was made, and exactly one pods/log.
    let events = fx.rt.block_on(
        Poll::new(
            "the pods/log request in the audit log",
            Duration::from_secs(30),
        )
        .tolerate_errors()
        .until(|| async {
            let (events, _) = fx.cluster.audit_events(before)?;
            let mine: Vec<_> = events
                .into_iter()
                .filter(|e| e.stage == "ResponseComplete" && e.user_agent.starts_with("kubectl"))
                .collect();
            let logs = mine
                .iter()
                .filter(|e| {
                    e.object_ref
                        .as_ref()
                        .is_some_and(|o| o.subresource == "log")
                })
                .count();
            Ok((logs >= 1).then_some(mine))
        }),
    )?;
    let logs: Vec<_> = events
        .iter()
        .filter(|e| {
            e.object_ref
                .as_ref()
                .is_some_and(|o| o.subresource == "log")
        })
        .collect();
    ensure!(
        logs.len() == 1
            && logs[0]
                .response_status
                .as_ref()
                .is_none_or(|s| s.code == 200),
        "pods/log requests: {logs:?}"
    );
    eprintln!(
        "kubectl logs job/talks: {} API requests ({}), one pods/log served by kwok",
        events.len(),
        events
            .iter()
            .map(|e| format!(
                "{} {}",
                e.verb,
                e.request_uri.split('?').next().unwrap_or("")
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// The pod-logs suite, on a shared cluster of its own.
pub fn suite(_: &Arguments) -> Suite {
    let tests = vec![
        Test::new("kubectl_logs_of_a_job_come_from_kwok", || {
            let fx = Fixture::shared(PREFIX)?;
            trial_result(kubectl_logs_of_a_job_come_from_kwok(fx))
        })
        .needs(default_cluster_and(&[])),
    ];
    Suite::new("logs", tests)
        .after(|| teardown(PREFIX).map_err(|e| format!("tearing down the shared cluster: {e:#}")))
}
