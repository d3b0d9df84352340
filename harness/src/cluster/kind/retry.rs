//! A `kind create` that ran out of time is made once more. On the 2-core
//! machine, beside other suites' control planes, kubeadm's doubled waits
//! (`patches::KUBEADM_WAITS`) were still not enough once: in the CI of
//! 06f4041 the 1.36 cluster's API server accepted no ClusterRoleBinding for
//! kubeadm's whole 2 min `kubernetesAPICall` wait (connection refused, then
//! 10 s timeouts) although no control-plane container had restarted, and
//! the 27 trials that share that cluster failed with it. A slow start is
//! not what those trials test, so its nodes are deleted and the cluster is
//! made again, its turn taken anew (`turns`); what failed is printed and
//! kept in `state.json` (`failed_creates`), never hidden. A create that
//! fails for any other reason (a bad profile, a missing image) fails at
//! once: making it again would fail the same way.

use std::path::Path;

use anyhow::{Context, Error, Result};

use crate::cluster::kind::commands::{KindTools, plan};
use crate::cluster::kind::restarts;
use crate::cluster::kind::turns;
use crate::tools::command::{self, Cmd};

/// How many times a cluster is made at most.
pub const CREATES: u32 = 2;

/// What kubeadm and kind say when a wait of theirs ran out (kubeadm's
/// `wait.PollUntilContextTimeout` and its health checks, client-go's rate
/// limiter at the end of a context, kind's `--wait`), lowercase.
const OUT_OF_TIME: [&str; 5] = [
    "deadline exceeded",
    "exceed context deadline",
    "timed out waiting",
    "is not healthy after",
    "deadline has elapsed",
];

/// Whether `e` (the whole chain) says a wait ran out of time.
pub fn ran_out_of_time(e: &Error) -> bool {
    let text = format!("{e:#}").to_lowercase();
    OUT_OF_TIME.iter().any(|w| text.contains(w))
}

/// Longest part of the failure kept in `state.json`.
const KEPT: usize = 400;

/// What is said of failed try `made`: the error's last line (kubeadm's own
/// message, the lines before it being its request log).
pub fn failed_create(made: u32, e: &Error) -> String {
    let text = format!("{e:#}");
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    let last: String = last.chars().take(KEPT).collect();
    format!(
        "kind create try {made} of {CREATES} ran out of time ({last}); its nodes were deleted and the cluster is made once more"
    )
}

/// Run `create` (kind's, for cluster `kind_cluster`), a turn at a time
/// (`turns`), at most [`CREATES`] times while it runs out of time. Returns
/// what was said of each failed try before the one that made the cluster;
/// the last failure is the error, with the control plane's restarts.
pub async fn make(
    tools: &KindTools,
    create: &Cmd,
    kind_cluster: &str,
    kubeconfig: &Path,
    control_plane: &str,
    audit_log: &Path,
) -> Result<Vec<String>> {
    let mut failed = Vec::new();
    loop {
        let turn = turns::take_on_this_machine(kind_cluster).await?;
        let outcome = command::run(create).await;
        drop(turn);
        let Err(e) = outcome else {
            return Ok(failed);
        };
        // kind keeps the nodes of a failed create (--retain) so that
        // their control plane can be read before they are deleted.
        let account = restarts::account(&tools.docker, control_plane)
            .await
            .unwrap_or_else(|| "no control-plane component was restarted (crictl ps -a)".into());
        let e = e.context(format!("kind could not create the cluster; {account}"));
        let made = failed.len() as u32 + 1;
        if made >= CREATES || !ran_out_of_time(&e) {
            return Err(e);
        }
        let said = failed_create(made, &e);
        eprintln!("kind cluster {kind_cluster}: {said}");
        failed.push(said);
        command::run(&plan::delete(&tools.kind, kind_cluster, kubeconfig)).await?;
        // The next control plane's audit log starts empty (the file stays:
        // the API server opens it for appending, its mode kept).
        std::fs::File::create(audit_log)
            .with_context(|| format!("emptying {}", audit_log.display()))?;
    }
}

/// The create's outcome after `failed` failed tries.
pub fn created(failed: usize) -> String {
    match failed {
        0 => "created".into(),
        n => format!("created at try {} of {CREATES}", n + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;

    #[test]
    fn a_wait_that_ran_out_is_told_from_other_failures() {
        let kubeadm = anyhow!(
            "I1128 08:20:22 round_trippers.go:632] \"Response\" verb=\"POST\" milliseconds=4746\nerror: error execution phase wait-control-plane: could not bootstrap the admin user in file admin.conf: unable to create ClusterRoleBinding: Post \"https://172.17.0.7:6443/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?timeout=10s\": context deadline exceeded"
        )
        .context("kind could not create the cluster; no control-plane component was restarted");
        assert!(ran_out_of_time(&kubeadm));
        let said = failed_create(1, &kubeadm);
        assert!(said.starts_with("kind create try 1 of 2 ran out of time (error: error execution phase wait-control-plane"), "{said}");
        assert!(!said.contains("round_trippers"), "{said}");
        for other in [
            "error: error unmarshaling JSON: time: invalid duration \"forever\"",
            "ERROR: failed to create cluster: could not find a log line that matches \"Reached target .*Multi-User System.*\"",
            "ERROR: failed to create cluster: node(s) already exist for a cluster with the name \"harness-a\"",
        ] {
            assert!(!ran_out_of_time(&anyhow!("{other}")), "{other}");
        }
        assert!(ran_out_of_time(&anyhow!(
            "[control-plane-check] kube-apiserver is not healthy after 8m0s"
        )));
        // kubeadm 1.37.1 with a 1 s control-plane health check (a real
        // kind create, 2026-11-28).
        assert!(ran_out_of_time(&anyhow!(
            "error: error execution phase wait-control-plane: failed while waiting for the control plane to start: kube-apiserver check failed at https://172.17.0.3:6443/livez: client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"
        )));
        assert!(!ran_out_of_time(&anyhow!(
            "kube-apiserver check failed at https://172.17.0.2:6443/livez: forbidden: User \"kubernetes-admin\" cannot get path \"/livez\""
        )));
    }

    #[test]
    fn what_is_kept_of_a_failure_is_bounded() {
        let long = anyhow!("{} deadline exceeded", "x".repeat(5000));
        assert!(failed_create(1, &long).len() < KEPT + 200);
    }
}
