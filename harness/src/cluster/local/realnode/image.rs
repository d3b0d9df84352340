//! The real node's one container image, made here rather than pulled (this
//! machine reaches no registry): an OCI image layout archive (the format
//! `ctr images import` reads: oci-layout, index.json and content-addressed
//! blobs, per the OCI image-layout specification) whose single layer holds
//! the agnhost binary. Its default command is `agnhost pause`, which is
//! what the node's pod sandboxes run; containers give their own
//! arguments (`netexec`, `pause`, …).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The image's name in containerd's `k8s.io` namespace; its tag is the
/// Kubernetes release whose agnhost it holds.
pub fn image_name(k8s_version: &str) -> String {
    format!("harness.local/agnhost:v{k8s_version}")
}

fn sha256_hex(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

/// A tar member named `name` holding `data`.
fn append(tar: &mut tar::Builder<impl Write>, name: &str, data: &[u8], mode: u32) -> Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_size(data.len() as u64);
    h.set_mode(mode);
    h.set_mtime(0);
    h.set_cksum();
    tar.append_data(&mut h, name, data)
        .with_context(|| format!("adding {name} to the image archive"))
}

/// Write the image archive of `agnhost` (a static binary) named `name` to
/// `out`.
pub fn write_archive(agnhost: &Path, name: &str, out: &Path) -> Result<()> {
    let binary =
        std::fs::read(agnhost).with_context(|| format!("reading {}", agnhost.display()))?;
    let mut layer = tar::Builder::new(Vec::new());
    append(&mut layer, "agnhost", &binary, 0o755)?;
    let layer = layer.into_inner().context("finishing the image layer")?;
    let layer_digest = format!("sha256:{}", sha256_hex(&layer));
    let config = serde_json::to_vec(&json!({
        "architecture": crate::tools::release::host_arch().unwrap_or("amd64"),
        "os": "linux",
        "config": {"Entrypoint": ["/agnhost"], "Cmd": ["pause"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }))?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": format!("sha256:{}", sha256_hex(&config)),
            "size": config.len(),
        },
        "layers": [{
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": layer_digest,
            "size": layer.len(),
        }],
    }))?;
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": format!("sha256:{}", sha256_hex(&manifest)),
            "size": manifest.len(),
            "annotations": {"io.containerd.image.name": name},
        }],
    }))?;
    let file = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    append(
        &mut tar,
        "oci-layout",
        br#"{"imageLayoutVersion":"1.0.0"}"#,
        0o644,
    )?;
    append(&mut tar, "index.json", &index, 0o644)?;
    for blob in [&layer, &config, &manifest] {
        let path = format!("blobs/sha256/{}", sha256_hex(blob));
        append(&mut tar, &path, blob, 0o644)?;
    }
    tar.into_inner()
        .context("finishing the image archive")?
        .flush()
        .with_context(|| format!("writing {}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Every blob index.json and the manifest name is in the archive under
    /// its own digest, and the config names the layer's digest.
    #[test]
    fn the_archive_is_content_addressed_throughout() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("agnhost");
        std::fs::write(&bin, b"\x7fELF not really").unwrap();
        let out = dir.path().join("image.tar");
        write_archive(&bin, &image_name("1.37.1"), &out).unwrap();
        let mut files = std::collections::BTreeMap::new();
        let mut tar = tar::Archive::new(std::fs::File::open(&out).unwrap());
        for e in tar.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut data = vec![];
            e.read_to_end(&mut data).unwrap();
            files.insert(name, data);
        }
        for (name, data) in &files {
            if let Some(hex) = name.strip_prefix("blobs/sha256/") {
                assert_eq!(hex, sha256_hex(data), "{name}");
            }
        }
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let m = &index["manifests"][0];
        assert_eq!(
            m["annotations"]["io.containerd.image.name"],
            "harness.local/agnhost:v1.37.1"
        );
        let key = |d: &serde_json::Value| format!("blobs/sha256/{}", &d.as_str().unwrap()[7..]);
        let manifest: serde_json::Value =
            serde_json::from_slice(&files[&key(&m["digest"])]).unwrap();
        let config: serde_json::Value =
            serde_json::from_slice(&files[&key(&manifest["config"]["digest"])]).unwrap();
        assert_eq!(
            config["rootfs"]["diff_ids"][0],
            manifest["layers"][0]["digest"]
        );
        let layer = &files[&key(&manifest["layers"][0]["digest"])];
        let mut inner = tar::Archive::new(&layer[..]);
        let names: Vec<String> = inner
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, vec!["agnhost"]);
    }
}
