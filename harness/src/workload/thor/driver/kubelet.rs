//! Processes ending, reported as the kubelet would: kwok keeps HPCC's pods
//! Running, and the driver decides when a process exits (the manager after
//! lingering, the workers at shutdown, a compiler after lingering). The
//! report is a pod status PATCH to phase Succeeded made with the fake
//! kubelets' own identity (kwok's), so the cluster's totals count it as
//! kubelet traffic, as a real node's would be.

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::workload::thor::driver::env::{COMPONENT_LABEL, JOB_LABEL, ThorEnv};

/// The label selector of an instance's pods of one role.
pub fn role_selector(job: &str, component: &str) -> String {
    format!("{JOB_LABEL}={job},{COMPONENT_LABEL}={component}")
}

/// Pods listed per page: an instance of 1024 workers is not held in
/// memory whole, however many instances end at once.
const PAGE: u32 = 200;

/// Report every running pod matching `sel` Succeeded, as `kubelet` (a
/// client with the fake kubelets' identity). Pods already gone or
/// terminating are left alone. How many were ended.
pub async fn end_pods(kubelet: kube::Client, ns: &str, sel: &str) -> Result<u32> {
    end_pods_in(kubelet, ns, sel, "Succeeded").await
}

/// Report every running pod matching `sel` ended in `phase` (Succeeded or
/// Failed).
async fn end_pods_in(kubelet: kube::Client, ns: &str, sel: &str, phase: &str) -> Result<u32> {
    let pods: Api<Pod> = Api::namespaced(kubelet, ns);
    let mut n = 0;
    let mut next: Option<String> = None;
    loop {
        let mut lp = ListParams::default()
            .labels(sel)
            .fields("status.phase=Running")
            .limit(PAGE);
        if let Some(token) = &next {
            lp = lp.continue_token(token);
        }
        let page = pods
            .list(&lp)
            .await
            .with_context(|| format!("listing pods {sel}"))?;
        next = page.metadata.continue_.filter(|t| !t.is_empty());
        for p in page.items {
            if p.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let name = p.metadata.name.unwrap_or_default();
            let patch = json!({"status": {"phase": phase}});
            match pods
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => n += 1,
                // Deleted meanwhile (the worker Job went first): nothing to end.
                Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e).with_context(|| format!("ending pod {name}")),
            }
        }
        if next.is_none() {
            return Ok(n);
        }
    }
}

/// End the pods matching `sel` now.
pub async fn succeed(env: &ThorEnv, sel: &str) -> Result<u32> {
    end_pods(env.kubelet.clone(), &env.namespace, sel).await
}

/// Report the pods matching `sel` Failed now: their process exited with
/// an error.
pub async fn fail(env: &ThorEnv, sel: &str) -> Result<u32> {
    end_pods_in(env.kubelet.clone(), &env.namespace, sel, "Failed").await
}

/// End them after `delay`, in the background (worker pods end when their
/// sidecars notice the shutdown while the manager goes on); `run` waits
/// for these before it returns.
pub fn finish_later(env: &ThorEnv, sel: String, delay: Duration) {
    let (client, ns) = (env.kubelet.clone(), env.namespace.clone());
    let handle = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        end_pods(client, &ns, &sel).await.map(|_| ())
    });
    if let Ok(mut b) = env.background.lock() {
        b.push(handle);
    }
}
