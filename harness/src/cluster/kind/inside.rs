//! Metrics read from inside a kind cluster's control-plane node, where
//! kubeadm's etcd and kube-scheduler serve them on loopback only: through
//! `docker exec` (the commands: commands.rs `plan`).

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::cluster::kind::commands::{self, plan};

/// etcd's Prometheus text (http://127.0.0.1:2381 in the node).
/// `node_image` names the image in the error when it has no curl.
pub async fn etcd_metrics(docker: &Path, control_plane: &str, node_image: &str) -> Result<String> {
    let cmd = plan::etcd_metrics(docker, control_plane);
    let out = commands::output(&cmd).await?;
    if out.status.success() {
        return String::from_utf8(out.stdout).context("etcd metrics are not UTF-8");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(127) || err.contains("executable file not found") {
        bail!(
            "etcd metrics: the node image {} has no curl to reach etcd's metrics at http://127.0.0.1:2381 inside {} (`{}`: {})",
            node_image,
            control_plane,
            cmd.display(),
            err.trim()
        );
    }
    bail!(
        "etcd metrics: `{}` failed ({}):\n{}",
        cmd.display(),
        out.status,
        commands::tail(&out, 10)
    )
}

/// A control-plane component's Prometheus text (https://127.0.0.1:`port`
/// in the node, as the node's admin): kube-scheduler on 10259,
/// kube-controller-manager on 10257.
pub async fn component_metrics(
    docker: &Path,
    control_plane: &str,
    port: u16,
    component: &str,
) -> Result<String> {
    let cmd = plan::component_metrics(docker, control_plane, port);
    let out = commands::output(&cmd).await?;
    if !out.status.success() {
        bail!(
            "{component} metrics from inside {}: `{}` failed ({}):\n{}",
            control_plane,
            cmd.display(),
            out.status,
            commands::tail(&out, 10)
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("{component} metrics are not UTF-8"))
}
