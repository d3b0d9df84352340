//! Server-side apply of arbitrary objects, and the small slice of kustomize
//! the harness needs to read upstream config directories as they are
//! published (resources + JSON6902 patches).

use anyhow::{Context, Result, bail};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::Value;

pub const FIELD_MANAGER: &str = "harness";

/// A kustomization.yaml's resources and patches (with their targets).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kustomization {
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub patches: Vec<KustomizePatch>,
}

#[derive(Debug, serde::Deserialize)]
pub struct KustomizePatch {
    pub path: String,
    #[serde(default)]
    pub target: Option<PatchTarget>,
}

#[derive(Debug, serde::Deserialize)]
pub struct PatchTarget {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
}

impl PatchTarget {
    pub fn matches(&self, obj: &Value) -> bool {
        let kind_ok = self.kind.as_deref().is_none_or(|k| obj["kind"] == k);
        let name_ok = self
            .name
            .as_deref()
            .is_none_or(|n| obj["metadata"]["name"] == n);
        kind_ok && name_ok
    }
}

/// Apply RFC 6902 operations (add, replace, remove) to `obj`.
pub fn json6902(obj: &mut Value, ops: &[Value]) -> Result<()> {
    for op in ops {
        let kind = op["op"].as_str().context("patch operation without op")?;
        let path = op["path"]
            .as_str()
            .context("patch operation without path")?;
        let (parent_path, last) = path
            .rsplit_once('/')
            .context("patch path must start with /")?;
        let last = last.replace("~1", "/").replace("~0", "~");
        let parent = obj
            .pointer_mut(parent_path)
            .with_context(|| format!("patch path {path}: {parent_path} does not exist"))?;
        match (kind, parent) {
            ("replace" | "add", Value::Array(items)) => {
                let value = op
                    .get("value")
                    .cloned()
                    .context("add/replace without value")?;
                if last == "-" && kind == "add" {
                    items.push(value);
                } else {
                    let i: usize = last
                        .parse()
                        .with_context(|| format!("patch path {path}: bad index"))?;
                    if kind == "add" && i <= items.len() {
                        items.insert(i, value);
                    } else if i < items.len() {
                        items[i] = value;
                    } else {
                        bail!("patch path {path}: index {i} out of range");
                    }
                }
            }
            ("replace" | "add", Value::Object(map)) => {
                let value = op
                    .get("value")
                    .cloned()
                    .context("add/replace without value")?;
                if kind == "replace" && !map.contains_key(&last) {
                    bail!("patch path {path}: nothing to replace");
                }
                map.insert(last, value);
            }
            ("remove", Value::Array(items)) => {
                let i: usize = last
                    .parse()
                    .with_context(|| format!("patch path {path}: bad index"))?;
                if i >= items.len() {
                    bail!("patch path {path}: index {i} out of range");
                }
                items.remove(i);
            }
            ("remove", Value::Object(map)) => {
                map.remove(&last)
                    .with_context(|| format!("patch path {path}: nothing to remove"))?;
            }
            (other, _) => bail!("patch operation {other:?} at {path} is not supported"),
        }
    }
    Ok(())
}

/// Server-side apply each object, finding its resource through discovery.
pub async fn apply_all(client: &kube::Client, objects: &[Value]) -> Result<()> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .context("API discovery")?;
    for obj in objects {
        apply_one(client, &discovery, obj).await?;
    }
    Ok(())
}

async fn apply_one(client: &kube::Client, discovery: &Discovery, obj: &Value) -> Result<()> {
    let api_version = obj["apiVersion"]
        .as_str()
        .context("object without apiVersion")?;
    let kind = obj["kind"].as_str().context("object without kind")?;
    let name = obj["metadata"]["name"]
        .as_str()
        .context("object without metadata.name")?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let (ar, caps): (ApiResource, _) = discovery.resolve_gvk(&gvk).with_context(|| {
        format!("the API server does not serve {api_version} {kind} (applying {name})")
    })?;
    let api: Api<DynamicObject> = match (caps.scope, obj["metadata"]["namespace"].as_str()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
        (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &ar),
        (Scope::Cluster, _) => Api::all_with(client.clone(), &ar),
    };
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .with_context(|| format!("applying {kind} {name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json6902_replace_add_remove() {
        let mut obj =
            json!({"webhooks": [{"name": "a"}, {"name": "b"}], "metadata": {"name": "x"}});
        json6902(
            &mut obj,
            &[
                json!({"op": "replace", "path": "/webhooks/1", "value": {"name": "B"}}),
                json!({"op": "add", "path": "/webhooks/-", "value": {"name": "c"}}),
                json!({"op": "add", "path": "/metadata/labels", "value": {"l": "v"}}),
                json!({"op": "remove", "path": "/webhooks/0"}),
            ],
        )
        .unwrap();
        assert_eq!(obj["webhooks"], json!([{"name": "B"}, {"name": "c"}]));
        assert_eq!(obj["metadata"]["labels"]["l"], "v");
        assert!(
            json6902(
                &mut obj,
                &[json!({"op": "replace", "path": "/webhooks/9", "value": 1})]
            )
            .is_err()
        );
        assert!(
            json6902(
                &mut obj,
                &[json!({"op": "replace", "path": "/nope/x", "value": 1})]
            )
            .is_err()
        );
        assert!(json6902(&mut obj, &[json!({"op": "move", "path": "/metadata/name"})]).is_err());
    }

    #[test]
    fn kustomization_and_targets() {
        let k: Kustomization = serde_saphyr::from_str(
            "resources:\n- m.yaml\npatches:\n- path: p.yaml\n  target:\n    kind: MutatingWebhookConfiguration\n    name: m\n",
        )
        .unwrap();
        assert_eq!(k.resources, vec!["m.yaml"]);
        let t = k.patches[0].target.as_ref().unwrap();
        assert!(
            t.matches(&json!({"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}}))
        );
        assert!(!t.matches(
            &json!({"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "m"}})
        ));
    }
}
