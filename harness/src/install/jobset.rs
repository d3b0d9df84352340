//! JobSet on a cluster whose JobSet controller runs as a local process:
//! the CRDs, the controller's RBAC and the webhook configurations, all read
//! at run time from the jobset module in the Go module cache and pointed at
//! the local webhook server by URL with the cluster CA as caBundle.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::cluster::local::{JOBSET_USER, WebhookEndpoint};
use crate::install::apply::{Kustomization, apply_all, json6902};
use crate::poll::Poll;
use crate::tools::modules::{module_dir, read_module_file};
use crate::tools::versions::JOBSET_VERSION;
use crate::yaml::documents as yaml_documents;

use crate::k8s::jobset::{CRD_NAME, GROUP, VERSION, api_resource};
/// kustomize's namePrefix in JobSet's default overlay; kept so object names
/// match a release install.
pub const NAME_PREFIX: &str = "jobset-";

const CRD_DIR: &str = "config/components/crd";
const RBAC_ROLE: &str = "config/components/rbac/role.yaml";
const WEBHOOK_DIR: &str = "config/components/webhook";

fn read_docs(dir: &Path, rel: &str) -> Result<Vec<Value>> {
    let text = read_module_file(dir, rel)?;
    yaml_documents(&text, &format!("{}/{rel}", dir.display()))
}

fn kustomization(dir: &Path, sub: &str) -> Result<Kustomization> {
    let rel = format!("{sub}/kustomization.yaml");
    let text = read_module_file(dir, &rel)?;
    serde_saphyr::from_str(&text).with_context(|| format!("parsing {}/{rel}", dir.display()))
}

/// The CRDs, with a conversion webhook pointed at `ep` when the CRD serves
/// more than one version (v0.12.0 serves only v1alpha2).
pub fn crds(dir: &Path, ep: &WebhookEndpoint) -> Result<Vec<Value>> {
    let k = kustomization(dir, CRD_DIR)?;
    let mut out = Vec::new();
    for r in &k.resources {
        for mut doc in read_docs(dir, &format!("{CRD_DIR}/{r}"))? {
            let served = doc["spec"]["versions"]
                .as_array()
                .map(|v| v.iter().filter(|v| v["served"] == true).count())
                .unwrap_or(0);
            if served > 1 {
                doc["spec"]["conversion"] = json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": {"url": format!("{}/convert", ep.base_url), "caBundle": b64(&ep.ca_pem)},
                    }
                });
            }
            // Typed decode: catches an upstream layout change early.
            let _: CustomResourceDefinition =
                serde_json::from_value(doc.clone()).with_context(|| {
                    format!(
                        "{}/{CRD_DIR}/{r} is not a CustomResourceDefinition",
                        dir.display()
                    )
                })?;
            out.push(doc);
        }
    }
    if out.is_empty() {
        bail!("no CRDs under {}/{CRD_DIR}", dir.display());
    }
    Ok(out)
}

/// The controller's ClusterRole, bound to the user its certificate names.
pub fn rbac(dir: &Path) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for mut doc in read_docs(dir, RBAC_ROLE)? {
        if doc["kind"] != "ClusterRole" {
            continue;
        }
        let name = format!(
            "{NAME_PREFIX}{}",
            doc["metadata"]["name"].as_str().unwrap_or("manager-role")
        );
        doc["metadata"]["name"] = json!(name);
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name.clone()},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": JOBSET_USER}],
        }));
        out.insert(out.len() - 1, doc);
    }
    if out.is_empty() {
        bail!("no ClusterRole in {}/{RBAC_ROLE}", dir.display());
    }
    Ok(out)
}

/// The webhook configurations with their kustomize patches applied, each
/// webhook's service reference replaced by a URL to `ep`.
pub fn webhooks(dir: &Path, ep: &WebhookEndpoint) -> Result<Vec<Value>> {
    let k = kustomization(dir, WEBHOOK_DIR)?;
    let mut objs = Vec::new();
    for r in &k.resources {
        for doc in read_docs(dir, &format!("{WEBHOOK_DIR}/{r}"))? {
            let kind = doc["kind"].as_str().unwrap_or_default();
            if kind.ends_with("WebhookConfiguration") {
                objs.push(doc);
            }
        }
    }
    for p in &k.patches {
        let ops: Vec<Value> = serde_saphyr::from_str(&read_module_file(
            dir,
            &format!("{WEBHOOK_DIR}/{}", p.path),
        )?)
        .with_context(|| format!("parsing {}/{WEBHOOK_DIR}/{}", dir.display(), p.path))?;
        for obj in objs.iter_mut() {
            if p.target.as_ref().is_none_or(|t| t.matches(obj)) {
                json6902(obj, &ops)
                    .with_context(|| format!("applying {WEBHOOK_DIR}/{}", p.path))?;
            }
        }
    }
    let ca = b64(&ep.ca_pem);
    for obj in objs.iter_mut() {
        let name = format!(
            "{NAME_PREFIX}{}",
            obj["metadata"]["name"].as_str().unwrap_or_default()
        );
        obj["metadata"] = json!({"name": name});
        for hook in obj["webhooks"].as_array_mut().into_iter().flatten() {
            let path = hook["clientConfig"]["service"]["path"]
                .as_str()
                .with_context(|| format!("webhook {} has no service path", hook["name"]))?
                .to_string();
            hook["clientConfig"] = json!({"url": format!("{}{path}", ep.base_url), "caBundle": ca});
        }
    }
    if objs.is_empty() {
        bail!(
            "no webhook configurations under {}/{WEBHOOK_DIR}",
            dir.display()
        );
    }
    Ok(objs)
}

fn b64(s: &str) -> String {
    // k8s-openapi's ByteString serialises as standard base64.
    match serde_json::to_value(k8s_openapi::ByteString(s.as_bytes().to_vec())) {
        Ok(Value::String(v)) => v,
        _ => unreachable!("ByteString serialises to a JSON string"),
    }
}

/// Everything JobSet needs on a cluster whose controller serves at `ep`.
pub fn manifests(ep: &WebhookEndpoint) -> Result<Vec<Value>> {
    let dir = module_dir("sigs.k8s.io/jobset", &format!("v{JOBSET_VERSION}"))?;
    let mut all = crds(&dir, ep)?;
    all.extend(rbac(&dir)?);
    all.extend(webhooks(&dir, ep)?);
    Ok(all)
}

pub async fn install(client: &kube::Client, ep: &WebhookEndpoint) -> Result<()> {
    let objs = manifests(ep)?;
    apply_all(client, &objs).await.context("installing JobSet")
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
            let established = match crds.get(CRD_NAME).await {
                Ok(crd) => crd
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True"),
                Err(e) => return Ok(Err(format!("CRD {CRD_NAME}: {e}"))),
            };
            if !established {
                return Ok(Err(format!("CRD {CRD_NAME} not Established")));
            }
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
pub mod release {
    use std::path::Path;
    use std::time::Duration;

    use anyhow::Result;

    use crate::install::release;
    use crate::tools::versions::jobset_manifest_url;

    pub const NAMESPACE: &str = "jobset-system";
    pub const DEPLOYMENTS: &[&str] = &["jobset-controller-manager"];

    pub async fn install(kubectl: &Path, kubeconfig: &Path) -> Result<()> {
        release::apply_url(kubectl, kubeconfig, &jobset_manifest_url()).await
    }

    /// The controller Available, then the CRD Established and a dry-run
    /// JobSet through both webhooks (as for a local controller).
    pub async fn wait_ready(
        client: &kube::Client,
        timeout: Duration,
        mut alive: impl FnMut() -> Result<()> + Send,
    ) -> Result<()> {
        release::wait_ready(
            client,
            "JobSet",
            NAMESPACE,
            DEPLOYMENTS,
            None,
            timeout,
            &mut alive,
        )
        .await?;
        crate::install::jobset::wait_ready(client, timeout, alive).await
    }
}
