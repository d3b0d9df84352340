//! Metrics read from inside a kind cluster's control-plane node, where
//! kubeadm's etcd and kube-scheduler serve them on loopback only: through
//! `docker exec` (the commands: commands.rs `plan`).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cluster::kind::commands::plan;
use crate::cluster::kind::restarts;
use crate::poll::Poll;
use crate::tools::command;

/// How long a component that refuses connections is asked again: the
/// kubelet restarts an exited container after 10 s, then 20 s (k8s.io/
/// kubernetes pkg/kubelet/kubelet.go `initialCrashLoopBackOff`, doubled per
/// restart), and the component then starts.
const RESTART_WAIT: Duration = Duration::from_secs(45);
/// curl's exit status when the connection is refused.
const CURL_REFUSED: i32 = 7;
/// curl's exit status for an HTTP error: a scheduler just restarted
/// answered 403 under load (CI of 81ce7a7) while it could not yet ask the
/// API server to authorize the scrape (delegated authorization).
const CURL_HTTP_ERROR: i32 = 22;

/// etcd's Prometheus text (http://127.0.0.1:2381 in the node).
/// `node_image` names the image in the error when it has no curl.
pub async fn etcd_metrics(docker: &Path, control_plane: &str, node_image: &str) -> Result<String> {
    let cmd = plan::etcd_metrics(docker, control_plane);
    let out = command::output(&cmd).await?;
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
        "etcd metrics: `{}` failed ({}):\n{}{}",
        cmd.display(),
        out.status,
        command::tail(&out, 10),
        restarts_seen(docker, control_plane).await
    )
}

/// The control plane's restarts as the tail of an error (or that there
/// were none): a component that does not answer may be one the node's
/// kubelet is restarting.
async fn restarts_seen(docker: &Path, control_plane: &str) -> String {
    match restarts::account(docker, control_plane).await {
        Some(told) => format!("\n{told}"),
        None => format!("\n(no control-plane component was restarted in {control_plane})"),
    }
}

/// A control-plane component's Prometheus text (https://127.0.0.1:`port`
/// in the node, as the node's admin): kube-scheduler on 10259,
/// kube-controller-manager on 10257. A refused connection (curl's exit 7:
/// nothing listens, the node's kubelet is restarting the component) or an
/// HTTP error (exit 22: one just started refusing the scrape) is asked
/// again for up to [`RESTART_WAIT`]; any other failure, or one that
/// lasts, names the control plane's restarts.
pub async fn component_metrics(
    docker: &Path,
    control_plane: &str,
    port: u16,
    component: &str,
) -> Result<String> {
    let cmd = plan::component_metrics(docker, control_plane, port);
    let read = Poll::new(
        format!("{component} answering on 127.0.0.1:{port} inside {control_plane}"),
        RESTART_WAIT,
    )
    .every(Duration::from_secs(2))
    .until_state(|| async {
        let out = command::output(&cmd).await?;
        if out.status.success() {
            return Ok(Ok(out.stdout));
        }
        let failed = format!(
            "`{}` failed ({}):\n{}",
            cmd.display(),
            out.status,
            command::tail(&out, 10)
        );
        if matches!(out.status.code(), Some(CURL_REFUSED | CURL_HTTP_ERROR)) {
            return Ok(Err(failed));
        }
        bail!(failed)
    })
    .await;
    match read {
        Ok(stdout) => {
            String::from_utf8(stdout).with_context(|| format!("{component} metrics are not UTF-8"))
        }
        Err(e) => bail!(
            "{component} metrics from inside {control_plane}: {e:#}{}",
            restarts_seen(docker, control_plane).await
        ),
    }
}
