//! Container images made here rather than pulled (these machines reach no
//! registry): OCI image layout archives — the format `ctr images import`
//! and `docker load` read: `oci-layout`, `index.json` and content-addressed
//! blobs, per the OCI image-layout specification. An image is an optional
//! base layer (an uncompressed root filesystem tar made elsewhere, such as
//! a Debian root filesystem) and one layer of files (static binaries).
//! The real node's agnhost image and a kind node's component images are
//! written this way.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;
use sha2::{Digest, Sha256};

/// One image.
#[derive(Debug, Clone, Default)]
pub struct ImageSpec {
    /// The reference it is imported under ("registry.k8s.io/etcd:3.6.16-0").
    pub name: String,
    /// An uncompressed tar to use as the first layer, as it is.
    pub base_layer: Option<PathBuf>,
    /// Files of the top layer: path inside the image (no leading "/"),
    /// the file to copy, its mode.
    pub files: Vec<(String, PathBuf, u32)>,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// "KEY=VALUE".
    pub env: Vec<String>,
    /// Image labels: where its contents came from.
    pub labels: Vec<(String, String)>,
    /// "UID:GID" the image runs as (none: root).
    pub user: Option<String>,
}

pub fn sha256_hex(data: &[u8]) -> String {
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

fn append_dir(tar: &mut tar::Builder<impl Write>, name: &str) -> Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_size(0);
    h.set_mode(0o755);
    h.set_mtime(0);
    h.set_cksum();
    tar.append_data(&mut h, format!("{name}/"), std::io::empty())
        .with_context(|| format!("adding {name}/ to the image layer"))
}

/// The top layer: every parent directory, then each file.
fn files_layer(files: &[(String, PathBuf, u32)]) -> Result<Vec<u8>> {
    let mut layer = tar::Builder::new(Vec::new());
    let mut dirs = BTreeSet::new();
    for (path, _, _) in files {
        let mut p = Path::new(path.trim_start_matches('/')).parent();
        while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
            dirs.insert(d.to_string_lossy().into_owned());
            p = d.parent();
        }
    }
    for d in &dirs {
        append_dir(&mut layer, d)?;
    }
    for (path, source, mode) in files {
        let data =
            std::fs::read(source).with_context(|| format!("reading {}", source.display()))?;
        append(&mut layer, path.trim_start_matches('/'), &data, *mode)?;
    }
    layer.into_inner().context("finishing the image layer")
}

/// Write `spec` as an OCI image layout archive to `out` (atomically).
pub fn write_archive(spec: &ImageSpec, out: &Path) -> Result<()> {
    let mut layers = Vec::new();
    if let Some(base) = &spec.base_layer {
        layers.push(std::fs::read(base).with_context(|| format!("reading {}", base.display()))?);
    }
    if !spec.files.is_empty() {
        layers.push(files_layer(&spec.files)?);
    }
    let digests: Vec<String> = layers
        .iter()
        .map(|l| format!("sha256:{}", sha256_hex(l)))
        .collect();
    let mut config = json!({});
    if !spec.entrypoint.is_empty() {
        config["Entrypoint"] = json!(spec.entrypoint);
    }
    if !spec.cmd.is_empty() {
        config["Cmd"] = json!(spec.cmd);
    }
    if !spec.env.is_empty() {
        config["Env"] = json!(spec.env);
    }
    if let Some(u) = &spec.user {
        config["User"] = json!(u);
    }
    if !spec.labels.is_empty() {
        config["Labels"] = spec
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    let config = serde_json::to_vec(&json!({
        "architecture": crate::tools::release::host_arch().unwrap_or("amd64"),
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": digests},
    }))?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": format!("sha256:{}", sha256_hex(&config)),
            "size": config.len(),
        },
        "layers": layers.iter().zip(&digests).map(|(l, d)| json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar",
            "digest": d,
            "size": l.len(),
        })).collect::<Vec<_>>(),
    }))?;
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": format!("sha256:{}", sha256_hex(&manifest)),
            "size": manifest.len(),
            "annotations": {
                "io.containerd.image.name": spec.name,
                "org.opencontainers.image.ref.name": spec.name,
            },
        }],
    }))?;
    let tmp = out.with_extension("tar.tmp");
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    append(
        &mut tar,
        "oci-layout",
        br#"{"imageLayoutVersion":"1.0.0"}"#,
        0o644,
    )?;
    append(&mut tar, "index.json", &index, 0o644)?;
    let mut seen = BTreeSet::new();
    for blob in layers
        .iter()
        .map(Vec::as_slice)
        .chain([&config[..], &manifest[..]])
    {
        let hex = sha256_hex(blob);
        if seen.insert(hex.clone()) {
            append(&mut tar, &format!("blobs/sha256/{hex}"), blob, 0o644)?;
        }
    }
    tar.into_inner()
        .context("finishing the image archive")?
        .flush()
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, out)
        .with_context(|| format!("renaming {} to {}", tmp.display(), out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::io::Read;

    fn read_tar(data: &[u8]) -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut tar = tar::Archive::new(data);
        for e in tar.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut d = vec![];
            e.read_to_end(&mut d).unwrap();
            files.insert(name, d);
        }
        files
    }

    /// Every blob index.json and the manifest name is in the archive under
    /// its own digest; the config names each layer's digest in order; the
    /// top layer has the files under their parents.
    #[test]
    fn the_archive_is_content_addressed_throughout() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("etcd");
        std::fs::write(&bin, b"\x7fELF not really").unwrap();
        let base = dir.path().join("base.tar");
        let mut b = tar::Builder::new(Vec::new());
        append(&mut b, "etc/os-release", b"ID=debian\n", 0o644).unwrap();
        std::fs::write(&base, b.into_inner().unwrap()).unwrap();
        let out = dir.path().join("image.tar");
        let spec = ImageSpec {
            name: "registry.k8s.io/etcd:3.6.16-0".into(),
            base_layer: Some(base),
            files: vec![("usr/local/bin/etcd".into(), bin, 0o755)],
            entrypoint: vec!["/usr/local/bin/etcd".into()],
            env: vec!["PATH=/usr/local/bin:/usr/bin:/bin".into()],
            labels: vec![(
                "harness.built-from".into(),
                "go.etcd.io/etcd/server/v3@v3.6.16".into(),
            )],
            ..Default::default()
        };
        write_archive(&spec, &out).unwrap();
        let files = read_tar(&std::fs::read(&out).unwrap());
        for (name, data) in &files {
            if let Some(hex) = name.strip_prefix("blobs/sha256/") {
                assert_eq!(hex, sha256_hex(data), "{name}");
            }
        }
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let m = &index["manifests"][0];
        assert_eq!(
            m["annotations"]["io.containerd.image.name"],
            "registry.k8s.io/etcd:3.6.16-0"
        );
        let key = |d: &serde_json::Value| format!("blobs/sha256/{}", &d.as_str().unwrap()[7..]);
        let manifest: serde_json::Value =
            serde_json::from_slice(&files[&key(&m["digest"])]).unwrap();
        let config: serde_json::Value =
            serde_json::from_slice(&files[&key(&manifest["config"]["digest"])]).unwrap();
        assert_eq!(manifest["layers"].as_array().unwrap().len(), 2);
        for i in 0..2 {
            assert_eq!(
                config["rootfs"]["diff_ids"][i],
                manifest["layers"][i]["digest"]
            );
        }
        assert_eq!(config["config"]["Entrypoint"][0], "/usr/local/bin/etcd");
        assert_eq!(
            config["config"]["Labels"]["harness.built-from"],
            "go.etcd.io/etcd/server/v3@v3.6.16"
        );
        let base_layer = read_tar(&files[&key(&manifest["layers"][0]["digest"])]);
        assert!(base_layer.contains_key("etc/os-release"));
        let top = read_tar(&files[&key(&manifest["layers"][1]["digest"])]);
        assert_eq!(
            top.keys().collect::<Vec<_>>(),
            vec!["usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/etcd"]
        );
    }
}
