//! kwok inside a kind cluster (`up --provider kind --kwok`), so workloads
//! add fake node pools there as they do on the local provider (the gang
//! cases do; kwokctl's kind runtime runs kwok the same way). The objects
//! are the kwok module's own kustomization (`kustomize/kwok`: its
//! ServiceAccount, ClusterRole and binding, FlowSchema, Service and the
//! `kwok-controller` Deployment in kube-system), read at run time from the
//! Go module cache, with two changes: the image (built here, or kwok's
//! release image where images are pulled) and the configuration — the
//! module's KwokConfiguration with no CRD turned on, followed by the
//! stages of the local provider's kwok-minimal model
//! (cluster/kwok.rs). kwok refuses stages given both as config and as
//! its Stage CRD (pkg/kwok/cmd/root.go, `checkConfigOrCRD`), and its other
//! CRDs (logs, exec, metrics…) are not used by any workload here.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use kube::api::Api;
use serde_json::Value;

use crate::cluster::Cluster;
use crate::cluster::kwok::KWOK_NODE_ANNOTATION;
use crate::cluster::pool::POOL_NODE_LABEL;
use crate::cluster::spec::KubeletModel;
use crate::install::apply::apply_all;
use crate::install::release::{kustomize, load_built_image};
use crate::k8s::K8sRelease;
use crate::tools::Component;
use crate::tools::modules::module_dir;
use crate::tools::versions::KWOK_VERSION;

pub const NAMESPACE: &str = "kube-system";
pub const DEPLOYMENT: &str = "kwok-controller";
/// The ConfigMap the Deployment mounts as its `--config`, and its key.
const CONFIG_MAP: &str = "kwok";
const CONFIG_KEY: &str = "kwok.yaml";

/// kwok's release image, where images are pulled.
pub fn release_image() -> String {
    format!("registry.k8s.io/kwok/kwok:v{KWOK_VERSION}")
}

/// Apply kwok to `cluster` and keep its DaemonSets off kwok's nodes (not
/// waiting for kwok): its kustomization rendered by `kubectl`, its image
/// built here and loaded into the nodes when they were `built` here (no
/// registry), else kwok's release image.
pub async fn install(
    cluster: &impl Cluster,
    kubectl: &Path,
    k8s: K8sRelease,
    built: bool,
) -> Result<()> {
    let (image, pull) = if built {
        let spec = load_built_image(cluster, Component::Kwok, k8s).await?;
        (spec.name, "Never")
    } else {
        (release_image(), "IfNotPresent")
    };
    let dir = module_dir("sigs.k8s.io/kwok", &format!("v{KWOK_VERSION}"))?;
    let mut objects = kustomize(kubectl, &dir.join("kustomize/kwok"), "kwok").await?;
    let stages = crate::cluster::kwok::config(KubeletModel::KwokMinimal)?;
    configure(&mut objects, &image, pull, &stages)
        .with_context(|| format!("kwok's kustomization in {}", dir.display()))?;
    let client = cluster.client().await?;
    apply_all(&client, &objects)
        .await
        .with_context(|| format!("applying kwok from {}", dir.display()))?;
    keep_daemons_off(&client).await?;
    Ok(())
}

/// Keep the cluster's DaemonSets (kube-proxy; kindnet on pulled images)
/// off kwok's nodes: they tolerate every taint, so each fake node would
/// run one of their pods, which takes one of the node's pod slots — a
/// pool made with room for 6 of a workload's pods would have room for 5
/// (the gang case all-or-nothing failed so on kind). A fake node has no
/// network for them to serve. Each DaemonSet gets a required node
/// affinity "no `harness.kwok/pool-node` label" in every term; how many
/// were changed.
pub async fn keep_daemons_off(client: &kube::Client) -> Result<usize> {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use kube::api::{ListParams, Patch, PatchParams};
    let all: Api<DaemonSet> = Api::all(client.clone());
    let mut changed = 0;
    for ds in all
        .list(&ListParams::default())
        .await
        .context("listing DaemonSets")?
    {
        let (Some(name), Some(ns)) = (ds.metadata.name.clone(), ds.metadata.namespace.clone())
        else {
            continue;
        };
        let spec = ds.spec.template.spec.as_ref();
        let affinity = serde_json::to_value(spec.and_then(|s| s.affinity.clone()))?;
        let Some(affinity) = excluding_kwok_nodes(affinity) else {
            continue;
        };
        let patch = serde_json::json!({"spec": {"template": {"spec": {"affinity": affinity}}}});
        Api::<DaemonSet>::namespaced(client.clone(), &ns)
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("keeping DaemonSet {ns}/{name} off kwok's nodes"))?;
        changed += 1;
    }
    Ok(changed)
}

/// `affinity` with "no pool-node label" required in every node selector
/// term (one term if there is none); None when every term has it.
fn excluding_kwok_nodes(affinity: Value) -> Option<Value> {
    let rule = serde_json::json!({"key": POOL_NODE_LABEL, "operator": "DoesNotExist"});
    let mut affinity = match affinity {
        Value::Object(_) => affinity,
        _ => serde_json::json!({}),
    };
    let required = &mut affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let terms = required["nodeSelectorTerms"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let terms = if terms.is_empty() {
        vec![serde_json::json!({})]
    } else {
        terms
    };
    let mut added = false;
    let terms: Vec<Value> = terms
        .into_iter()
        .map(|mut t| {
            let exprs = t["matchExpressions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !exprs.contains(&rule) {
                let mut exprs = exprs;
                exprs.push(rule.clone());
                t["matchExpressions"] = Value::Array(exprs);
                added = true;
            }
            t
        })
        .collect();
    required["nodeSelectorTerms"] = Value::Array(terms);
    added.then_some(affinity)
}

/// Point the kustomization's Deployment at `image` and replace its
/// configuration: the module's KwokConfiguration (which must manage the
/// nodes the harness annotates) with no CRD on, then `stages`.
fn configure(objects: &mut [Value], image: &str, pull: &str, stages: &str) -> Result<()> {
    let mut containers = 0;
    let mut configs = 0;
    for o in objects.iter_mut() {
        match (o["kind"].as_str(), o["metadata"]["name"].as_str()) {
            (Some("Deployment"), Some(DEPLOYMENT)) => {
                for c in o["spec"]["template"]["spec"]["containers"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    c["image"] = Value::String(image.to_string());
                    c["imagePullPolicy"] = Value::String(pull.to_string());
                    containers += 1;
                }
            }
            (Some("ConfigMap"), Some(CONFIG_MAP)) => {
                let text = o["data"][CONFIG_KEY]
                    .as_str()
                    .with_context(|| format!("ConfigMap {CONFIG_MAP} has no {CONFIG_KEY}"))?;
                let doc = kwok_configuration(text)?;
                o["data"][CONFIG_KEY] = Value::String(format!("{doc}\n---\n{stages}"));
                configs += 1;
            }
            _ => {}
        }
    }
    ensure!(
        containers == 1 && configs == 1,
        "expected one {DEPLOYMENT} container and one ConfigMap {CONFIG_MAP}, found {containers} and {configs}"
    );
    Ok(())
}

/// The KwokConfiguration of `text` with `enableCRDs` removed, as JSON
/// (a YAML document kwok reads); refused unless it manages nodes by the
/// annotation the harness's pool nodes carry.
fn kwok_configuration(text: &str) -> Result<String> {
    let docs = crate::yaml::documents(text, "kwok's configuration")?;
    let Some(mut doc) = docs.into_iter().find(|d| d["kind"] == "KwokConfiguration") else {
        bail!("no KwokConfiguration in {CONFIG_KEY}");
    };
    let want = format!("{KWOK_NODE_ANNOTATION}=fake");
    let selector = doc["options"]["manageNodesWithAnnotationSelector"].as_str();
    if selector != Some(want.as_str()) {
        bail!(
            "kwok's configuration manages nodes by {selector:?}, not {want:?} (what the harness's pool nodes carry)"
        );
    }
    if let Some(o) = doc["options"].as_object_mut() {
        o.remove("enableCRDs");
    }
    Ok(serde_json::to_string_pretty(&doc)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objects(selector: &str) -> Vec<Value> {
        let config = format!(
            "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  manageNodesWithAnnotationSelector: '{selector}'\n  enableCRDs:\n  - Stage\n  - Metric\n"
        );
        vec![
            json!({"kind": "ServiceAccount", "metadata": {"name": DEPLOYMENT}}),
            json!({"kind": "ConfigMap", "metadata": {"name": CONFIG_MAP}, "data": {CONFIG_KEY: config}}),
            json!({"kind": "Deployment", "metadata": {"name": DEPLOYMENT}, "spec": {"template": {"spec": {"containers": [{"name": "kwok-controller", "image": "registry.k8s.io/kwok/kwok"}]}}}}),
        ]
    }

    #[test]
    fn the_image_is_ours_and_stages_come_from_config_not_crds() {
        let mut objs = objects("kwok.x-k8s.io/node=fake");
        let stages = "kind: Stage\nmetadata:\n  name: pod-ready\n";
        configure(&mut objs, "harness.local/kwok:v0.8.0", "Never", stages).unwrap();
        let c = &objs[2]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "harness.local/kwok:v0.8.0");
        assert_eq!(c["imagePullPolicy"], "Never");
        let text = objs[1]["data"][CONFIG_KEY].as_str().unwrap();
        let docs = crate::yaml::documents(text, "t").unwrap();
        assert_eq!(docs.len(), 2);
        assert!(docs[0]["options"].get("enableCRDs").is_none());
        assert_eq!(
            docs[0]["options"]["manageNodesWithAnnotationSelector"],
            "kwok.x-k8s.io/node=fake"
        );
        assert_eq!(docs[1]["kind"], "Stage");
    }

    #[test]
    fn daemon_sets_are_kept_off_kwok_nodes_in_every_term_once() {
        let rule = json!({"key": POOL_NODE_LABEL, "operator": "DoesNotExist"});
        let a = excluding_kwok_nodes(Value::Null).unwrap();
        let terms = &a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        assert_eq!(terms, &json!([{"matchExpressions": [rule.clone()]}]));
        // Already there: nothing to change.
        assert!(excluding_kwok_nodes(a).is_none());
        // Terms of its own (ORed) each get the rule; other affinity stays.
        let own = json!({
            "podAntiAffinity": {"x": 1},
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "os", "operator": "In", "values": ["linux"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
            ]}}
        });
        let a = excluding_kwok_nodes(own).unwrap();
        assert_eq!(a["podAntiAffinity"], json!({"x": 1}));
        let terms = a["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"]
            .as_array()
            .unwrap();
        assert_eq!(terms.len(), 2);
        assert!(
            terms
                .iter()
                .all(|t| t["matchExpressions"].as_array().unwrap().contains(&rule))
        );
        assert_eq!(terms[1]["matchFields"][0]["key"], "metadata.name");
    }

    #[test]
    fn a_configuration_managing_other_nodes_or_a_missing_deployment_is_refused() {
        let mut objs = objects("type=kwok");
        let e = configure(&mut objs, "i", "Never", "").unwrap_err();
        assert!(
            format!("{e:#}").contains("not \"kwok.x-k8s.io/node=fake\""),
            "{e:#}"
        );
        let mut objs = objects("kwok.x-k8s.io/node=fake");
        objs.pop();
        let e = configure(&mut objs, "i", "Never", "").unwrap_err();
        assert!(format!("{e:#}").contains("found 0 and 1"), "{e:#}");
    }
}
