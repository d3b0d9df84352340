//! When HPCC's processes end. The driver decides when a process exits
//! (the manager after lingering, the workers at shutdown, a compiler after
//! lingering): its main containers exit then, and the postrun sidecar
//! notices a little later, which ends the pod. How that shows on the
//! nodes (a fake kubelet's status PATCH, or a real container's exit) is
//! driver::exits'.

use std::time::Duration;

use anyhow::Result;

use crate::workload::thor::driver::env::{COMPONENT_LABEL, JOB_LABEL, ThorEnv};

/// The label selector of an instance's pods of one role.
pub fn role_selector(job: &str, component: &str) -> String {
    format!("{JOB_LABEL}={job},{COMPONENT_LABEL}={component}")
}

/// The main processes of the pods matching `sel` exit now (`ok`: with
/// code 0, else 1); on kwok's nodes nothing shows until `end_pods`.
pub async fn exit_processes(env: &ThorEnv, sel: &str, ok: bool) -> Result<()> {
    env.exits.exit_mains(&env.namespace, sel, ok).await
}

/// The pods matching `sel` end now (their postrun sidecars notice).
pub async fn end_pods(env: &ThorEnv, sel: &str, ok: bool) -> Result<()> {
    env.exits.end(&env.namespace, sel, ok).await
}

/// Pods whose only process exits, ending them (compile pods: no sidecar).
pub async fn exit_and_end(env: &ThorEnv, sel: &str, ok: bool) -> Result<()> {
    exit_processes(env, sel, ok).await?;
    end_pods(env, sel, ok).await
}

/// Main processes exit now; their pods end after `delay`, in the
/// background (worker pods end when their sidecars notice the shutdown
/// while the manager goes on); `run` waits for these before it returns.
pub async fn finish_later(env: &ThorEnv, sel: String, delay: Duration) -> Result<()> {
    exit_processes(env, &sel, true).await?;
    let exits = env.exits.clone();
    let ns = env.namespace.clone();
    let handle = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        exits.end(&ns, &sel, true).await
    });
    if let Ok(mut b) = env.background.lock() {
        b.push(handle);
    }
    Ok(())
}
