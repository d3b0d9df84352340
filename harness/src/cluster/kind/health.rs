//! A kind cluster's health: each node container's state (`docker
//! inspect`), then the API server's `/readyz` through the cluster's
//! kubeconfig; the API server counts as running while the control-plane
//! container does.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cluster::client::{client_from_kubeconfig, client_get};
use crate::cluster::kind::commands::plan;
use crate::cluster::spec::ComponentHealth;
use crate::tools::command;

/// One row per node container, then kube-apiserver's; `docker` is the
/// engine's CLI, or why it could not be found (said on every node's row).
pub async fn of(
    docker: &Result<PathBuf>,
    nodes: &[String],
    control_plane: &str,
    kubeconfig: &Path,
) -> Vec<ComponentHealth> {
    let mut out = Vec::new();
    let mut cp_running = false;
    for n in nodes {
        let (running, pid, health) = match docker {
            Err(e) => (false, None, format!("{e:#}")),
            Ok(d) => match command::output(&plan::inspect(d, n)).await {
                Ok(o) if o.status.success() => {
                    let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
                    let mut parts = text.split_whitespace();
                    let status = parts.next().unwrap_or_default().to_string();
                    let pid = parts.next().and_then(|p| p.parse().ok()).filter(|p| *p > 0);
                    (status == "running", pid, format!("container {status}"))
                }
                Ok(o) => (false, None, command::tail(&o, 2).trim().to_string()),
                Err(e) => (false, None, format!("{e:#}")),
            },
        };
        if n == control_plane {
            cp_running = running;
        }
        out.push(ComponentHealth {
            component: n.clone(),
            pid,
            running,
            health,
            healthy: running,
        });
    }
    let check = match client_from_kubeconfig(kubeconfig).await {
        Ok(c) => client_get(&c, "/readyz").await,
        Err(e) => Err(e),
    };
    let (healthy, health) = match check {
        Ok(body) => (body.trim() == "ok", body.trim().chars().take(60).collect()),
        Err(e) => (false, format!("{e:#}").chars().take(200).collect()),
    };
    out.push(ComponentHealth {
        component: "kube-apiserver".into(),
        pid: None,
        running: cp_running,
        health,
        healthy,
    });
    out
}
