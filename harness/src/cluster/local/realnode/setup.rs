//! Before the node's containerd starts: its binaries linked under the
//! names containerd and CNI call them by, and its image archive; once it
//! runs, the image imported.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cluster::local::layout::Layout;
use crate::cluster::local::realnode::dirs::NodeDirs;
use crate::cluster::local::realnode::host;
use crate::cluster::local::realnode::image;
use crate::tools::{Component, Tools};

/// Make the node's directories and link the binaries under the names
/// containerd and CNI call them by.
fn link_binaries(d: &NodeDirs, shim: &Path, runc: &Path, cni: &[(&str, &Path)]) -> Result<()> {
    for dir in [
        d.bin(),
        d.cni_bin(),
        d.cni_conf(),
        d.socket().with_file_name(""),
    ] {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let link = |target: &Path, at: PathBuf| -> Result<()> {
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(target, &at)
            .with_context(|| format!("linking {} to {}", at.display(), target.display()))
    };
    link(shim, d.bin().join("containerd-shim-runc-v2"))?;
    link(runc, d.bin().join("runc"))?;
    for (name, path) in cni {
        link(path, d.cni_bin().join(name))?;
    }
    Ok(())
}

/// Before the node's containerd starts: its binaries linked under the
/// names they are called by, and its image archive.
pub fn lay_out(l: &Layout, tools: &Tools, k8s_version: &str) -> Result<()> {
    let d = l.node();
    std::fs::create_dir_all(d.root())
        .with_context(|| format!("creating {}", d.root().display()))?;
    host::record(&host::proc_sys(), &d.host_before())?;
    let cni = [
        ("bridge", tools.path(Component::CniBridge)?),
        ("host-local", tools.path(Component::CniHostLocal)?),
        ("loopback", tools.path(Component::CniLoopback)?),
    ];
    link_binaries(
        &d,
        tools.path(Component::ContainerdShim)?,
        tools.path(Component::Runc)?,
        &cni,
    )?;
    image::write_archive(
        tools.path(Component::Agnhost)?,
        &image::image_name(k8s_version),
        &d.image_archive(),
    )
}

/// `ctr images import` of the node's image into containerd's `k8s.io`
/// namespace, where the kubelet's CRI looks.
pub fn import_image(d: &NodeDirs, tools: &Tools) -> Result<()> {
    let ctr = tools.path(Component::Ctr)?;
    let out = std::process::Command::new(ctr)
        .arg(format!("--address={}", d.socket().display()))
        .args(["--namespace=k8s.io", "images", "import"])
        .arg(d.image_archive())
        .output()
        .with_context(|| format!("running {}", ctr.display()))?;
    if !out.status.success() {
        bail!(
            "importing the node's image into containerd failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
