//! A kind node image built here (`ensure`): the root filesystem, the
//! binaries resolved, the images kubeadm runs written as OCI archives and
//! the node assembled — tagged by a key over every input, so an unchanged
//! node is found again (`find_built`) and a changed one built anew.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::k8s::K8sRelease;
use crate::progress::Step;
use crate::tools::component::Component;
use crate::tools::kindnode::docker;
use crate::tools::kindnode::images;
use crate::tools::kindnode::node;
use crate::tools::kindnode::rootfs;
use crate::tools::resolve::Resolver;
use crate::tools::versions::KIND_VERSION;

/// Bumped when the assembly (node.rs, images.rs) changes what it makes.
const REVISION: u32 = 1;

/// The binaries a node image holds, and where in the node.
const NODE_BINARIES: &[(Component, &str)] = &[
    (Component::Kubelet, "usr/bin/kubelet"),
    (Component::Kubeadm, "usr/bin/kubeadm"),
    (Component::Kubectl, "usr/bin/kubectl"),
    (Component::Containerd, "usr/local/bin/containerd"),
    (
        Component::ContainerdShim,
        "usr/local/bin/containerd-shim-runc-v2",
    ),
    (Component::Ctr, "usr/local/bin/ctr"),
    (Component::Crictl, "usr/local/bin/crictl"),
    (Component::Runc, "usr/local/sbin/runc"),
    (Component::CniBridge, "opt/cni/bin/bridge"),
    (Component::CniHostLocal, "opt/cni/bin/host-local"),
    (Component::CniLoopback, "opt/cni/bin/loopback"),
];

/// Built into images kubeadm runs (images.rs).
const IMAGE_BINARIES: &[Component] = &[
    Component::KubeApiserver,
    Component::KubeControllerManager,
    Component::KubeScheduler,
    Component::KubeProxy,
    Component::Etcd,
    Component::Coredns,
    Component::Agnhost,
];

/// Everything a kind node image built here needs resolved.
pub fn components() -> Vec<Component> {
    let mut v: Vec<Component> = NODE_BINARIES.iter().map(|(c, _)| *c).collect();
    v.extend(IMAGE_BINARIES);
    v.push(Component::Kind);
    v
}

/// A node image, ready.
#[derive(Debug, Clone)]
pub struct BuiltNode {
    /// "harness.local/kind-node:v1.37.1-<key>".
    pub image: String,
    /// "1.37.1".
    pub version: String,
    /// Seconds each step took (empty when the image was cached).
    pub timings: Vec<(String, f64)>,
}

/// The repository the node images are tagged in.
pub const NODE_REPO: &str = "harness.local/kind-node";

fn file_sha256(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", h.finalize()))
}

/// The node image of `k8s`, built when missing.
pub fn ensure(k8s: K8sRelease) -> Result<BuiltNode> {
    let dockerbin = docker::docker()?;
    docker::check_engine(&dockerbin)?;
    let mut timings = Vec::new();
    let kind_dir =
        crate::tools::modules::module_dir("sigs.k8s.io/kind", &format!("v{KIND_VERSION}"))?;
    let plan = rootfs::RootfsPlan::new(&kind_dir)?;
    // The root filesystem first: it needs no binary (and is also the
    // image cache's key).
    let cache = crate::paths::cache_dir();
    let t = Instant::now();
    let rootfs_tar = rootfs::ensure(&plan, &cache, &dockerbin)?;
    timings.push(("root filesystem".to_string(), t.elapsed().as_secs_f64()));
    let resolver = Resolver::from_env(k8s, BTreeMap::new());
    if let Some(problem) = &resolver.invalid_env {
        return Err(crate::error::bad_input(problem.clone()));
    }
    let t = Instant::now();
    let mut bins: BTreeMap<Component, PathBuf> = BTreeMap::new();
    for c in components() {
        let r = resolver
            .resolve(c)
            .with_context(|| format!("{} for the kind node image", c.name()))?;
        bins.insert(c, r.path);
    }
    timings.push(("binaries".to_string(), t.elapsed().as_secs_f64()));

    let mut h = Sha256::new();
    h.update(format!(
        "revision {REVISION}\nkind {KIND_VERSION}\nrootfs {}\n",
        plan.key
    ));
    // Only what goes into the image: kind's own binary is not in it (its
    // version is), and the kind on PATH (ci/install-tools.sh's) differs
    // from the one the harness builds, which made each environment build
    // the node again and remove the other's.
    for (c, p) in bins.iter().filter(|(c, _)| **c != Component::Kind) {
        h.update(format!("{} {}\n", c.name(), file_sha256(p)?));
    }
    let key = format!("{:x}", h.finalize());
    let image = format!("{NODE_REPO}:v{}-{}", k8s.version, &key[..12]);
    if docker::has_image(&dockerbin, &image) {
        return Ok(BuiltNode {
            image,
            version: k8s.version.to_string(),
            timings: Vec::new(),
        });
    }

    let t = Instant::now();
    let kubeadm = &bins[&Component::Kubeadm];
    let out = crate::tools::exec::output_with_timeout(
        std::process::Command::new(kubeadm).args([
            "config",
            "images",
            "list",
            "--kubernetes-version",
            &format!("v{}", k8s.version),
        ]),
        std::time::Duration::from_secs(60),
    )
    .context("kubeadm config images list")?;
    let list = images::parse_kubeadm_list(&String::from_utf8_lossy(&out.stdout), k8s)
        .context("reading `kubeadm config images list`")?;
    let bin = |c: Component| {
        bins.get(&c)
            .cloned()
            .with_context(|| format!("{} was not resolved", c.name()))
    };
    let specs = images::kubeadm_images(&list, k8s, &bin, &rootfs_tar)?;
    let scratch = cache
        .join("kind")
        .join(format!("build-{}", std::process::id()));
    std::fs::create_dir_all(scratch.join("archives"))
        .with_context(|| format!("creating {}", scratch.display()))?;
    let step = Step::start(format!(
        "writing {} component images as OCI archives",
        specs.len()
    ));
    let mut archives = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let out = scratch.join("archives").join(format!("{i:02}.tar"));
        crate::tools::oci::write_archive(s, &out)
            .with_context(|| format!("writing the image {}", s.name))?;
        archives.push(out);
    }
    step.done("written");
    timings.push(("component images".to_string(), t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let parts = node::NodeParts {
        base_image: plan.image(),
        kind_dir,
        binaries: NODE_BINARIES
            .iter()
            .map(|(c, at)| node::Placed {
                at: at.to_string(),
                from: bins[c].clone(),
                mode: 0o755,
            })
            .collect(),
        version: format!("v{}", k8s.version),
        pause: list.pause.clone(),
        archives,
        image: image.clone(),
    };
    let made = node::assemble(&dockerbin, &parts, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    made?;
    timings.push(("node assembly".to_string(), t.elapsed().as_secs_f64()));
    remove_older(&dockerbin, k8s, &image);
    Ok(BuiltNode {
        image,
        version: k8s.version.to_string(),
        timings,
    })
}

/// Older node images of the same release (another key): not used again.
fn remove_older(dockerbin: &Path, k8s: K8sRelease, keep: &str) {
    let Ok(tags) = docker::stdout(
        dockerbin,
        &[
            "image",
            "ls",
            NODE_REPO,
            "--format",
            "{{.Repository}}:{{.Tag}}",
        ],
    ) else {
        return;
    };
    let prefix = format!("{NODE_REPO}:v{}-", k8s.version);
    for t in tags
        .lines()
        .filter(|t| t.starts_with(&prefix) && *t != keep)
    {
        let _ = docker::run(dockerbin, &["image", "rm", t]);
    }
}

/// The newest node image of `k8s` already built (no build).
pub fn find_built(k8s: K8sRelease) -> Option<String> {
    let dockerbin = docker::docker().ok()?;
    let tags = docker::stdout(
        &dockerbin,
        &[
            "image",
            "ls",
            NODE_REPO,
            "--format",
            "{{.Repository}}:{{.Tag}}",
        ],
    )
    .ok()?;
    let prefix = format!("{NODE_REPO}:v{}-", k8s.version);
    tags.lines()
        .find(|t| t.starts_with(&prefix))
        .map(str::to_string)
}
