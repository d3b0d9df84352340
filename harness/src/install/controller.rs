//! A controller that runs as a local process, installed from its Go
//! module's own config directories (read at run time from the module
//! cache): its CRDs, its manager ClusterRole bound to the user its client
//! certificate names, and its webhook configurations with each service
//! reference replaced by a URL to the local webhook server and the cluster
//! CA as caBundle. JobSet and Kueue are both installed this way.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use serde_json::{Value, json};

use crate::cluster::controllers::WebhookEndpoint;
use crate::install::apply::{Kustomization, json6902, merge_by_name, replace_fields};
use crate::poll::Poll;
use crate::tools::modules::read_module_file;
use crate::yaml::documents as yaml_documents;

/// Where one controller's manifests live in its module.
#[derive(Debug, Clone)]
pub struct ModuleConfig {
    /// The module's source tree in the module cache.
    pub dir: PathBuf,
    /// kustomize's namePrefix in the module's default overlay; kept so
    /// object names match a release install ("jobset-", "kueue-").
    pub name_prefix: &'static str,
    pub crd_dir: &'static str,
    /// The files holding the manager's ClusterRole and Roles (a Role in
    /// the kustomize placeholder namespace `system` goes to `namespace`).
    pub rbac_roles: &'static [&'static str],
    /// The namespace the module's default overlay deploys to.
    pub namespace: &'static str,
    pub webhook_dir: &'static str,
    /// The user the controller's client certificate names.
    pub user: &'static str,
}

impl ModuleConfig {
    fn docs(&self, rel: &str) -> Result<Vec<Value>> {
        let text = read_module_file(&self.dir, rel)?;
        yaml_documents(&text, &format!("{}/{rel}", self.dir.display()))
    }

    fn kustomization(&self, sub: &str) -> Result<Kustomization> {
        let rel = format!("{sub}/kustomization.yaml");
        let text = read_module_file(&self.dir, &rel)?;
        serde_saphyr::from_str(&text)
            .with_context(|| format!("parsing {}/{rel}", self.dir.display()))
    }

    /// The CRDs; those the kustomization's patches give a conversion
    /// webhook (`webhook_in_<plural>.yaml`, with a Service) get one
    /// pointed at `ep` instead. Only those: the controller converts only
    /// their kinds (Kueue: 5 of its 11 CRDs serve two versions with a
    /// converter).
    pub fn crds(&self, ep: &WebhookEndpoint) -> Result<Vec<Value>> {
        let k = self.kustomization(self.crd_dir)?;
        let mut converted = Vec::new();
        for p in &k.patches {
            let Some(path) = &p.path else { continue };
            for doc in self.docs(&format!("{}/{path}", self.crd_dir))? {
                if doc["spec"]["conversion"]["strategy"] == "Webhook"
                    && let Some(name) = doc["metadata"]["name"].as_str()
                {
                    converted.push(name.to_string());
                }
            }
        }
        let mut out = Vec::new();
        for r in &k.resources {
            let rel = format!("{}/{r}", self.crd_dir);
            for mut doc in self.docs(&rel)? {
                let name = doc["metadata"]["name"].as_str().unwrap_or_default();
                if converted.iter().any(|c| c == name) {
                    doc["spec"]["conversion"] = json!({
                        "strategy": "Webhook",
                        "webhook": {
                            "conversionReviewVersions": ["v1"],
                            "clientConfig": {"url": format!("{}/convert", ep.base_url), "caBundle": b64(&ep.ca_pem)},
                        }
                    });
                }
                // Typed decode: catches an upstream layout change early.
                let _: CustomResourceDefinition = serde_json::from_value(doc.clone())
                    .with_context(|| {
                        format!(
                            "{}/{rel} is not a CustomResourceDefinition",
                            self.dir.display()
                        )
                    })?;
                out.push(doc);
            }
        }
        if out.is_empty() {
            bail!("no CRDs under {}/{}", self.dir.display(), self.crd_dir);
        }
        Ok(out)
    }

    /// The manager's ClusterRoles and Roles, each bound to the
    /// controller's user.
    pub fn rbac(&self) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        for file in self.rbac_roles {
            for mut doc in self.docs(file)? {
                let (role, binding) = match doc["kind"].as_str() {
                    Some("ClusterRole") => ("ClusterRole", "ClusterRoleBinding"),
                    Some("Role") => ("Role", "RoleBinding"),
                    _ => continue,
                };
                let name = format!(
                    "{}{}",
                    self.name_prefix,
                    doc["metadata"]["name"].as_str().unwrap_or("manager-role")
                );
                doc["metadata"]["name"] = json!(name);
                let mut meta = json!({"name": name.clone()});
                if role == "Role" {
                    let ns = match doc["metadata"]["namespace"].as_str() {
                        None | Some("system") => self.namespace.to_string(),
                        Some(ns) => ns.to_string(),
                    };
                    doc["metadata"]["namespace"] = json!(ns);
                    meta["namespace"] = json!(ns);
                }
                out.push(doc);
                out.push(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": binding,
                    "metadata": meta,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": self.user}],
                }));
            }
        }
        if !out.iter().any(|o| o["kind"] == "ClusterRole") {
            bail!(
                "no ClusterRole in {}/{:?}",
                self.dir.display(),
                self.rbac_roles
            );
        }
        Ok(out)
    }

    /// The webhook configurations with their kustomization's patches
    /// (JSON6902 files, inline strategic-merge patches) and replacements
    /// applied, each webhook's service reference replaced by a URL to `ep`.
    pub fn webhooks(&self, ep: &WebhookEndpoint) -> Result<Vec<Value>> {
        let wd = self.webhook_dir;
        let k = self.kustomization(wd)?;
        let mut objs = Vec::new();
        for r in &k.resources {
            for doc in self.docs(&format!("{wd}/{r}"))? {
                let kind = doc["kind"].as_str().unwrap_or_default();
                if kind.ends_with("WebhookConfiguration") {
                    objs.push(doc);
                }
            }
        }
        for p in &k.patches {
            let where_ = format!("{}/{wd}/kustomization.yaml", self.dir.display());
            if let Some(path) = &p.path {
                let ops: Vec<Value> =
                    serde_saphyr::from_str(&read_module_file(&self.dir, &format!("{wd}/{path}"))?)
                        .with_context(|| format!("parsing {}/{wd}/{path}", self.dir.display()))?;
                for obj in objs.iter_mut() {
                    if p.target.as_ref().is_none_or(|t| t.matches(obj)) {
                        json6902(obj, &ops).with_context(|| format!("applying {wd}/{path}"))?;
                    }
                }
            } else if let Some(inline) = &p.patch {
                let patch: Value = serde_saphyr::from_str(inline)
                    .with_context(|| format!("parsing an inline patch of {where_}"))?;
                let hit = objs.iter_mut().find(|o| {
                    o["kind"] == patch["kind"] && o["metadata"]["name"] == patch["metadata"]["name"]
                });
                let Some(obj) = hit else {
                    bail!(
                        "{where_}: an inline patch targets {} {}, which is not among its resources",
                        patch["kind"],
                        patch["metadata"]["name"]
                    );
                };
                merge_by_name(obj, &patch);
            } else {
                bail!("{where_}: a patch with neither path nor patch");
            }
        }
        for r in &k.replacements {
            replace_fields(&mut objs, r).with_context(|| {
                format!(
                    "applying a replacement of {}/{wd}/kustomization.yaml",
                    self.dir.display()
                )
            })?;
        }
        let ca = b64(&ep.ca_pem);
        for obj in objs.iter_mut() {
            let name = format!(
                "{}{}",
                self.name_prefix,
                obj["metadata"]["name"].as_str().unwrap_or_default()
            );
            obj["metadata"] = json!({"name": name});
            for hook in obj["webhooks"].as_array_mut().into_iter().flatten() {
                let path = hook["clientConfig"]["service"]["path"]
                    .as_str()
                    .with_context(|| format!("webhook {} has no service path", hook["name"]))?
                    .to_string();
                hook["clientConfig"] =
                    json!({"url": format!("{}{path}", ep.base_url), "caBundle": ca});
            }
        }
        if objs.is_empty() {
            bail!(
                "no webhook configurations under {}/{wd}",
                self.dir.display()
            );
        }
        Ok(objs)
    }

    /// CRDs, RBAC and webhooks, in apply order.
    pub fn manifests(&self, ep: &WebhookEndpoint) -> Result<Vec<Value>> {
        let mut all = self.crds(ep)?;
        all.extend(self.rbac()?);
        all.extend(self.webhooks(ep)?);
        Ok(all)
    }
}

/// Whether a CRD's `Established` condition is True (the API server serves
/// its kind).
pub fn established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

/// How long kube-apiserver (1.37) still holds a create of the kind of a
/// CRD that became Established at `established_ms` (Unix ms, as the CRD's
/// condition says it) when the create arrives at `now_ms`: within 2 s of
/// the transition every create first sleeps 2 s, so that every apiserver of
/// an HA control plane has seen the CRD Established
/// (k8s.io/apiextensions-apiserver `pkg/apiserver/customresource_handler.go`,
/// `crdHandler.serveResource`, `justCreated`). A dry-run probe sent inside
/// the window returns 2 s after it was sent; one sent after it, at once —
/// so a wait for a controller's webhooks starts its probes when the window
/// is over. The condition's time is whole seconds (RFC 3339 on the wire,
/// the apiserver reads the same stored value), 50 ms are added for the
/// apiserver's clock read.
pub fn create_held_for(established_ms: i64, now_ms: i64) -> Duration {
    const WINDOW_MS: i64 = 2_000;
    const MARGIN_MS: i64 = 50;
    let left = established_ms + WINDOW_MS + MARGIN_MS - now_ms;
    Duration::from_millis(u64::try_from(left.clamp(0, WINDOW_MS + MARGIN_MS)).unwrap_or(0))
}

/// When `crd` became Established (Unix ms), if it is.
pub fn established_at_ms(crd: &CustomResourceDefinition) -> Option<i64> {
    crd.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Established" && c.status == "True")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0.as_millisecond())
}

/// Wait until a create of `crd`'s kind is no longer held by the apiserver
/// (`create_held_for`).
pub async fn wait_out_create_hold(crd: &CustomResourceDefinition) {
    let Some(at) = established_at_ms(crd) else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let held = create_held_for(at, now);
    if !held.is_zero() {
        tokio::time::sleep(held).await;
    }
}

/// The names of the CRDs among `objs`.
pub fn crd_names(objs: &[Value]) -> Vec<String> {
    objs.iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// Wait until every CRD of `names` is Established: a controller started
/// before its kinds are served backs its informers off and is seconds late
/// (Kueue's manager exits: "Unable to setup indexes").
pub async fn wait_established(
    client: &kube::Client,
    names: &[String],
    what: &str,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    Poll::new(format!("{what}'s CRDs Established"), timeout)
        .every(Duration::from_millis(50))
        .alive(alive)
        .until_state(|| async {
            for n in names {
                match crds.get(n).await {
                    Ok(crd) if established(&crd) => {}
                    Ok(_) => return Ok(Err(format!("CRD {n} not Established"))),
                    Err(e) => return Ok(Err(format!("CRD {n}: {e}"))),
                }
            }
            Ok(Ok(()))
        })
        .await
}

pub fn b64(s: &str) -> String {
    // k8s-openapi's ByteString serialises as standard base64.
    match serde_json::to_value(k8s_openapi::ByteString(s.as_bytes().to_vec())) {
        Ok(Value::String(v)) => v,
        _ => unreachable!("ByteString serialises to a JSON string"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_is_held_until_two_seconds_after_established() {
        let at = 1_000_000_000_000;
        // Just Established: the whole window and the margin are left.
        assert_eq!(create_held_for(at, at), Duration::from_millis(2_050));
        // The condition's time is whole seconds: 1.4 s after it, 650 ms.
        assert_eq!(create_held_for(at, at + 1_400), Duration::from_millis(650));
        // Over: no wait, however long ago.
        assert_eq!(create_held_for(at, at + 2_050), Duration::ZERO);
        assert_eq!(create_held_for(at, at + 60_000), Duration::ZERO);
        // A clock behind the server's waits no longer than the window.
        assert_eq!(
            create_held_for(at, at - 5_000),
            Duration::from_millis(2_050)
        );
    }

    /// A module directory with a file tree.
    fn module(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    /// The fake module's layout and a local webhook endpoint.
    fn config(dir: &tempfile::TempDir) -> (ModuleConfig, WebhookEndpoint) {
        let m = ModuleConfig {
            dir: dir.path().to_path_buf(),
            name_prefix: "x-",
            crd_dir: "crd",
            rbac_roles: &["rbac/role.yaml", "rbac/secrets.yaml"],
            namespace: "x-system",
            webhook_dir: "webhook",
            user: "x-controller",
        };
        let ep = WebhookEndpoint {
            base_url: "https://127.0.0.1:9".into(),
            ca_pem: "CA".into(),
        };
        (m, ep)
    }

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.x.io\nspec:\n  group: x.io\n  names: {kind: Thing, plural: things}\n  scope: Namespaced\n  versions:\n  - {name: v1, served: true, storage: true}\n  - {name: v1beta1, served: true, storage: false}\n";
    const HOOKS: &str = "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: mutating\nwebhooks:\n- name: mpod.kb.io\n  clientConfig: {service: {name: s, namespace: system, path: /mutate-pod}}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: validating\nwebhooks:\n- name: vpod.kb.io\n  clientConfig: {service: {name: s, namespace: system, path: /validate-pod}}\n";
    const HOOK_KUSTOMIZATION: &str = "resources:\n- manifests.yaml\npatches:\n- patch: |-\n    apiVersion: admissionregistration.k8s.io/v1\n    kind: ValidatingWebhookConfiguration\n    metadata:\n      name: validating\n    webhooks:\n    - name: vpod.kb.io\n      namespaceSelector:\n        matchExpressions:\n        - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}\nreplacements:\n- source:\n    kind: ValidatingWebhookConfiguration\n    name: validating\n    fieldPath: webhooks.[name=vpod.kb.io].namespaceSelector\n  targets:\n  - select: {kind: MutatingWebhookConfiguration, name: mutating}\n    fieldPaths:\n    - webhooks.[name=mpod.kb.io].namespaceSelector\n    options: {create: true}\n";

    #[test]
    fn a_module_config_becomes_crds_rbac_and_webhooks_by_url() {
        let dir = module(&[
            (
                "crd/kustomization.yaml",
                "resources:\n- things.yaml\n- others.yaml\npatches:\n- path: patches/webhook_in_things.yaml\n",
            ),
            ("crd/things.yaml", CRD),
            (
                "crd/others.yaml",
                &CRD.replace("things", "others").replace("Thing", "Other"),
            ),
            (
                "crd/patches/webhook_in_things.yaml",
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.x.io\nspec:\n  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service: {name: webhook-service, namespace: system, path: /convert}\n      conversionReviewVersions: [v1]\n",
            ),
            (
                "rbac/role.yaml",
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: manager-role\nrules: []\n",
            ),
            (
                "rbac/secrets.yaml",
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: secrets-role\n  namespace: system\nrules: []\n",
            ),
            ("webhook/kustomization.yaml", HOOK_KUSTOMIZATION),
            ("webhook/manifests.yaml", HOOKS),
        ]);
        let (m, ep) = config(&dir);
        let all = m.manifests(&ep).unwrap();
        let kinds: Vec<&str> = all.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "MutatingWebhookConfiguration",
                "ValidatingWebhookConfiguration"
            ]
        );
        // The patched CRD converts through the local webhook by URL; the
        // other, though it serves two versions too, does not convert.
        let conv = &all[0]["spec"]["conversion"]["webhook"]["clientConfig"];
        assert_eq!(conv["url"], "https://127.0.0.1:9/convert");
        assert_eq!(conv["caBundle"], b64("CA"));
        assert_eq!(all[1]["metadata"]["name"], "others.x.io");
        assert!(all[1]["spec"].get("conversion").is_none());
        let all = &all[1..];
        assert_eq!(all[1]["metadata"]["name"], "x-manager-role");
        assert_eq!(all[2]["subjects"][0]["name"], "x-controller");
        // A Role in kustomize's placeholder namespace lands in the real one.
        assert_eq!(all[3]["metadata"]["namespace"], "x-system");
        assert_eq!(
            all[4]["metadata"],
            json!({"name": "x-secrets-role", "namespace": "x-system"})
        );
        assert_eq!(all[4]["roleRef"]["kind"], "Role");
        // The inline patch set the validating selector; the replacement
        // copied it to the mutating webhook.
        let selector = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]});
        assert_eq!(all[5]["webhooks"][0]["namespaceSelector"], selector);
        assert_eq!(all[6]["webhooks"][0]["namespaceSelector"], selector);
        assert_eq!(all[5]["metadata"]["name"], "x-mutating");
        assert_eq!(
            all[6]["webhooks"][0]["clientConfig"],
            json!({"url": "https://127.0.0.1:9/validate-pod", "caBundle": b64("CA")})
        );
    }

    #[test]
    fn an_inline_patch_for_an_object_not_there_is_an_error() {
        let dir = module(&[
            (
                "webhook/kustomization.yaml",
                &HOOK_KUSTOMIZATION.replace(
                    "name: validating\n    webhooks",
                    "name: other\n    webhooks",
                ),
            ),
            ("webhook/manifests.yaml", HOOKS),
        ]);
        let (m, ep) = config(&dir);
        let e = m.webhooks(&ep).unwrap_err();
        assert!(
            format!("{e:#}").contains("not among its resources"),
            "{e:#}"
        );
    }
}
