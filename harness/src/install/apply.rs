//! Server-side apply of arbitrary objects, and the small slice of kustomize
//! the harness needs to read upstream config directories as they are
//! published (resources, JSON6902 patch files, inline strategic-merge
//! patches of lists keyed by name, replacements).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::Value;

use crate::install::busy::ask;
use crate::poll::Poll;

pub const FIELD_MANAGER: &str = "harness";

/// A kustomization.yaml's resources and patches (with their targets).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kustomization {
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub patches: Vec<KustomizePatch>,
    #[serde(default)]
    pub replacements: Vec<Replacement>,
}

/// A patch: a JSON6902 file (`path`, with a `target`) or an inline
/// strategic-merge patch (`patch`, naming its object).
#[derive(Debug, serde::Deserialize)]
pub struct KustomizePatch {
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub patch: Option<String>,
    #[serde(default)]
    pub target: Option<PatchTarget>,
}

/// kustomize's `replacements`: copy one field of one object into fields
/// of others.
/// Only the fields the harness implements are accepted: an upstream
/// replacement using others (`reject`, `options.delimiter`…) is an error,
/// never silently half-applied.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    pub source: ReplacementSource,
    pub targets: Vec<ReplacementTarget>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplacementSource {
    pub kind: String,
    pub name: String,
    pub field_path: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplacementTarget {
    pub select: PatchTarget,
    pub field_paths: Vec<String>,
    #[serde(default)]
    pub options: ReplacementOptions,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplacementOptions {
    #[serde(default)]
    pub create: bool,
}

/// One step of a kustomize field path: a key, or the list element whose
/// `key` is `value` (`webhooks.[name=vpod.kb.io].namespaceSelector`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Element { key: String, value: String },
}

fn segments(path: &str) -> Result<Vec<Segment>> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        let (seg, tail) = if let Some(inner) = rest.strip_prefix('[') {
            let end = inner
                .find(']')
                .with_context(|| format!("field path {path}: unclosed ["))?;
            let (key, value) = inner[..end]
                .split_once('=')
                .with_context(|| format!("field path {path}: [key=value] expected"))?;
            let seg = Segment::Element {
                key: key.to_string(),
                value: value.to_string(),
            };
            (seg, &inner[end + 1..])
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            (Segment::Key(rest[..end].to_string()), &rest[end..])
        };
        out.push(seg);
        rest = tail.strip_prefix('.').unwrap_or(tail);
    }
    Ok(out)
}

/// Walk `path` in `obj`; with `create`, missing keys become mappings.
fn walk<'a>(obj: &'a mut Value, path: &str, create: bool) -> Result<&'a mut Value> {
    let mut cur = obj;
    for seg in segments(path)? {
        cur = match seg {
            Segment::Key(k) => {
                if create && cur.get(&k).is_none() {
                    cur.as_object_mut()
                        .with_context(|| format!("field path {path}: {k} under a non-mapping"))?
                        .insert(k.clone(), Value::Object(Default::default()));
                }
                cur.get_mut(&k)
                    .with_context(|| format!("field path {path}: no {k}"))?
            }
            Segment::Element { key, value } => cur
                .as_array_mut()
                .and_then(|items| items.iter_mut().find(|i| i[&key] == value.as_str()))
                .with_context(|| format!("field path {path}: no element with {key}={value}"))?,
        };
    }
    Ok(cur)
}

/// Apply one replacement to `objs` (every target must exist).
pub fn replace_fields(objs: &mut [Value], r: &Replacement) -> Result<()> {
    let src = &r.source;
    let from = objs
        .iter_mut()
        .find(|o| o["kind"] == src.kind.as_str() && o["metadata"]["name"] == src.name.as_str())
        .with_context(|| format!("replacement source {} {} not found", src.kind, src.name))?;
    let value = walk(from, &src.field_path, false)?.clone();
    for t in &r.targets {
        let mut hit = false;
        for obj in objs.iter_mut().filter(|o| t.select.matches(o)) {
            hit = true;
            for fp in &t.field_paths {
                *walk(obj, fp, t.options.create)? = value.clone();
            }
        }
        if !hit {
            bail!("replacement target {:?} matches no object", t.select);
        }
    }
    Ok(())
}

/// A strategic-merge patch as kustomize applies it to objects whose lists
/// are keyed by `name` (webhooks, containers): mappings merge key by key,
/// lists of named mappings merge element by name, anything else is
/// replaced.
pub fn merge_by_name(obj: &mut Value, patch: &Value) {
    match (obj, patch) {
        (Value::Object(o), Value::Object(p)) => {
            for (k, v) in p {
                match o.get_mut(k) {
                    Some(existing) => merge_by_name(existing, v),
                    None => {
                        o.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(o), Value::Array(p)) if p.iter().all(|e| e["name"].is_string()) => {
            for e in p {
                match o.iter_mut().find(|x| x["name"] == e["name"]) {
                    Some(existing) => merge_by_name(existing, e),
                    None => o.push(e.clone()),
                }
            }
        }
        (o, p) => *o = p.clone(),
    }
}

#[derive(Debug, Default, serde::Deserialize)]
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

/// Server-side apply each object, finding its resource through discovery
/// of the objects' API groups only: a group whose CRD was created a moment
/// ago answers 404 for a while, which would fail a discovery of every
/// group (seen when Kueue's install followed JobSet's).
pub async fn apply_all(client: &kube::Client, objects: &[Value]) -> Result<()> {
    let mut groups: Vec<String> = objects
        .iter()
        .filter_map(|o| o["apiVersion"].as_str())
        .map(|av| av.rsplit_once('/').map_or("", |(g, _)| g).to_string())
        .collect();
    groups.sort();
    groups.dedup();
    let wanted: Vec<&str> = groups.iter().map(String::as_str).collect();
    let discovery = Poll::new("API discovery", Duration::from_secs(30))
        .every(Duration::from_millis(250))
        .until_state(|| async {
            Ok(
                match Discovery::new(client.clone()).filter(&wanted).run().await {
                    Ok(d) => Ok(d),
                    Err(e) => Err(format!("{e}")),
                },
            )
        })
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
    let params = PatchParams::apply(FIELD_MANAGER).force();
    // A server-side apply is idempotent: asked again, it needs no code
    // that means "the first landed".
    let patch = Patch::Apply(obj);
    ask(format!("applying {kind} {name}"), None, || {
        api.patch(name, &params, &patch)
    })
    .await
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
    fn replacements_copy_a_field_into_named_list_elements() {
        let k: Kustomization = serde_saphyr::from_str(
            "replacements:\n- source:\n    kind: V\n    name: v\n    fieldPath: webhooks.[name=a.kb.io].sel\n  targets:\n  - select:\n      kind: M\n    fieldPaths:\n    - webhooks.[name=b.kb.io].sel\n    options:\n      create: true\n",
        )
        .unwrap();
        let mut objs = vec![
            json!({"kind": "V", "metadata": {"name": "v"}, "webhooks": [{"name": "a.kb.io", "sel": {"k": 1}}]}),
            json!({"kind": "M", "metadata": {"name": "m"}, "webhooks": [{"name": "b.kb.io"}, {"name": "c.kb.io"}]}),
        ];
        replace_fields(&mut objs, &k.replacements[0]).unwrap();
        assert_eq!(objs[1]["webhooks"][0]["sel"], json!({"k": 1}));
        assert!(objs[1]["webhooks"][1].get("sel").is_none());
        // A target element that does not exist is an error, not a skip.
        let mut missing = vec![
            objs[0].clone(),
            json!({"kind": "M", "metadata": {"name": "m"}, "webhooks": []}),
        ];
        assert!(replace_fields(&mut missing, &k.replacements[0]).is_err());
        assert_eq!(
            segments("a.[name=x.y].b").unwrap(),
            vec![
                Segment::Key("a".into()),
                Segment::Element {
                    key: "name".into(),
                    value: "x.y".into()
                },
                Segment::Key("b".into())
            ]
        );
        assert!(segments("a.[name").is_err());
    }

    #[test]
    fn merge_by_name_merges_named_list_elements() {
        let mut obj = json!({"webhooks": [{"name": "a", "x": 1}, {"name": "b"}], "keep": true});
        merge_by_name(
            &mut obj,
            &json!({"webhooks": [{"name": "a", "sel": {"k": "v"}}, {"name": "new"}]}),
        );
        assert_eq!(
            obj,
            json!({"webhooks": [{"name": "a", "x": 1, "sel": {"k": "v"}}, {"name": "b"}, {"name": "new"}], "keep": true})
        );
        let mut plain = json!({"args": ["a", "b"]});
        merge_by_name(&mut plain, &json!({"args": ["c"]}));
        assert_eq!(plain["args"], json!(["c"]));
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
