//! Kueue (`--kueue`, `KUEUE_VERSION` in tools/versions.rs).
//!
//! Local provider: the controller runs as a process (cluster/local/kueue.rs
//! writes its Configuration); this installs what its release manifest
//! would, read from the sigs.k8s.io/kueue module's config directories —
//! the `kueue-system` namespace, the CRDs (conversion webhooks by URL),
//! the manager ClusterRole and the visibility server's reader RoleBinding
//! bound to the controller's user, and every webhook configuration with
//! the namespace selector the module's kustomization sets. The visibility
//! APIService is not registered: the API server could reach a loopback
//! process only through a Service, whose endpoints may not be loopback.
//!
//! kind: the module's kustomization with the controller built here
//! (`release`), its visibility server's emptyDir mounted where the built
//! binary looks (`visibility_where_built`).

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use serde_json::{Value, json};

use crate::cluster::controllers::{KUEUE_NAMESPACE, KUEUE_USER, WebhookEndpoint};
use crate::install::apply::apply_all;
use crate::install::controller::{ModuleConfig, crd_names, wait_established, wait_out_create_hold};
use crate::install::release::dry_run_create;
use crate::poll::Poll;
use crate::tools::modules::{module_dir, read_module_file};
use crate::tools::versions::KUEUE_VERSION;

/// The CRD whose storage version names the API version to probe with.
pub const WORKLOAD_CRD: &str = "workloads.kueue.x-k8s.io";
/// The visibility server's reader RoleBinding.
const VISIBILITY_BINDING: &str = "config/components/visibility/role_binding.yaml";

/// Where Kueue's manifests live in its module.
pub fn module_config() -> Result<ModuleConfig> {
    Ok(ModuleConfig {
        dir: module_dir("sigs.k8s.io/kueue", &format!("v{KUEUE_VERSION}"))?,
        name_prefix: "kueue-",
        crd_dir: "config/components/crd",
        rbac_roles: &[
            "config/components/rbac/role.yaml",
            "config/components/rbac/manager_secrets_role.yaml",
        ],
        namespace: KUEUE_NAMESPACE,
        webhook_dir: "config/components/webhook",
        user: KUEUE_USER,
    })
}

/// The visibility server's RoleBinding(s), with the controller's user as
/// subject instead of its ServiceAccount.
fn visibility_bindings(m: &ModuleConfig) -> Result<Vec<Value>> {
    let text = read_module_file(&m.dir, VISIBILITY_BINDING)?;
    let docs = crate::yaml::documents(&text, &format!("{}/{VISIBILITY_BINDING}", m.dir.display()))?;
    let mut out = Vec::new();
    for mut doc in docs.into_iter().filter(|d| d["kind"] == "RoleBinding") {
        let name = format!(
            "{}{}",
            m.name_prefix,
            doc["metadata"]["name"].as_str().unwrap_or_default()
        );
        doc["metadata"]["name"] = json!(name);
        doc["subjects"] =
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": KUEUE_USER}]);
        out.push(doc);
    }
    Ok(out)
}

/// Everything Kueue needs on a cluster whose controller serves at `ep`.
pub fn manifests(ep: &WebhookEndpoint) -> Result<Vec<Value>> {
    let m = module_config()?;
    let mut all = vec![json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}
    })];
    all.extend(m.manifests(ep)?);
    all.extend(visibility_bindings(&m)?);
    Ok(all)
}

/// Apply the manifests, then wait until every CRD among them is
/// Established: Kueue's manager exits at start when one is not served.
pub async fn install(
    client: &kube::Client,
    ep: &WebhookEndpoint,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let objs = manifests(ep)?;
    apply_all(client, &objs).await.context("installing Kueue")?;
    wait_established(client, &crd_names(&objs), "Kueue", timeout, alive).await
}

/// A minimal Workload in `version` (the CRD's storage version, read from
/// the server: Kueue releases move it), for a dry-run create through
/// Kueue's mutating and validating webhooks.
pub fn probe_workload(version: &str) -> Value {
    json!({
        "apiVersion": format!("kueue.x-k8s.io/{version}"),
        "kind": "Workload",
        "metadata": {"name": "harness-webhook-probe", "namespace": "default"},
        "spec": {"podSets": [{
            "name": "main",
            "count": 1,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.invalid/probe:none"}]
            }}
        }]}
    })
}

async fn storage_version(client: &kube::Client, crd: &str) -> Result<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd_obj = crds
        .get(crd)
        .await
        .with_context(|| format!("reading CRD {crd}"))?;
    // A create inside the apiserver's hold after Established waits 2 s.
    wait_out_create_hold(&crd_obj).await;
    crd_obj
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
        .with_context(|| format!("CRD {crd} has no storage version"))
}

/// Ready: the Workload CRD Established and a dry-run Workload accepted by
/// the webhooks (the definition of a serving Kueue).
pub async fn wait_ready(
    client: &kube::Client,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    Poll::new("Kueue ready", timeout)
        .every(Duration::from_millis(500))
        .alive(alive)
        .until_state(|| async {
            let version = match storage_version(client, WORKLOAD_CRD).await {
                Ok(v) => v,
                Err(e) => return Ok(Err(format!("{e:#}"))),
            };
            Ok(dry_run_create(client, &probe_workload(&version))
                .await
                .map_err(|e| format!("{e:#}")))
        })
        .await
}

/// Kueue on a kind cluster: the controller runs as a pod from the pinned
/// release manifest (CRDs, RBAC, webhooks with its own certificates).
pub const RELEASE: crate::install::release::Release = crate::install::release::Release {
    component: "Kueue",
    namespace: KUEUE_NAMESPACE,
    deployments: &["kueue-controller-manager"],
    url: crate::tools::versions::kueue_manifest_url,
    controller: crate::tools::Component::Kueue,
    for_built: |objects| match visibility_where_built(objects) {
        0 => anyhow::bail!(
            "it mounts nothing at /visibility, where upstream's visibility server keeps its certificates: the built binary's would have no writable directory"
        ),
        _ => Ok(()),
    },
};

/// Upstream's kustomization mounts the visibility server's emptyDir at
/// "/visibility", the fixed `certDir` of pkg/visibility/server.go
/// (config/default/manager_visibility_patch.yaml: "this is hard coded");
/// the binary built here looks under "/etc/" + KUEUE_VISIBILITY_CERT_DIR
/// (moved by `-X` for the local provider's /etc overlay,
/// tools/component.rs). On kind its root filesystem is read-only
/// (`readOnlyRootFilesystem`), so the server failed at start ("mkdir
/// /etc/kueue: read-only file system") and the pod crash-looped. Moves
/// that mount; how many moved.
pub fn visibility_where_built(objects: &mut [Value]) -> usize {
    let to = format!(
        "/etc/{}",
        crate::tools::component::KUEUE_VISIBILITY_CERT_DIR
    );
    let mut moved = 0;
    for o in objects.iter_mut().filter(|o| o["kind"] == "Deployment") {
        let Some(containers) = o["spec"]["template"]["spec"]["containers"].as_array_mut() else {
            continue;
        };
        for m in containers
            .iter_mut()
            .filter_map(|c| c["volumeMounts"].as_array_mut())
            .flatten()
            .filter(|m| m["mountPath"] == "/visibility")
        {
            m["mountPath"] = json!(to);
            moved += 1;
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_a_namespaced_workload_with_one_pod_set() {
        let w = probe_workload("v1beta2");
        assert_eq!(w["apiVersion"], "kueue.x-k8s.io/v1beta2");
        assert_eq!(w["kind"], "Workload");
        assert_eq!(w["metadata"]["namespace"], "default");
        assert_eq!(w["spec"]["podSets"][0]["count"], 1);
    }

    #[test]
    fn the_visibility_volume_is_mounted_where_the_built_binary_looks() {
        let mut objects = vec![serde_json::json!({
            "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": [{
                "name": "manager",
                "volumeMounts": [
                    {"mountPath": "/tmp/k8s-webhook-server/serving-certs", "name": "cert"},
                    {"mountPath": "/visibility", "name": "visibility"},
                ],
            }]}}},
        })];
        assert_eq!(
            crate::install::kueue::visibility_where_built(&mut objects),
            1
        );
        let mounts = &objects[0]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"];
        assert_eq!(mounts[1]["mountPath"], "/etc/kueue/visibility");
        assert_eq!(
            mounts[0]["mountPath"],
            "/tmp/k8s-webhook-server/serving-certs"
        );
    }
}
