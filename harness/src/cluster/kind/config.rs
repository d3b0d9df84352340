//! kind cluster configs: reading a profile from kind-configs/, checking it
//! against what the harness needs (one Kubernetes minor, the audit patch),
//! and the effective config written per cluster with the host mounts for
//! the audit policy and log.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cluster::kind::patches;
use crate::error::bad_input;
use crate::k8s::K8sRelease;

/// Where, inside the control-plane node, the API server reads the audit
/// policy and writes the audit log (the profiles' kubeadm patch uses these).
pub const NODE_AUDIT_POLICY: &str = "/etc/kubernetes/harness/audit-policy.yaml";
pub const NODE_AUDIT_DIR: &str = "/var/log/kubernetes/harness-audit";
pub const AUDIT_LOG_NAME: &str = "audit.log";

pub const PROFILES: &[&str] = &["baseline", "jobset", "gang", "rounds"];

/// A kind config file as the harness understands it.
#[derive(Debug, Clone)]
pub struct Profile {
    pub path: PathBuf,
    pub doc: Value,
    /// "1.37"
    pub minor: String,
    /// "kindest/node:v1.37.0@sha256:…"
    pub node_image: String,
    /// "1.37.0"
    pub k8s_version: String,
}

impl Profile {
    /// How many nodes the config makes (a config is checked to have a
    /// control-plane node).
    pub fn nodes(&self) -> usize {
        self.doc["nodes"].as_array().map_or(1, |n| n.len().max(1))
    }
}

/// `kind-configs/<profile>-<minor>.yaml` under the repository root.
pub fn default_config(root: &Path, profile: &str, minor: &str) -> Result<PathBuf> {
    if !PROFILES.contains(&profile) {
        return Err(bad_input(format!(
            "unknown kind profile {profile:?}; one of {}",
            PROFILES.join(", ")
        )));
    }
    Ok(root
        .join("kind-configs")
        .join(format!("{profile}-{minor}.yaml")))
}

/// "kindest/node:v1.37.0@sha256:…" → "1.37.0".
pub fn image_version(image: &str) -> Option<String> {
    let tag = image.rsplit_once(":v")?.1;
    let tag = tag.split('@').next()?;
    let parts: Vec<&str> = tag.split('.').collect();
    (parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok())).then(|| tag.to_string())
}

fn problem(path: &Path, msg: impl std::fmt::Display) -> anyhow::Error {
    bad_input(format!("{}: {msg}", path.display()))
}

/// Read and check a kind config: one Cluster document, every node image
/// pinned to the same known Kubernetes minor, a control-plane node, the
/// audit patch, and no mounts of its own where the harness puts them.
pub fn load_profile(path: &Path) -> Result<Profile> {
    if !path.exists() && !path.is_symlink() {
        return Err(bad_input(format!(
            "kind config {} does not exist (profiles are in kind-configs/)",
            path.display()
        )));
    }
    let text = crate::input::read(path)?;
    let docs = crate::yaml::documents(&text, &path.display().to_string())
        .map_err(|e| problem(path, format!("{e:#}")))?;
    let [doc] = docs.as_slice() else {
        return Err(problem(
            path,
            format!("expected one kind Cluster document, found {}", docs.len()),
        ));
    };
    if doc["kind"] != "Cluster" || doc["apiVersion"] != "kind.x-k8s.io/v1alpha4" {
        return Err(problem(
            path,
            "not a kind.x-k8s.io/v1alpha4 Cluster (kind, apiVersion)",
        ));
    }
    let nodes = doc["nodes"].as_array().cloned().unwrap_or_default();
    if !nodes.iter().any(|n| n["role"] == "control-plane") {
        return Err(problem(path, "nodes: no control-plane node"));
    }
    let mut image: Option<String> = None;
    for (i, n) in nodes.iter().enumerate() {
        let Some(img) = n["image"].as_str() else {
            return Err(problem(
                path,
                format!("nodes[{i}].image: missing; pin kindest/node:vX.Y.Z@sha256:…"),
            ));
        };
        if !img.contains("@sha256:") || image_version(img).is_none() {
            return Err(problem(
                path,
                format!("nodes[{i}].image {img:?}: not kindest/node:vX.Y.Z@sha256:…"),
            ));
        }
        match &image {
            Some(first) if first != img => {
                return Err(problem(
                    path,
                    format!("nodes[{i}].image {img:?} differs from nodes[0]'s {first:?}"),
                ));
            }
            _ => image = Some(img.to_string()),
        }
        for m in n["extraMounts"].as_array().into_iter().flatten() {
            let c = m["containerPath"].as_str().unwrap_or_default();
            if c == NODE_AUDIT_POLICY || c.starts_with(NODE_AUDIT_DIR) {
                return Err(problem(
                    path,
                    format!(
                        "nodes[{i}].extraMounts mounts {c}, where the harness mounts the audit policy/log itself"
                    ),
                ));
            }
        }
    }
    let node_image = image.expect("a control-plane node exists, so an image was read");
    let k8s_version = image_version(&node_image).expect("checked above");
    let release = K8sRelease::parse(&k8s_version[..k8s_version.rfind('.').unwrap_or(0)])
        .map_err(|e| problem(path, format!("node image {node_image}: {e}")))?;
    check_audit_patch(path, doc)?;
    Ok(Profile {
        path: path.to_path_buf(),
        doc: doc.clone(),
        minor: release.minor.to_string(),
        node_image,
        k8s_version,
    })
}

/// Some kubeadm ClusterConfiguration patch (top level or on a
/// control-plane node) sets the audit flags to the paths the harness mounts.
fn check_audit_patch(path: &Path, doc: &Value) -> Result<()> {
    fn strings(v: &Value) -> impl Iterator<Item = &str> {
        v["kubeadmConfigPatches"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }
    let mut patches: Vec<&str> = strings(doc).collect();
    for n in doc["nodes"].as_array().into_iter().flatten() {
        if n["role"] == "control-plane" {
            patches.extend(strings(n));
        }
    }
    let want_log = format!("{NODE_AUDIT_DIR}/{AUDIT_LOG_NAME}");
    for text in patches {
        let Ok(docs) = crate::yaml::documents(text, "kubeadm patch") else {
            continue;
        };
        for p in docs {
            if p["kind"] != "ClusterConfiguration" {
                continue;
            }
            let args = p["apiServer"]["extraArgs"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let arg = |name: &str| {
                args.iter()
                    .find(|a| a["name"] == name)
                    .and_then(|a| a["value"].as_str().map(str::to_string))
            };
            if arg("audit-log-path").as_deref() == Some(want_log.as_str())
                && arg("audit-policy-file").as_deref() == Some(NODE_AUDIT_POLICY)
            {
                return Ok(());
            }
        }
    }
    Err(problem(
        path,
        format!(
            "no kubeadm ClusterConfiguration patch (kubeadm.k8s.io/v1beta4) sets apiServer.extraArgs audit-log-path={want_log} and audit-policy-file={NODE_AUDIT_POLICY}; the harness reads the audit log there (see kind-configs/README.md)"
        ),
    ))
}

/// `--k8s-version`, when given, must name the config's minor.
pub fn check_minor(profile: &Profile, wanted: Option<&str>) -> Result<()> {
    let Some(w) = wanted else { return Ok(()) };
    let r = K8sRelease::parse(w)?;
    if r.minor != profile.minor {
        return Err(bad_input(format!(
            "--k8s-version {w} (Kubernetes {}) disagrees with {}, whose node image {} is Kubernetes {}",
            r.minor,
            profile.path.display(),
            profile.node_image,
            profile.minor
        )));
    }
    Ok(())
}

/// The profile plus, on every control-plane node, the mounts of this
/// cluster's audit policy (read-only) and audit log directory;
/// the patches that outlast a loaded machine (`patches`).
pub fn effective(profile: &Profile, host_policy: &Path, host_audit_dir: &Path) -> Value {
    let mut doc = profile.doc.clone();
    patches::outlast_a_loaded_machine(&mut doc);
    if let Some(nodes) = doc["nodes"].as_array_mut() {
        for n in nodes.iter_mut().filter(|n| n["role"] == "control-plane") {
            let mounts = [
                json!({"hostPath": host_policy, "containerPath": NODE_AUDIT_POLICY, "readOnly": true}),
                json!({"hostPath": host_audit_dir, "containerPath": NODE_AUDIT_DIR}),
            ];
            match n.get_mut("extraMounts").and_then(Value::as_array_mut) {
                Some(existing) => existing.extend(mounts),
                None => n["extraMounts"] = Value::Array(mounts.to_vec()),
            }
        }
    }
    doc
}

/// Where the node image is built here (tools/kindnode): every node runs
/// `image`; kind's default CNI (kindnetd, which cannot be built here) is
/// off, the harness gives each node a bridge network of its own pod subnet
/// after `kind create` (KindCluster::setup_pod_network); kubeadm is told
/// the etcd and CoreDNS tags built here; the kubelet runs on a cgroup v1
/// host (`failCgroupV1: false`, which 1.35+ kubelets need there). The node
/// has no `/kind/manifests/default-storage.yaml` (its local-path image
/// cannot be had), so kind falls back on a default class `standard` of the
/// in-tree `kubernetes.io/host-path` provisioner
/// (kind's installstorage.addDefaultStorage): the controller manager's
/// `--enable-hostpath-provisioner` makes that class provision. The
/// controller manager serves /metrics without a SubjectAccessReview, so
/// the harness's scrape of its client-side throttling is no request of
/// the controller manager's inside a window (metrics::throttle).
pub fn built_overrides(doc: &mut Value, image: &str, etcd_tag: &str, dns_tag: &str) {
    if let Some(nodes) = doc["nodes"].as_array_mut() {
        for n in nodes.iter_mut() {
            n["image"] = json!(image);
        }
    }
    if !doc["networking"].is_object() {
        doc["networking"] = json!({});
    }
    doc["networking"]["disableDefaultCNI"] = json!(true);
    let patches = [
        format!(
            "kind: ClusterConfiguration\napiVersion: kubeadm.k8s.io/v1beta4\netcd:\n  local:\n    imageTag: \"{etcd_tag}\"\ndns:\n  imageTag: \"{dns_tag}\"\ncontrollerManager:\n  extraArgs:\n    - name: enable-hostpath-provisioner\n      value: \"true\"\n    - name: authorization-always-allow-paths\n      value: \"/healthz,/readyz,/livez,/metrics\"\n"
        ),
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nfailCgroupV1: false\n"
            .to_string(),
    ];
    patches::add(doc, patches);
}

/// YAML text of a config, with a header naming its source.
pub fn to_yaml(doc: &Value, source: &Path) -> Result<String> {
    let body = serde_saphyr::to_string(doc).context("serialising the effective kind config")?;
    Ok(format!(
        "# Written by `harness up --provider kind` from {} plus this cluster's audit mounts.\n{body}",
        source.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_overrides_replace_images_and_add_patches() {
        let p = load_profile(&repo().join("kind-configs/gang-1.37.yaml")).unwrap();
        let mut doc = p.doc.clone();
        let before = doc["kubeadmConfigPatches"].as_array().unwrap().len();
        built_overrides(
            &mut doc,
            "harness.local/kind-node:v1.37.1-abc",
            "3.6.16-0",
            "v1.14.7",
        );
        for n in doc["nodes"].as_array().unwrap() {
            assert_eq!(n["image"], "harness.local/kind-node:v1.37.1-abc");
        }
        assert_eq!(doc["networking"]["disableDefaultCNI"], true);
        let patches = doc["kubeadmConfigPatches"].as_array().unwrap();
        assert_eq!(patches.len(), before + 2);
        let text: Vec<&str> = patches.iter().filter_map(Value::as_str).collect();
        assert!(
            text.iter().any(
                |t| t.contains("imageTag: \"3.6.16-0\"") && t.contains("imageTag: \"v1.14.7\"")
            )
        );
        assert!(text.iter().any(|t| t.contains("failCgroupV1: false")));
        assert!(text.iter().any(|t| t.contains(
            "- name: authorization-always-allow-paths\n      value: \"/healthz,/readyz,/livez,/metrics\""
        )));
        assert!(
            text.iter()
                .any(|t| t.contains("name: enable-hostpath-provisioner\n      value: \"true\""))
        );
        // The profile's own feature gates survive.
        assert_eq!(doc["featureGates"], p.doc["featureGates"]);
    }

    fn repo() -> PathBuf {
        crate::paths::repo_root(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn every_checked_in_profile_loads() {
        for minor in ["1.36", "1.37"] {
            for p in PROFILES {
                let path = default_config(&repo(), p, minor).unwrap();
                let prof = load_profile(&path).unwrap_or_else(|e| panic!("{e:#}"));
                assert_eq!(prof.minor, minor);
                let img = crate::tools::versions::KindNodeImage::for_minor(minor).unwrap();
                assert_eq!(prof.node_image, img.reference(), "{}", path.display());
                assert_eq!(prof.k8s_version, img.version);
            }
        }
        assert!(default_config(&repo(), "nope", "1.37").is_err());
    }

    #[test]
    fn gang_profiles_turn_on_the_release_gang_set_and_the_job_integration() {
        for minor in ["1.36", "1.37"] {
            let r = K8sRelease::parse(minor).unwrap();
            let prof = load_profile(&default_config(&repo(), "gang", minor).unwrap()).unwrap();
            let gates: std::collections::BTreeMap<String, bool> =
                serde_json::from_value(prof.doc["featureGates"].clone()).unwrap();
            assert_eq!(gates, r.job_gang_feature_gates(), "gang-{minor}");
            let rc: std::collections::BTreeMap<String, String> =
                serde_json::from_value(prof.doc["runtimeConfig"].clone()).unwrap();
            assert_eq!(rc, r.gang_runtime_config(), "gang-{minor}");
            for p in ["baseline", "jobset"] {
                let prof = load_profile(&default_config(&repo(), p, minor).unwrap()).unwrap();
                assert!(prof.doc.get("featureGates").is_none(), "{p}-{minor}");
            }
        }
    }

    #[test]
    fn effective_config_mounts_the_audit_files_on_the_control_plane_only() {
        let prof = load_profile(&default_config(&repo(), "gang", "1.37").unwrap()).unwrap();
        let v = effective(
            &prof,
            Path::new("/state/e2e/audit-policy.yaml"),
            Path::new("/state/e2e/audit"),
        );
        let nodes = v["nodes"].as_array().unwrap();
        let cp = nodes.iter().find(|n| n["role"] == "control-plane").unwrap();
        let mounts = cp["extraMounts"].as_array().unwrap();
        assert_eq!(mounts[0]["hostPath"], "/state/e2e/audit-policy.yaml");
        assert_eq!(mounts[0]["containerPath"], NODE_AUDIT_POLICY);
        assert_eq!(mounts[0]["readOnly"], true);
        assert_eq!(mounts[1]["hostPath"], "/state/e2e/audit");
        assert_eq!(mounts[1]["containerPath"], NODE_AUDIT_DIR);
        for w in nodes.iter().filter(|n| n["role"] == "worker") {
            assert!(w.get("extraMounts").is_none());
        }
        // The rest is the profile's: gates, digest-pinned images, audit flags.
        assert_eq!(v["featureGates"]["WorkloadWithJob"], true);
        assert!(cp["image"].as_str().unwrap().contains("@sha256:"));
        let text = to_yaml(&v, &prof.path).unwrap();
        assert!(text.contains("audit-log-path"), "{text}");
        // Leader election outlasts a loaded machine, in both components.
        let patches = v["kubeadmConfigPatches"].as_array().unwrap();
        let election = patches.last().unwrap().as_str().unwrap();
        let patch = &crate::yaml::documents(election, "patch").unwrap()[0];
        for comp in ["controllerManager", "scheduler"] {
            let args = patch[comp]["extraArgs"].as_array().unwrap();
            let arg = |n: &str| {
                args.iter()
                    .find(|a| a["name"] == n)
                    .map(|a| a["value"].clone())
            };
            assert_eq!(
                arg("leader-elect-lease-duration"),
                Some(json!(patches::LEASE_DURATION)),
                "{comp}"
            );
            assert_eq!(
                arg("leader-elect-renew-deadline"),
                Some(json!(patches::RENEW_DEADLINE)),
                "{comp}"
            );
        }
        // kubeadm's waits outlast one too, in `kubeadm init` and `join`.
        let waits = |kind: &str| {
            let text = patches
                .iter()
                .filter_map(Value::as_str)
                .find(|p| p.starts_with(&format!("kind: {kind}\n")))
                .unwrap_or_else(|| panic!("no {kind} patch"));
            crate::yaml::documents(text, "patch").unwrap()[0]["timeouts"].clone()
        };
        assert_eq!(
            waits("InitConfiguration")["controlPlaneComponentHealthCheck"],
            "480s"
        );
        assert_eq!(waits("InitConfiguration")["kubernetesAPICall"], "120s");
        assert!(waits("InitConfiguration").get("discovery").is_none());
        assert_eq!(waits("JoinConfiguration")["discovery"], "600s");
        assert_eq!(waits("JoinConfiguration")["kubeletHealthCheck"], "480s");
        // A profile that sets leader election itself keeps its own.
        let mut own = prof.clone();
        own.doc["kubeadmConfigPatches"]
            .as_array_mut()
            .unwrap()
            .push(json!("kind: ClusterConfiguration\napiVersion: kubeadm.k8s.io/v1beta4\nscheduler:\n  extraArgs:\n    - name: leader-elect\n      value: \"false\"\n"));
        let w = effective(&own, Path::new("/p"), Path::new("/a"));
        let mut want = own.doc["kubeadmConfigPatches"].as_array().unwrap().clone();
        want.extend(patches::kubeadm_waits().into_iter().map(Value::String));
        assert_eq!(w["kubeadmConfigPatches"], Value::Array(want));
        // …and one that sets kubeadm's timeouts keeps its own.
        let mut own_waits = prof.clone();
        own_waits.doc["kubeadmConfigPatches"]
            .as_array_mut()
            .unwrap()
            .push(json!("kind: InitConfiguration\napiVersion: kubeadm.k8s.io/v1beta4\ntimeouts:\n  kubernetesAPICall: 30s\n"));
        let w = effective(&own_waits, Path::new("/p"), Path::new("/a"));
        let added = w["kubeadmConfigPatches"].as_array().unwrap().len()
            - own_waits.doc["kubeadmConfigPatches"]
                .as_array()
                .unwrap()
                .len();
        assert_eq!(added, 1, "the election patch only");
        // What kind reads back is what we built.
        let back = crate::yaml::documents(&text, "effective").unwrap();
        assert_eq!(back, vec![v.clone()]);
        // …and it still satisfies the harness's own checks.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("kind-config.yaml");
        std::fs::write(&f, &text).unwrap();
        let err = load_profile(&f).unwrap_err();
        assert!(
            format!("{err:#}").contains("where the harness mounts"),
            "an effective config is not a profile: {err:#}"
        );
    }

    #[test]
    fn bad_profiles_are_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let good =
            std::fs::read_to_string(default_config(&repo(), "baseline", "1.37").unwrap()).unwrap();
        let cases = [
            (
                good.replace("audit-log-path", "audit-log-pth"),
                "no kubeadm ClusterConfiguration patch",
            ),
            (
                good.replacen(
                    "@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5",
                    "",
                    1,
                ),
                "not kindest/node:vX.Y.Z@sha256",
            ),
            (
                good.replacen("v1.37.0@", "v1.36.4@", 1),
                "differs from nodes[0]",
            ),
            (
                good.replace("v1.37.0@", "v1.30.0@"),
                "unsupported Kubernetes version",
            ),
            (
                good.replace("control-plane", "worker"),
                "no control-plane node",
            ),
            (format!("{good}---\n{good}"), "found 2"),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let f = dir.path().join(format!("c{i}.yaml"));
            std::fs::write(&f, text).unwrap();
            let e = load_profile(&f).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "case {i}");
            let msg = format!("{e:#}");
            assert!(
                msg.contains(want) && msg.contains(&format!("c{i}.yaml")),
                "case {i}: {msg}"
            );
        }
        let e = load_profile(&dir.path().join("none.yaml")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }

    #[test]
    fn k8s_version_must_match_the_config() {
        let prof = load_profile(&default_config(&repo(), "jobset", "1.36").unwrap()).unwrap();
        check_minor(&prof, None).unwrap();
        check_minor(&prof, Some("1.36")).unwrap();
        let e = check_minor(&prof, Some("1.37")).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("1.37")
                && msg.contains("jobset-1.36.yaml")
                && msg.contains("Kubernetes 1.36"),
            "{msg}"
        );
        assert_eq!(
            image_version("kindest/node:v1.37.0@sha256:ab"),
            Some("1.37.0".into())
        );
        assert_eq!(image_version("kindest/node:latest"), None);
    }
}
