//! The real node's one container image, made here rather than pulled (this
//! machine reaches no registry): an OCI image layout archive
//! (tools/oci.rs) whose single layer holds the agnhost binary. Its default
//! command is `agnhost pause`, which is what the node's pod sandboxes run;
//! containers give their own arguments (`netexec`, `pause`, …).

use std::path::Path;

use anyhow::Result;

use crate::tools::oci::{ImageSpec, write_archive as write_oci};

/// The image's name in containerd's `k8s.io` namespace; its tag is the
/// Kubernetes release whose agnhost it holds.
pub fn image_name(k8s_version: &str) -> String {
    crate::tools::kindnode::images::agnhost_name(k8s_version)
}

/// The image of `agnhost` (a static binary) named `name`.
pub fn spec(agnhost: &Path, name: &str) -> ImageSpec {
    ImageSpec {
        name: name.to_string(),
        files: vec![("agnhost".into(), agnhost.to_path_buf(), 0o755)],
        entrypoint: vec!["/agnhost".into()],
        cmd: vec!["pause".into()],
        ..Default::default()
    }
}

/// Write the image archive of `agnhost` named `name` to `out`.
pub fn write_archive(agnhost: &Path, name: &str, out: &Path) -> Result<()> {
    write_oci(&spec(agnhost, name), out)
}
