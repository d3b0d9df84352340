//! kwok's kubelet models, measured. For each model a local cluster runs
//! Jobs of 3 pods × 2 containers (the second a sidecar) that complete, are
//! deleted while running, or are deleted while only the sidecar runs, and
//! the audit log counts what kwok did per pod (user kwok-controller,
//! deduplicated by auditID): PATCH pods/status, POST events (reasons read
//! back from the Event objects), DELETE pods. The counts must be
//! `harness::cluster::local::pod_calls::expected_calls` — the table
//! manifests/kwok/README.md documents — and kwok-minimal's must stay below
//! kubelet-like's. Then pods fail on purpose (pool::fail_annotations): a
//! Job stops at its backoffLimit, one index fails alone, and a JobSet is
//! restarted by its failure policy.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use crate::{Fixture, namespace, test_spec, trial_result, unique_name};
use anyhow::{Context, Result, ensure};
use harness::cluster::Cluster;
use harness::cluster::kwok::{SIDECAR_EXIT_DELAY, SIDECAR_NAME};
use harness::cluster::local::pod_calls::{EVENT_REASONS, PodCalls, PodEnd, expected_calls};
use harness::cluster::pool::{POD_COMPLETE_DELAY, POD_COMPLETE_JITTER, fail_annotations};
use harness::cluster::spec::KubeletModel;
use harness::poll::Poll;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use libtest_mimic::Arguments;
use serde_json::json;

/// Who reports pods' lives: the user the audit log names and the source
/// component of the Events it records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reporter<'a> {
    pub user: &'a str,
    pub source: &'a str,
}

/// kwok: its client certificate's user, its event recorder's component.
const KWOK: Reporter<'static> = Reporter {
    user: "kwok-controller",
    source: "kwok_controller",
};
pub(crate) const PODS: usize = 3;
pub(crate) const CONTAINERS: u32 = 2;

/// A Job of PODS pods of a main container and a sidecar (`postrun`, as
/// HPCC's), timed for `end`.
fn job(name: &str, end: PodEnd) -> Result<Job> {
    let (run, sidecar) = match end {
        PodEnd::Completes => ("2s", "2s"),
        PodEnd::DeletedRunning => ("1h", "2s"),
        PodEnd::DeletedSidecarRunning => ("1s", "1h"),
    };
    let mut annotations = json!({
        POD_COMPLETE_DELAY: run,
        POD_COMPLETE_JITTER: run,
        SIDECAR_EXIT_DELAY: sidecar,
    });
    if end == PodEnd::DeletedSidecarRunning {
        // By name here; by default the last container is the sidecar.
        annotations[SIDECAR_NAME] = json!("postrun");
    }
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "parallelism": PODS,
            "completions": PODS,
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "registry.invalid/main:none"},
                        {"name": "postrun", "image": "registry.invalid/postrun:none"}
                    ]
                }
            }
        }
    }))?)
}

fn container_state<'a>(p: &'a Pod, name: &str) -> Option<&'a str> {
    let s = p
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)?
        .state
        .as_ref()?;
    if s.running.is_some() {
        Some("running")
    } else if s.terminated.is_some() {
        Some("terminated")
    } else {
        Some("waiting")
    }
}

fn job_complete(j: &Job) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

/// Where the Job's pods must be before the Job is deleted.
pub(crate) async fn wait_for(
    client: &kube::Client,
    ns: &str,
    name: &str,
    end: PodEnd,
) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let sel = format!("job-name={name}");
    Poll::new(
        format!("Job {ns}/{name} ready to delete ({end:?})"),
        Duration::from_secs(120),
    )
    .every(Duration::from_millis(250))
    .until_state(|| {
        let (pods, jobs, sel) = (pods.clone(), jobs.clone(), sel.clone());
        async move {
            let list = pods.list(&ListParams::default().labels(&sel)).await?.items;
            let states: Vec<(Option<&str>, Option<&str>)> = list
                .iter()
                .map(|p| (container_state(p, "main"), container_state(p, "postrun")))
                .collect();
            let ready = list.len() == PODS
                && match end {
                    PodEnd::Completes => job_complete(&jobs.get(name).await?),
                    PodEnd::DeletedRunning => states
                        .iter()
                        .all(|s| *s == (Some("running"), Some("running"))),
                    // Main ended and postrun was started (running; or,
                    // in kwok-minimal, which has no sidecars, ended
                    // too). On a loaded kind worker main (1 s) ended
                    // before the kubelet had started postrun, and the
                    // deletion cut postrun's start short (a `Failed`
                    // event; CI of 6d0ae74).
                    PodEnd::DeletedSidecarRunning => states.iter().all(|s| {
                        s.0 == Some("terminated") && matches!(s.1, Some("running" | "terminated"))
                    }),
                };
            Ok(if ready {
                Ok(())
            } else {
                Err(format!("{states:?}"))
            })
        }
    })
    .await
}

/// Wait until `ns` has no pod left.
pub(crate) async fn pods_gone(client: &kube::Client, ns: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    Poll::new(format!("the pods of {ns} gone"), Duration::from_secs(90))
        .until(|| async {
            Ok(pods
                .list(&ListParams::default())
                .await?
                .items
                .is_empty()
                .then_some(()))
        })
        .await
}

/// `who`'s requests per pod in `ns` since audit offset `from`, with any
/// other request it made there.
fn audited_calls(
    cluster: &impl Cluster,
    who: Reporter<'_>,
    ns: &str,
    from: u64,
) -> Result<(BTreeMap<String, PodCalls>, Vec<String>)> {
    let (events, _) = cluster.audit_events(from)?;
    let mut seen = BTreeSet::new();
    let mut per_pod: BTreeMap<String, PodCalls> = BTreeMap::new();
    let mut other = Vec::new();
    for e in events {
        if e.user.username != who.user || e.stage != "ResponseComplete" {
            continue;
        }
        let Some(o) = e.object_ref.as_ref().filter(|o| o.namespace == ns) else {
            continue;
        };
        if !seen.insert(e.audit_id.clone()) {
            continue;
        }
        // Recorder events are named <pod>.<timestamp>.
        let pod = o.name.split('.').next().unwrap_or_default().to_string();
        match (e.verb.as_str(), o.resource.as_str(), o.subresource.as_str()) {
            ("patch", "pods", "status") => per_pod.entry(pod).or_default().status_patches += 1,
            ("delete", "pods", "") => per_pod.entry(pod).or_default().deletes += 1,
            // By reason once the Event objects are read.
            ("create", "events", "") => {
                *per_pod
                    .entry(pod)
                    .or_default()
                    .events
                    .entry("POST".into())
                    .or_default() += 1
            }
            _ => other.push(format!("{} {}", e.key(), o.name)),
        }
    }
    Ok((per_pod, other))
}

/// Event reasons `who` recorded per pod, from the Event objects (an event
/// the recorder's correlator repeated has count > 1).
async fn event_reasons(
    client: &kube::Client,
    who: Reporter<'_>,
    ns: &str,
) -> Result<BTreeMap<String, BTreeMap<String, u32>>> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let mut out: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    for e in events.list(&ListParams::default()).await?.items {
        if e.source.as_ref().and_then(|s| s.component.as_deref()) != Some(who.source) {
            continue;
        }
        let pod = e.involved_object.name.clone().unwrap_or_default();
        let reason = e.reason.clone().unwrap_or_default();
        let count = e.count.unwrap_or(1).max(1) as u32;
        *out.entry(pod).or_default().entry(reason).or_default() += count;
    }
    Ok(out)
}

/// How long the audit log and the Event objects may take to agree.
const AGREE: Duration = Duration::from_secs(20);

/// The per-pod calls: audit counts with the POSTs split by reason; checked
/// against each other. The two are read one after the other while the
/// reporter may still be sending (seen in a loaded `.ci/run`: 6 event
/// POSTs in the audit log, 8 Event objects listed a moment later), so
/// both are read again until they agree, for at most [`AGREE`].
pub(crate) async fn measure(
    cluster: &impl Cluster,
    client: &kube::Client,
    who: Reporter<'_>,
    ns: &str,
    from: u64,
) -> Result<(BTreeMap<String, PodCalls>, Vec<String>)> {
    Poll::new(
        format!(
            "{}'s event POSTs in {ns} and its Event objects to agree",
            who.user
        ),
        AGREE,
    )
    .every(Duration::from_millis(500))
    .until_state(|| async {
        let (mut per_pod, other) = audited_calls(cluster, who, ns, from)?;
        let reasons = event_reasons(client, who, ns).await?;
        for (pod, calls) in per_pod.iter_mut() {
            let posts = calls.events.remove("POST").unwrap_or(0);
            let by_reason = reasons.get(pod).cloned().unwrap_or_default();
            if by_reason.values().sum::<u32>() != posts {
                return Ok(Err(format!(
                    "pod {pod}: {posts} event POSTs in the audit log, Event objects {by_reason:?}"
                )));
            }
            calls.events = EVENT_REASONS.iter().map(|r| (r.to_string(), 0)).collect();
            for (r, n) in by_reason {
                *calls.events.entry(r).or_default() += n;
            }
        }
        Ok(Ok((per_pod, other)))
    })
    .await
}

pub(crate) fn table(
    model: impl std::fmt::Display,
    end: PodEnd,
    per_pod: &BTreeMap<String, PodCalls>,
) -> String {
    let mut s = format!(
        "{model}, {}:\n  {:<24} {:>13} {:>6} {:>7} {:>7} {:>7} {:>6}\n",
        end.name(),
        "pod",
        "PATCH status",
        "Pulled",
        "Created",
        "Started",
        "Killing",
        "DELETE"
    );
    for (pod, c) in per_pod {
        s.push_str(&format!(
            "  {pod:<24} {:>13} {:>6} {:>7} {:>7} {:>7} {:>6}\n",
            c.status_patches,
            c.event_count("Pulled"),
            c.event_count("Created"),
            c.event_count("Started"),
            c.event_count("Killing"),
            c.deletes
        ));
    }
    s
}

/// One Job for `end`: run it, delete it, count kwok's calls per pod.
async fn scenario(fx: &Fixture, model: KubeletModel, end: PodEnd) -> Result<()> {
    let ns = format!("k-{}", end.name());
    let client = namespace(&fx.cluster, &ns).await?;
    let from = fx.cluster.audit_end()?;
    let name = "pair";
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    jobs.create(&PostParams::default(), &job(name, end)?)
        .await?;
    wait_for(&client, &ns, name, end).await?;
    jobs.delete(name, &DeleteParams::background()).await?;
    pods_gone(&client, &ns).await?;
    let want = expected_calls(model, CONTAINERS, true, end);
    // Events are sent by kwok's recorder after the fact: wait until the
    // counts are what the table says, then make sure nothing more arrives.
    let matches = |per_pod: &BTreeMap<String, PodCalls>| {
        per_pod.len() == PODS && per_pod.values().all(|c| want.contains(c))
    };
    let settled = Poll::new(
        format!("kwok's calls for {ns} ({model})"),
        Duration::from_secs(30),
    )
    .every(Duration::from_millis(500))
    .until_state(|| async {
        let (per_pod, other) = measure(&fx.cluster, &client, KWOK, &ns, from).await?;
        let t = table(model, end, &per_pod);
        Ok(if matches(&per_pod) && other.is_empty() {
            Ok(per_pod)
        } else {
            Err(format!(
                "want per pod {want:?}, other requests {other:?}, got\n{t}"
            ))
        })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (per_pod, other) = measure(&fx.cluster, &client, KWOK, &ns, from).await?;
    println!("{}", table(model, end, &per_pod));
    settled?;
    ensure!(
        matches(&per_pod) && other.is_empty(),
        "more calls arrived later: {other:?}\n{}",
        table(model, end, &per_pod)
    );
    if model == KubeletModel::KwokMinimal {
        let like = expected_calls(KubeletModel::KubeletLike, CONTAINERS, true, end).fewest;
        for (pod, c) in &per_pod {
            ensure!(
                c.total() < like.total(),
                "kwok-minimal pod {pod} made {} calls, kubelet-like makes {}",
                c.total(),
                like.total()
            );
        }
    }
    Ok(())
}

/// A Job's pods failing on purpose (pool::fail_annotations, exit code 3
/// after 1 s): `backoffLimit: 1` ends the Job Failed with
/// BackoffLimitExceeded after 2 failed pods whose main container exited
/// 3; with only index 1 failing, index 0 succeeds; a JobSet whose Job
/// fails is restarted by its failure policy (`maxRestarts: 1`, read from
/// its status) and then fails.
async fn failing(fx: &Fixture, model: KubeletModel) -> Result<()> {
    let ns = "k-failing";
    let client = namespace(&fx.cluster, ns).await?;
    let mut annotations = serde_json::to_value(fail_annotations(3, &[]))?;
    annotations[POD_COMPLETE_DELAY] = json!("1s");
    annotations[POD_COMPLETE_JITTER] = json!("1s");
    let mut only_one = serde_json::to_value(fail_annotations(3, &[1]))?;
    only_one[POD_COMPLETE_DELAY] = json!("1s");
    only_one[POD_COMPLETE_JITTER] = json!("1s");
    let pod = |annotations: &serde_json::Value| {
        json!({
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "registry.invalid/main:none"}]},
        })
    };
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    for (name, spec) in [
        (
            "fails",
            json!({"backoffLimit": 1, "template": pod(&annotations)}),
        ),
        // One index at a time, lowest first: index 0 has succeeded before
        // index 1 starts. Side by side, index 1 could fail first, and a
        // Job past its backoffLimit has its active pods deleted
        // (k8s.io/kubernetes pkg/controller/job/job_controller.go,
        // `syncJob` → `deleteActivePods`): index 0 was gone from the list
        // in the CI of 51041f7, on a loaded machine.
        (
            "index-1-fails",
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 1,
                   "backoffLimit": 0, "template": pod(&only_one)}),
        ),
    ] {
        let job: Job = serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))?;
        jobs.create(&PostParams::default(), &job).await?;
    }
    let failed = |j: &Job| -> Option<String> {
        j.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "Failed" && c.status == "True")
            .and_then(|c| c.reason.clone())
    };
    for name in ["fails", "index-1-fails"] {
        let reason = Poll::new(
            format!("{model}: Job {name} Failed"),
            Duration::from_secs(90),
        )
        .until(|| async { Ok(jobs.get(name).await.ok().as_ref().and_then(failed)) })
        .await?;
        ensure!(
            reason == "BackoffLimitExceeded",
            "{model}: {name}: {reason}"
        );
    }
    let fails = jobs.get("fails").await?;
    let n = fails.status.as_ref().and_then(|s| s.failed).unwrap_or(0);
    ensure!(
        n == 2,
        "{model}: Job fails: {n} failed pods, backoffLimit 1 allows 2"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let all = pods.list(&ListParams::default()).await?.items;
    let exit = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code)
    };
    let of = |job: &str, index: Option<&str>| -> Vec<(String, Option<i32>)> {
        all.iter()
            .filter(|p| {
                let l = p.metadata.labels.clone().unwrap_or_default();
                l.get("job-name").map(String::as_str) == Some(job)
                    && index.is_none_or(|i| {
                        l.get("batch.kubernetes.io/job-completion-index")
                            .map(String::as_str)
                            == Some(i)
                    })
            })
            .map(|p| {
                let phase = p
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default();
                (phase, exit(p))
            })
            .collect()
    };
    let fails_pods = of("fails", None);
    ensure!(
        fails_pods.len() == 2
            && fails_pods
                .iter()
                .all(|p| p == &("Failed".to_string(), Some(3))),
        "{model}: the pods of Job fails: {fails_pods:?}"
    );
    ensure!(
        of("index-1-fails", Some("0")).contains(&("Succeeded".to_string(), Some(0))),
        "{model}: index 0 of index-1-fails: {:?}",
        of("index-1-fails", Some("0"))
    );
    ensure!(
        of("index-1-fails", Some("1")).contains(&("Failed".to_string(), Some(3))),
        "{model}: index 1 of index-1-fails: {:?}",
        of("index-1-fails", Some("1"))
    );
    // A JobSet restarted by its failure policy, then failed.
    let jobsets = Api::<kube::api::DynamicObject>::namespaced_with(
        client.clone(),
        ns,
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                harness::k8s::jobset::GROUP,
                harness::k8s::jobset::VERSION,
                "JobSet",
            ),
            "jobsets",
        ),
    );
    let js: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/{}", harness::k8s::jobset::GROUP, harness::k8s::jobset::VERSION),
        "kind": "JobSet",
        "metadata": {"name": "restarts"},
        "spec": {
            "failurePolicy": {"maxRestarts": 1},
            "replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                "backoffLimit": 0, "template": pod(&annotations)}}}],
        },
    }))?;
    jobsets.create(&PostParams::default(), &js).await?;
    let status = Poll::new(
        format!("{model}: JobSet restarts Failed"),
        Duration::from_secs(120),
    )
    .until(|| async {
        let js = jobsets.get("restarts").await?;
        let st = js.data.get("status").cloned().unwrap_or_default();
        let failed = st["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Failed" && c["status"] == "True")
        });
        Ok(failed.then_some(st))
    })
    .await?;
    ensure!(
        status["restarts"] == json!(1),
        "{model}: JobSet restarts: status {status}"
    );
    Ok(())
}

fn run_model(model: KubeletModel) -> Result<()> {
    let prefix = match model {
        KubeletModel::KwokMinimal => "t-kubelet-min",
        KubeletModel::KubeletLike => "t-kubelet-like",
    };
    let mut spec = test_spec(&unique_name(prefix));
    spec.kubelet = model;
    let fx = Fixture::start(spec)?;
    let result = fx.rt.block_on(async {
        for end in PodEnd::ALL {
            scenario(&fx, model, end)
                .await
                .with_context(|| format!("{model}: {}", end.name()))?;
        }
        failing(&fx, model).await
    });
    let stopped = fx.stop();
    result?;
    stopped
}

/// The kubelet-model suite: each model on a cluster of its own.
pub fn suite(_: &Arguments) -> Suite {
    let tests = KubeletModel::ALL
        .into_iter()
        .map(|m| {
            Test::new(m.name(), move || trial_result(run_model(m))).needs(default_cluster_and(&[]))
        })
        .collect();
    Suite::new("kubelet", tests)
}
