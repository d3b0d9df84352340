//! The control plane's restarts in a kind cluster. kubeadm runs etcd,
//! kube-apiserver, kube-controller-manager and kube-scheduler as static
//! pods of the control-plane node, and the node's kubelet starts a new
//! container when one exits: a lost leader election (the scheduler and the
//! controller manager exit when they cannot renew their lease in time), a
//! failed liveness probe, a crash. Each new container carries the next
//! attempt number (CRI `ContainerMetadata.attempt`, what `crictl ps -a`
//! lists in the node). On a loaded machine such a restart surfaces as
//! "connection refused" or "deadline has elapsed" far from its cause, so
//! the provider names it, with the last lines of the instance that ended.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::cluster::kind::commands::plan;
use crate::tools::command;

/// The static pods' containers, by container name.
const COMPONENTS: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];
/// Log lines kept of an instance that ended.
const LAST_LINES: usize = 6;

/// A control-plane component that was restarted.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    pub component: String,
    /// The newest container's attempt: how many times it was restarted.
    pub restarts: u32,
    /// Whether the newest container runs now.
    pub running: bool,
    /// The newest ended container's id, whose log says why it ended.
    pub ended: Option<String>,
    /// That container's last log lines (empty until read).
    pub last_lines: Vec<String>,
    /// Its instances as `crictl ps -a` listed them, oldest first
    /// ("0 exited, 1 running"): said when no log line could be read.
    pub listed: String,
    /// Why no log line was read, once `of` tried.
    pub unread: Option<String>,
}

#[derive(Deserialize)]
struct Listing {
    #[serde(default)]
    containers: Vec<Container>,
}

#[derive(Deserialize)]
struct Container {
    id: String,
    metadata: Metadata,
    state: String,
    #[serde(default)]
    labels: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    attempt: u32,
}

/// The restarted components in `crictl ps -a -o json`'s output: those
/// whose newest container has an attempt above 0, or whose newest
/// container is not running.
pub fn restarted(json: &str) -> Result<Vec<Restart>> {
    let listing: Listing =
        serde_json::from_str(json).context("`crictl ps -a -o json` printed no container list")?;
    let mut out = Vec::new();
    for component in COMPONENTS {
        let mut mine: Vec<&Container> = listing
            .containers
            .iter()
            .filter(|c| {
                c.metadata.name == component
                    && c.labels
                        .get("io.kubernetes.pod.namespace")
                        .map(String::as_str)
                        == Some("kube-system")
            })
            .collect();
        mine.sort_by_key(|c| c.metadata.attempt);
        let Some(newest) = mine.last() else {
            continue;
        };
        let running = newest.state == "CONTAINER_RUNNING";
        if newest.metadata.attempt == 0 && running {
            continue;
        }
        let ended = mine
            .iter()
            .rev()
            .find(|c| c.state == "CONTAINER_EXITED")
            .map(|c| c.id.clone());
        let listed = mine
            .iter()
            .map(|c| {
                let state = c.state.trim_start_matches("CONTAINER_").to_lowercase();
                format!("{} {state}", c.metadata.attempt)
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Restart {
            component: component.to_string(),
            restarts: newest.metadata.attempt,
            running,
            ended,
            last_lines: Vec::new(),
            listed,
            unread: None,
        });
    }
    Ok(out)
}

/// The control plane's restarted components in `control_plane`, each with
/// its ended instance's last log lines.
pub async fn of(docker: &Path, control_plane: &str) -> Result<Vec<Restart>> {
    let cmd = plan::crictl_ps(docker, control_plane);
    let out = command::output(&cmd).await?;
    anyhow::ensure!(
        out.status.success(),
        "`{}` failed ({}):\n{}",
        cmd.display(),
        out.status,
        command::tail(&out, 4)
    );
    let mut restarts = restarted(&String::from_utf8_lossy(&out.stdout))?;
    for r in &mut restarts {
        let Some(id) = &r.ended else {
            r.unread = Some(format!("no ended instance listed (attempts: {})", r.listed));
            continue;
        };
        let cmd = plan::crictl_logs(docker, control_plane, id, LAST_LINES);
        let logs = command::output(&cmd).await?;
        // The components log to stderr; crictl passes each stream on.
        r.last_lines = String::from_utf8_lossy(&logs.stdout)
            .lines()
            .chain(String::from_utf8_lossy(&logs.stderr).lines())
            .map(str::to_string)
            .collect();
        if r.last_lines.is_empty() {
            r.unread = Some(format!(
                "`{}` printed nothing ({}; attempts: {})",
                cmd.display(),
                logs.status,
                r.listed
            ));
        }
    }
    Ok(restarts)
}

/// The restarts in `control_plane` as one paragraph for an error: None
/// when no component was restarted; a read that failed says so.
pub async fn account(docker: &Path, control_plane: &str) -> Option<String> {
    match of(docker, control_plane).await {
        Ok(r) if r.is_empty() => None,
        Ok(r) => Some(describe(control_plane, &r)),
        Err(e) => Some(format!(
            "the control plane's restarts could not be read: {e:#}"
        )),
    }
}

/// One paragraph naming each restart, for an error's context.
pub fn describe(control_plane: &str, restarts: &[Restart]) -> String {
    let mut text = format!("restarted in {control_plane} (crictl ps -a):");
    for r in restarts {
        text.push_str(&format!(
            "\n  {}: restarted {} time(s), {}",
            r.component,
            r.restarts,
            if r.running {
                "running again"
            } else {
                "not running now"
            }
        ));
        if !r.last_lines.is_empty() {
            text.push_str("; the instance that ended logged last:");
            for l in &r.last_lines {
                text.push_str(&format!("\n      {l}"));
            }
        } else if let Some(why) = &r.unread {
            text.push_str(&format!("; no log of the instance that ended: {why}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, attempt: u32, state: &str, id: &str) -> serde_json::Value {
        serde_json::json!({
            "id": id,
            "metadata": {"name": name, "attempt": attempt},
            "state": state,
            "labels": {"io.kubernetes.pod.namespace": "kube-system"}
        })
    }

    #[test]
    fn only_components_restarted_or_down_are_named_with_their_ended_instance() {
        let json = serde_json::json!({"containers": [
            container("etcd", 0, "CONTAINER_RUNNING", "e0"),
            container("kube-apiserver", 0, "CONTAINER_RUNNING", "a0"),
            container("kube-scheduler", 0, "CONTAINER_EXITED", "s0"),
            container("kube-scheduler", 2, "CONTAINER_RUNNING", "s2"),
            container("kube-scheduler", 1, "CONTAINER_EXITED", "s1"),
            container("kube-controller-manager", 0, "CONTAINER_EXITED", "c0"),
            // Not a static pod's: a workload's container of the same name.
            serde_json::json!({"id": "x", "metadata": {"name": "kube-apiserver", "attempt": 5},
                "state": "CONTAINER_EXITED", "labels": {"io.kubernetes.pod.namespace": "default"}}),
        ]})
        .to_string();
        let r = restarted(&json).unwrap();
        assert_eq!(
            r,
            vec![
                Restart {
                    component: "kube-controller-manager".into(),
                    restarts: 0,
                    running: false,
                    ended: Some("c0".into()),
                    last_lines: vec![],
                    listed: "0 exited".into(),
                    unread: None,
                },
                Restart {
                    component: "kube-scheduler".into(),
                    restarts: 2,
                    running: true,
                    ended: Some("s1".into()),
                    last_lines: vec![],
                    listed: "0 exited, 1 exited, 2 running".into(),
                    unread: None,
                },
            ]
        );
        let mut r = r;
        r[1].last_lines = vec!["leaderelection lost".into()];
        r[0].unread =
            Some("`crictl logs` printed nothing (exit status: 1; attempts: 0 exited)".into());
        let text = describe("cp", &r);
        assert!(text.contains("kube-scheduler: restarted 2 time(s), running again"));
        assert!(text.contains("\n      leaderelection lost"));
        assert!(text.contains(
            "kube-controller-manager: restarted 0 time(s), not running now; no log of the instance that ended: `crictl logs` printed nothing (exit status: 1; attempts: 0 exited)"
        ));
    }

    #[test]
    fn a_quiet_control_plane_names_nothing_and_garbage_is_an_error() {
        let json = serde_json::json!({"containers": [
            container("etcd", 0, "CONTAINER_RUNNING", "e0"),
        ]})
        .to_string();
        assert!(restarted(&json).unwrap().is_empty());
        assert!(restarted("{}").unwrap().is_empty());
        assert!(restarted("not json").is_err());
    }
}
