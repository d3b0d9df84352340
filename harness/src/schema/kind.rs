//! kind cluster configs: the typed v1alpha4 fields, and that every feature
//! gate and runtime-config group exists in the Kubernetes minor the config
//! targets (read from its node images).

use crate::k8s::facts;
use crate::schema::finding::Finding;
use crate::schema::models::KindCluster;
use crate::schema::typed::{Ctx, decode};
use crate::yaml::Seg;

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

pub fn check(ctx: &Ctx<'_>, v: &serde_json::Value) -> Vec<Finding> {
    let (cfg, mut out) = decode::<KindCluster>(ctx, v, "kind.x-k8s.io/v1alpha4 Cluster");
    let Some(cfg) = cfg else { return out };
    if cfg.kind != "Cluster" {
        out.push(ctx.finding(
            &[key("kind")],
            format!("expected Cluster, found {:?}", cfg.kind),
        ));
    }
    if cfg.api_version != "kind.x-k8s.io/v1alpha4" {
        out.push(ctx.finding(
            &[key("apiVersion")],
            format!(
                "expected kind.x-k8s.io/v1alpha4, found {:?}",
                cfg.api_version
            ),
        ));
    }
    let nodes = cfg.nodes.clone().unwrap_or_default();
    let mut minor: Option<String> = None;
    for (i, n) in nodes.iter().enumerate() {
        if !matches!(n.role.as_str(), "control-plane" | "worker") {
            out.push(ctx.finding(
                &[key("nodes"), Seg::Index(i), key("role")],
                format!("role {:?} is not control-plane or worker", n.role),
            ));
        }
        for (j, p) in n.kubeadm_config_patches.iter().flatten().enumerate() {
            out.extend(check_patch(
                ctx,
                p,
                vec![
                    key("nodes"),
                    Seg::Index(i),
                    key("kubeadmConfigPatches"),
                    Seg::Index(j),
                ],
            ));
        }
        let Some(image) = &n.image else { continue };
        let at = [key("nodes"), Seg::Index(i), key("image")];
        match facts::minor_of(image) {
            None => out.push(ctx.finding(
                &at,
                format!("cannot read a Kubernetes version from image {image:?}"),
            )),
            Some(m) => match &minor {
                Some(first) if *first != m => out.push(ctx.finding(
                    &at,
                    format!("node image is Kubernetes {m}, another node's is {first}"),
                )),
                _ => minor = Some(m),
            },
        }
        if !image.contains("@sha256:") {
            out.push(ctx.finding(
                &at,
                format!("pin the node image by digest ({image:?} has no @sha256:)"),
            ));
        }
    }
    for (j, p) in cfg.kubeadm_config_patches.iter().flatten().enumerate() {
        out.extend(check_patch(
            ctx,
            p,
            vec![key("kubeadmConfigPatches"), Seg::Index(j)],
        ));
    }
    let Some(minor) = minor else {
        out.push(ctx.finding(
            &[key("nodes")],
            "cannot tell which Kubernetes minor this config targets: set nodes[].image (kindest/node:v1.X.Y@sha256:…)",
        ));
        return out;
    };
    let Some(f) = facts::for_minor(&minor) else {
        out.push(ctx.finding(
            &[key("nodes")],
            format!(
                "Kubernetes {minor} is not one the validator knows ({})",
                facts::minors().join(", ")
            ),
        ));
        return out;
    };
    for gate in cfg.feature_gates.iter().flat_map(|g| g.keys()) {
        if f.gate(gate).is_none() {
            let similar = f.similar_gates(gate);
            let hint = if similar.is_empty() {
                String::new()
            } else {
                format!(" (similar: {})", similar.join(", "))
            };
            out.push(ctx.finding(
                &[key("featureGates"), key(gate)],
                format!("feature gate {gate:?} does not exist in Kubernetes {minor}{hint}"),
            ));
        }
    }
    for (group, value) in cfg.runtime_config.iter().flatten() {
        let at = [key("runtimeConfig"), key(group)];
        if !f.has_runtime_config_key(group) {
            out.push(ctx.finding(
                &at,
                format!("API {group:?} does not exist in Kubernetes {minor}"),
            ));
        }
        if !matches!(value.as_str(), "true" | "false") {
            out.push(ctx.finding(
                &at,
                format!("value {value:?} must be \"true\" or \"false\""),
            ));
        }
    }
    out
}

/// A kubeadm config patch is YAML with a kind.
fn check_patch(ctx: &Ctx<'_>, text: &str, at: Vec<Seg>) -> Vec<Finding> {
    match crate::yaml::parse(text) {
        Err(e) => vec![ctx.finding(
            &at,
            format!(
                "kubeadm patch is not YAML: line {} of the patch: {}",
                e.pos.line, e.message
            ),
        )],
        Ok(docs) => docs
            .iter()
            .filter(|d| d.root.get("kind").and_then(|k| k.as_str()).is_none())
            .map(|_| {
                ctx.finding(
                    &at,
                    "kubeadm patch has no kind (ClusterConfiguration, InitConfiguration, …)",
                )
            })
            .collect(),
    }
}
