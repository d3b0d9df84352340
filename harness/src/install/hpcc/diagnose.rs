//! Waiting for HPCC's Deployments to be Ready and, when they are not,
//! naming the failing pod with its events and the tail of its logs.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, LogParams};

use crate::install::hpcc::spec::{NAMESPACE, describe};
use crate::poll::Poll;
use crate::progress::Step;

pub fn deployment_ready(d: &Deployment) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    let st = d.status.as_ref();
    let ready = st.and_then(|s| s.ready_replicas).unwrap_or(0);
    let updated = st.and_then(|s| s.updated_replicas).unwrap_or(0);
    ready >= want && updated >= want
}

/// Container waiting reasons that will not fix themselves.
const STUCK: &[&str] = &[
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
    "RunContainerError",
];

fn pod_name(p: &Pod) -> &str {
    p.metadata.name.as_deref().unwrap_or("?")
}

/// How bad a pod looks (lower is worse) and why; None when it is Ready.
pub fn pod_trouble(p: &Pod) -> Option<(u8, String)> {
    let st = p.status.as_ref()?;
    let statuses = st
        .init_container_statuses
        .iter()
        .flatten()
        .chain(st.container_statuses.iter().flatten());
    let mut worst: Option<(u8, String)> = None;
    let mut consider = |rank: u8, why: String| {
        if worst.as_ref().is_none_or(|(r, _)| rank < *r) {
            worst = Some((rank, why));
        }
    };
    for c in statuses {
        let state = c.state.as_ref();
        if let Some(w) = state.and_then(|s| s.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_default();
            if STUCK.contains(&reason.as_str()) {
                consider(
                    0,
                    format!(
                        "container {} is {reason}{} (restarts: {})",
                        c.name,
                        w.message
                            .as_ref()
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default(),
                        c.restart_count
                    ),
                );
            }
        }
        let term = state
            .and_then(|s| s.terminated.as_ref())
            .or_else(|| c.last_state.as_ref().and_then(|s| s.terminated.as_ref()));
        if let Some(t) = term
            && t.exit_code != 0
        {
            consider(
                1,
                format!(
                    "container {} exited with code {}{} (restarts: {})",
                    c.name,
                    t.exit_code,
                    t.reason
                        .as_ref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default(),
                    c.restart_count
                ),
            );
        }
    }
    let conditions = st.conditions.iter().flatten();
    let cond = |t: &str| conditions.clone().find(|c| c.type_ == t);
    if st.phase.as_deref() == Some("Pending")
        && let Some(c) = cond("PodScheduled")
        && c.status == "False"
    {
        consider(
            2,
            format!(
                "not scheduled: {}{}",
                c.reason.clone().unwrap_or_default(),
                c.message
                    .as_ref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
        );
    }
    if st.phase.as_deref() == Some("Failed") {
        consider(
            1,
            format!("pod Failed: {}", st.reason.clone().unwrap_or_default()),
        );
    }
    let ready = cond("Ready").is_some_and(|c| c.status == "True");
    if !ready {
        let phase = st.phase.clone().unwrap_or_else(|| "Unknown".into());
        let waiting: Vec<String> = st
            .init_container_statuses
            .iter()
            .flatten()
            .chain(st.container_statuses.iter().flatten())
            .filter(|c| !c.ready)
            .map(|c| {
                let w = c
                    .state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.clone());
                match w {
                    Some(r) => format!("{} {r}", c.name),
                    None => format!("{} not ready", c.name),
                }
            })
            .collect();
        let rank = if phase == "Pending" { 3 } else { 4 };
        consider(
            rank,
            if waiting.is_empty() {
                format!("{phase}, not Ready")
            } else {
                format!("{phase}, not Ready: {}", waiting.join(", "))
            },
        );
    }
    worst
}

/// The pod to report: the worst-looking, then the one restarted most.
pub fn failing_pod(pods: &[Pod]) -> Option<(&Pod, String)> {
    let restarts = |p: &Pod| -> i32 {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map(|cs| cs.iter().map(|c| c.restart_count).sum())
            .unwrap_or(0)
    };
    pods.iter()
        .filter_map(|p| pod_trouble(p).map(|(rank, why)| (p, rank, why)))
        .min_by(|a, b| {
            a.1.cmp(&b.1)
                .then(restarts(b.0).cmp(&restarts(a.0)))
                .then(pod_name(a.0).cmp(pod_name(b.0)))
        })
        .map(|(p, _, why)| (p, why))
}

/// One container log to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    pub container: String,
    /// The previous (crashed) instance's log.
    pub previous: bool,
}

/// Logs worth reading: every container that is not ready and has run
/// (a container waiting for its image has no log). A restarted one's
/// previous instance is the one that failed.
pub fn logs_to_fetch(p: &Pod) -> Vec<LogRequest> {
    let Some(st) = p.status.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in st
        .init_container_statuses
        .iter()
        .flatten()
        .chain(st.container_statuses.iter().flatten())
    {
        if c.ready {
            continue;
        }
        let state = c.state.as_ref();
        let running = state.is_some_and(|s| s.running.is_some());
        let terminated = state.is_some_and(|s| s.terminated.is_some());
        if c.restart_count > 0 {
            out.push(LogRequest {
                container: c.name.clone(),
                previous: true,
            });
        }
        if running || terminated {
            out.push(LogRequest {
                container: c.name.clone(),
                previous: false,
            });
        }
    }
    out
}

fn event_time(e: &Event) -> Option<k8s_openapi::jiff::Timestamp> {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
}

/// The last `max` events about `pod`, oldest first, one line each.
pub fn event_lines(pod: &str, events: &[Event], max: usize) -> Vec<String> {
    let mut mine: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod)
                && e.involved_object.kind.as_deref().is_none_or(|k| k == "Pod")
        })
        .collect();
    mine.sort_by_key(|e| event_time(e));
    let skip = mine.len().saturating_sub(max);
    mine.into_iter()
        .skip(skip)
        .map(|e| {
            format!(
                "{} {} {}{}: {}",
                event_time(e)
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "-".into()),
                e.type_.as_deref().unwrap_or("Normal"),
                e.reason.as_deref().unwrap_or("?"),
                match e.count {
                    Some(n) if n > 1 => format!(" (×{n})"),
                    _ => String::new(),
                },
                e.message.as_deref().unwrap_or("").trim()
            )
        })
        .collect()
}

/// A Deployment that is not Ready: its name and, if the chart made it, itself.
type NotReady = (String, Option<Deployment>);

const LOG_TAIL_LINES: i64 = 40;
const EVENT_LINES: usize = 15;

/// What is wrong with the Deployments that are not Ready: the failing
/// pod of each, its events and the tail of its logs.
async fn diagnose(client: &kube::Client, not_ready: &[NotReady]) -> String {
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let events_api: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    let mut out = String::new();
    for (name, dep) in not_ready {
        let Some(dep) = dep else {
            out.push_str(&format!(
                "\n- Deployment {name}: not created by the chart (check the values: is the component named so, and enabled?)"
            ));
            continue;
        };
        let selector = dep
            .spec
            .selector
            .match_labels
            .as_ref()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        let pods = match pods_api
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(l) => l.items,
            Err(e) => {
                out.push_str(&format!("\n- Deployment {name}: listing its pods: {e}"));
                continue;
            }
        };
        let ready = dep
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0);
        let want = dep.spec.replicas.unwrap_or(1);
        out.push_str(&format!(
            "\n- Deployment {name}: {ready}/{want} ready, {} pod(s)",
            pods.len()
        ));
        let Some((pod, why)) = failing_pod(&pods) else {
            if pods.is_empty() {
                // No pod at all: the ReplicaSet's events say why.
                if let Ok(ev) = events_api.list(&ListParams::default()).await {
                    let rs_lines: Vec<String> = ev
                        .items
                        .iter()
                        .filter(|e| {
                            e.involved_object.kind.as_deref() == Some("ReplicaSet")
                                && e.involved_object
                                    .name
                                    .as_deref()
                                    .is_some_and(|n| n.starts_with(&format!("{name}-")))
                        })
                        .filter_map(|e| e.message.clone())
                        .collect();
                    for l in rs_lines.iter().rev().take(5).rev() {
                        out.push_str(&format!("\n    replicaset: {l}"));
                    }
                }
            }
            continue;
        };
        let pname = pod_name(pod).to_string();
        out.push_str(&format!("\n  failing pod {pname}: {why}"));
        let fs = format!("involvedObject.name={pname}");
        match events_api.list(&ListParams::default().fields(&fs)).await {
            Ok(ev) => {
                let lines = event_lines(&pname, &ev.items, EVENT_LINES);
                if lines.is_empty() {
                    out.push_str("\n  events: none");
                } else {
                    out.push_str("\n  events:");
                    for l in lines {
                        out.push_str(&format!("\n    {l}"));
                    }
                }
            }
            Err(e) => out.push_str(&format!("\n  events: cannot list: {e}")),
        }
        for req in logs_to_fetch(pod) {
            let lp = LogParams {
                container: Some(req.container.clone()),
                previous: req.previous,
                tail_lines: Some(LOG_TAIL_LINES),
                ..LogParams::default()
            };
            let label = if req.previous {
                format!("{} (previous instance)", req.container)
            } else {
                req.container.clone()
            };
            match pods_api.logs(&pname, &lp).await {
                Ok(text) if text.trim().is_empty() => {
                    out.push_str(&format!("\n  log of {label}: empty"))
                }
                Ok(text) => {
                    out.push_str(&format!(
                        "\n  log of {label} (last {LOG_TAIL_LINES} lines):"
                    ));
                    for l in text.lines() {
                        out.push_str(&format!("\n    | {l}"));
                    }
                }
                Err(e) => out.push_str(&format!("\n  log of {label}: cannot read: {e}")),
            }
        }
    }
    out
}

/// Wait until every named Deployment is Ready, showing progress; on timeout
/// the error carries the diagnosis.
pub async fn wait_ready(
    client: &kube::Client,
    names: &[(String, &'static str)],
    timeout: Duration,
) -> Result<()> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let step = Step::start(format!(
        "waiting for HPCC to be Ready ({})",
        describe(names)
    ));
    // The Deployments not Ready at the last complete look, for the
    // diagnosis; cleared while a look is under way, so that an error
    // reading them is not taken for a timeout.
    let pending: Mutex<Option<Vec<NotReady>>> = Mutex::new(None);
    let waited = Poll::new("HPCC's Deployments Ready", timeout)
        .every(Duration::from_secs(2))
        .until_state(|| async {
            *pending.lock().unwrap() = None;
            let mut not_ready: Vec<NotReady> = Vec::new();
            for (name, _) in names {
                let d = api
                    .get_opt(name)
                    .await
                    .with_context(|| format!("reading Deployment {name} in {NAMESPACE}"))?;
                if !d.as_ref().is_some_and(deployment_ready) {
                    not_ready.push((name.clone(), d));
                }
            }
            if not_ready.is_empty() {
                return Ok(Ok(()));
            }
            let ready = names.len() - not_ready.len();
            let waiting: Vec<&str> = not_ready.iter().map(|(n, _)| n.as_str()).collect();
            let state = format!(
                "{ready}/{} ready; waiting for {}",
                names.len(),
                waiting.join(", ")
            );
            step.update(&state);
            *pending.lock().unwrap() = Some(not_ready);
            Ok(Err(state))
        })
        .await;
    let Err(err) = waited else {
        step.done("ready");
        return Ok(());
    };
    let Some(pending) = pending.into_inner().unwrap() else {
        return Err(err);
    };
    let detail = diagnose(client, &pending).await;
    step.done("timed out");
    bail!(
        "HPCC not Ready after {} s: {} of {} deployments Ready{detail}",
        timeout.as_secs(),
        names.len() - pending.len(),
        names.len()
    );
}

/// Is `group` served (e.g. jobset.x-k8s.io)?
pub(super) async fn group_served(client: &kube::Client, group: &str) -> Result<bool> {
    let groups = client
        .list_api_groups()
        .await
        .context("listing the API groups")?;
    Ok(groups.groups.iter().any(|g| g.name == group))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn ready_pod(name: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true,
                    "restartCount": 0, "state": {"running": {}}}]}
        }))
    }

    fn crashing_pod(name: &str, restarts: i32) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{"name": "dali", "image": "i", "imageID": "", "ready": false,
                    "restartCount": restarts,
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                    "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}}}]}
        }))
    }

    fn unschedulable_pod(name: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 node(s) had volume node affinity conflict"}]}
        }))
    }

    fn starting_pod(name: &str) -> Pod {
        pod(json!({
            "metadata": {"name": name},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{"name": "esp", "image": "i", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"running": {}}}]}
        }))
    }

    #[test]
    fn the_worst_pod_is_reported() {
        assert!(failing_pod(&[ready_pod("a")]).is_none());
        let pods = [
            ready_pod("a"),
            starting_pod("b"),
            unschedulable_pod("c"),
            crashing_pod("d", 1),
            crashing_pod("e", 7),
        ];
        let (p, why) = failing_pod(&pods).unwrap();
        // Crash-looping beats unschedulable and slow; the most restarts wins.
        assert_eq!(p.metadata.name.as_deref(), Some("e"));
        assert!(
            why.contains("CrashLoopBackOff") && why.contains("restarts: 7"),
            "{why}"
        );
        let (p, why) = failing_pod(&pods[..3]).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("c"));
        assert!(why.contains("volume node affinity conflict"), "{why}");
        let (p, why) = failing_pod(&pods[..2]).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("b"));
        assert!(why.contains("esp not ready"), "{why}");
    }

    #[test]
    fn which_logs_are_read() {
        // A crash-looping container: its previous instance is the one that failed.
        assert_eq!(
            logs_to_fetch(&crashing_pod("d", 3)),
            [LogRequest {
                container: "dali".into(),
                previous: true
            }]
        );
        // Running but not ready: the current log.
        assert_eq!(
            logs_to_fetch(&starting_pod("b")),
            [LogRequest {
                container: "esp".into(),
                previous: false
            }]
        );
        // Waiting for an image or not scheduled: nothing has run, no log.
        let pulling = pod(json!({
            "metadata": {"name": "p"},
            "status": {"phase": "Pending",
                "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}
        }));
        assert!(logs_to_fetch(&pulling).is_empty());
        assert!(logs_to_fetch(&unschedulable_pod("c")).is_empty());
        assert!(logs_to_fetch(&ready_pod("a")).is_empty());
        let (_, why) = failing_pod(std::slice::from_ref(&pulling)).unwrap();
        assert!(why.contains("ImagePullBackOff"), "{why}");
    }

    #[test]
    fn events_of_the_pod_newest_last() {
        let ev = |pod: &str, at: &str, reason: &str, count: i32| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": format!("{pod}.{reason}")},
                "involvedObject": {"kind": "Pod", "name": pod},
                "reason": reason, "message": format!("{reason} happened"),
                "type": "Warning", "count": count, "lastTimestamp": at,
            }))
            .unwrap()
        };
        let events = [
            ev("d", "2026-01-01T00:00:30Z", "BackOff", 5),
            ev("d", "2026-01-01T00:00:10Z", "Pulled", 1),
            ev("other", "2026-01-01T00:00:20Z", "Scheduled", 1),
            ev("d", "2026-01-01T00:00:20Z", "Started", 1),
        ];
        let lines = event_lines("d", &events, 10);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("Pulled"), "{lines:?}");
        assert!(
            lines[2].contains("Warning BackOff (×5): BackOff happened"),
            "{lines:?}"
        );
        let last = event_lines("d", &events, 1);
        assert_eq!(last.len(), 1);
        assert!(last[0].contains("BackOff"));
        assert!(event_lines("nobody", &events, 10).is_empty());
    }

    #[test]
    fn deployment_readiness() {
        let d = |want: i32, ready: i32, updated: i32| -> Deployment {
            serde_json::from_value(json!({
                "metadata": {"name": "x"},
                "spec": {"replicas": want, "selector": {"matchLabels": {"run": "x"}},
                    "template": {}},
                "status": {"readyReplicas": ready, "updatedReplicas": updated}
            }))
            .unwrap()
        };
        assert!(deployment_ready(&d(1, 1, 1)));
        assert!(!deployment_ready(&d(1, 0, 1)));
        assert!(!deployment_ready(&d(2, 2, 1)));
    }
}
