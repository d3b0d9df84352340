//! JobSet on a cluster whose JobSet controller runs as a local process:
//! the CRDs, the controller's RBAC and the webhook configurations, all read
//! at run time from the jobset module in the Go module cache and pointed at
//! the local webhook server by URL with the cluster CA as caBundle.

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::cluster::controllers::{JOBSET_USER, WebhookEndpoint};
use crate::install::apply::apply_all;
use crate::install::controller::{
    ModuleConfig, crd_names, established, wait_established, wait_out_create_hold,
};
use crate::poll::Poll;
use crate::tools::modules::module_dir;
use crate::tools::versions::JOBSET_VERSION;

use crate::k8s::jobset::{CRD_NAME, GROUP, VERSION, api_resource};

/// Where JobSet's manifests live in its module.
pub fn module_config() -> Result<ModuleConfig> {
    Ok(ModuleConfig {
        dir: module_dir("sigs.k8s.io/jobset", &format!("v{JOBSET_VERSION}"))?,
        name_prefix: "jobset-",
        crd_dir: "config/components/crd",
        rbac_roles: &["config/components/rbac/role.yaml"],
        namespace: "jobset-system",
        webhook_dir: "config/components/webhook",
        user: JOBSET_USER,
    })
}

/// Everything JobSet needs on a cluster whose controller serves at `ep`.
pub fn manifests(ep: &WebhookEndpoint) -> Result<Vec<Value>> {
    module_config()?.manifests(ep)
}

/// Apply the manifests, then wait until the CRDs are Established, so the
/// controller, started next, finds its kinds served and its RBAC bound.
/// Started before them it came up anyway, but its informers' first lists
/// were refused ("jobsets… forbidden", no such kind) and backed off: `up`
/// waited 2.4–2.7 s for the webhooks after everything else was ready.
pub async fn install(
    client: &kube::Client,
    ep: &WebhookEndpoint,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let objs = manifests(ep)?;
    apply_all(client, &objs)
        .await
        .context("installing JobSet")?;
    wait_established(client, &crd_names(&objs), "JobSet", timeout, alive).await
}

/// A minimal JobSet used to probe the webhooks with a server-side dry run.
pub fn probe_jobset(name: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicatedJobs": [{
            "name": "probe",
            "replicas": 1,
            "template": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.invalid/probe:none"}]
            }}}}
        }]}
    })
}

/// Wait until the CRD is Established and the webhooks answer (a dry-run
/// create passes through the mutating and validating webhooks).
pub async fn wait_ready(
    client: &kube::Client,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let jobsets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &api_resource());
    let probe: DynamicObject = serde_json::from_value(probe_jobset("harness-webhook-probe"))?;
    Poll::new("JobSet ready", timeout)
        .every(Duration::from_millis(200))
        .alive(alive)
        .until_state(|| async {
            let crd = match crds.get(CRD_NAME).await {
                Ok(crd) => crd,
                Err(e) => return Ok(Err(format!("CRD {CRD_NAME}: {e}"))),
            };
            if !established(&crd) {
                return Ok(Err(format!("CRD {CRD_NAME} not Established")));
            }
            wait_out_create_hold(&crd).await;
            let pp = PostParams {
                dry_run: true,
                ..Default::default()
            };
            Ok(match jobsets.create(&pp, &probe).await {
                Ok(_) => Ok(()),
                Err(e) => Err(format!("dry-run JobSet create: {e}")),
            })
        })
        .await
}

/// JobSet on a kind cluster: the controller runs as a pod from the pinned
/// release manifest (CRDs, RBAC, webhooks with its own certificates).
pub const RELEASE: crate::install::release::Release = crate::install::release::Release {
    component: "JobSet",
    namespace: "jobset-system",
    deployments: &["jobset-controller-manager"],
    url: crate::tools::versions::jobset_manifest_url,
    controller: crate::tools::Component::Jobset,
    // Upstream's objects as they are.
    for_built: |_| Ok(()),
};
