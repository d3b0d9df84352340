//! Where each component's official release artifact lives and how it is
//! verified: the download source of the resolver (tools/download.rs).
//!
//! | component | artifact | checksum |
//! |---|---|---|
//! | kube-apiserver, -controller-manager, -scheduler, kubectl, hpcc-kubectl | `https://dl.k8s.io/release/v{V}/bin/linux/{arch}/{bin}` (raw ELF) | `<url>.sha256`, bare hex |
//! | etcd | `https://github.com/etcd-io/etcd/releases/download/v{V}/etcd-v{V}-linux-{arch}.tar.gz`, member `etcd-v{V}-linux-{arch}/etcd` | `SHA256SUMS` of the release, `hex  name` lines |
//! | kwok | `https://github.com/kubernetes-sigs/kwok/releases/download/v{V}/kwok-linux-{arch}` (raw) | none published: pinned in versions.rs |
//! | jobset-controller, kueue-controller | none: both ship their controller as an image only | — |
//!
//! `HARNESS_DOWNLOAD_BASE` replaces every host with one mirror laid out as
//! `<base>/kubernetes/v{V}/bin/linux/{arch}/{bin}` (+ `.sha256`),
//! `<base>/etcd/v{V}/etcd-v{V}-linux-{arch}.tar.gz` (+ `<base>/etcd/v{V}/SHA256SUMS`)
//! and `<base>/kwok/v{V}/kwok-linux-{arch}` (checked against the pin).

use crate::k8s::K8sRelease;
use crate::tools::component::Component;
use crate::tools::versions::kwok_release_sha256;

pub const KUBERNETES_RELEASE_HOST: &str = "https://dl.k8s.io/release";
pub const ETCD_RELEASE_HOST: &str = "https://github.com/etcd-io/etcd/releases/download";
pub const KWOK_RELEASE_HOST: &str = "https://github.com/kubernetes-sigs/kwok/releases/download";

/// What the downloaded bytes are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checksum {
    /// A file beside the artifact holding its SHA-256 as bare hex.
    Sidecar { url: String },
    /// A `sha256sum` listing (`<hex>  <name>` lines) with a line for `name`.
    Sums { url: String, name: String },
    /// A digest pinned in tools/versions.rs.
    Pinned { hex: &'static str },
}

impl Checksum {
    /// For messages: where the expected digest came from.
    pub fn origin(&self) -> String {
        match self {
            Checksum::Sidecar { url } => url.clone(),
            Checksum::Sums { url, name } => format!("{url} (line for {name})"),
            Checksum::Pinned { .. } => "the digest pinned in harness/src/tools/versions.rs".into(),
        }
    }
}

/// How the binary sits in the artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packaging {
    /// The artifact is the executable.
    Raw,
    /// A gzipped tarball; the executable is the member at this path.
    TarGz { member: String },
}

/// One component's release artifact for this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub url: String,
    pub checksum: Checksum,
    pub packaging: Packaging,
}

impl Artifact {
    /// "dl.k8s.io", for messages.
    pub fn host(&self) -> &str {
        let rest = self.url.split_once("://").map_or(&*self.url, |(_, r)| r);
        rest.split('/').next().unwrap_or(rest)
    }
}

/// The release architecture name of this machine, if releases exist for it.
pub fn host_arch() -> Option<&'static str> {
    if std::env::consts::OS != "linux" {
        return None;
    }
    match std::env::consts::ARCH {
        "x86_64" => Some("amd64"),
        "aarch64" => Some("arm64"),
        _ => None,
    }
}

/// The artifact of `c` for `arch`, from the release hosts or, with `base`,
/// from a mirror of their layout. Err says why there is none.
pub fn artifact(
    c: Component,
    k8s: K8sRelease,
    base: Option<&str>,
    arch: &str,
) -> Result<Artifact, String> {
    let v = c.version(k8s);
    let base = base.map(|b| b.trim_end_matches('/'));
    match c {
        Component::KubeApiserver
        | Component::KubeControllerManager
        | Component::KubeScheduler
        | Component::Kubectl
        | Component::Kubelet
        | Component::Kubeadm
        | Component::KubeProxy
        | Component::HpccKubectl => {
            let dir = match base {
                Some(b) => format!("{b}/kubernetes/v{v}"),
                None => format!("{KUBERNETES_RELEASE_HOST}/v{v}"),
            };
            // HPCC's kubectl is the release kubectl at its own version.
            let url = format!("{dir}/bin/linux/{arch}/{}", c.path_name());
            Ok(Artifact {
                checksum: Checksum::Sidecar {
                    url: format!("{url}.sha256"),
                },
                url,
                packaging: Packaging::Raw,
            })
        }
        Component::Etcd => {
            let dir = match base {
                Some(b) => format!("{b}/etcd/v{v}"),
                None => format!("{ETCD_RELEASE_HOST}/v{v}"),
            };
            let name = format!("etcd-v{v}-linux-{arch}.tar.gz");
            Ok(Artifact {
                url: format!("{dir}/{name}"),
                checksum: Checksum::Sums {
                    url: format!("{dir}/SHA256SUMS"),
                    name,
                },
                packaging: Packaging::TarGz {
                    member: format!("etcd-v{v}-linux-{arch}/etcd"),
                },
            })
        }
        Component::Kwok => {
            let hex = kwok_release_sha256(&v, arch).ok_or_else(|| {
                format!(
                    "kwok publishes no checksums and no digest of kwok v{v} linux/{arch} is pinned in tools/versions.rs"
                )
            })?;
            let dir = match base {
                Some(b) => format!("{b}/kwok/v{v}"),
                None => format!("{KWOK_RELEASE_HOST}/v{v}"),
            };
            Ok(Artifact {
                url: format!("{dir}/kwok-linux-{arch}"),
                checksum: Checksum::Pinned { hex },
                packaging: Packaging::Raw,
            })
        }
        Component::Jobset => {
            Err("JobSet publishes its controller only as a container image, no binary".to_string())
        }
        Component::Kueue => {
            Err("Kueue publishes its controller only as a container image, no binary".to_string())
        }
        Component::KueuePerfRunner => Err(
            "Kueue's performance runner is a test program: it is built from its module, never published"
                .to_string(),
        ),
        Component::Agnhost => {
            Err("agnhost is published only as a container image, no binary".to_string())
        }
        // A real node's runtime (Component::is_node_runtime): their
        // projects publish release tarballs with checksums, which the
        // harness does not fetch yet; it builds them instead.
        _ => Err(format!(
            "no download source for {} yet (its release archive is not fetched by the harness)",
            c.name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(minor: &str) -> K8sRelease {
        K8sRelease::parse(minor).unwrap()
    }

    #[test]
    fn kubernetes_binaries_come_from_dl_k8s_io_with_a_sha256_beside_them() {
        let a = artifact(Component::KubeScheduler, k("1.37"), None, "amd64").unwrap();
        assert_eq!(
            a.url,
            "https://dl.k8s.io/release/v1.37.1/bin/linux/amd64/kube-scheduler"
        );
        assert_eq!(
            a.checksum,
            Checksum::Sidecar {
                url: "https://dl.k8s.io/release/v1.37.1/bin/linux/amd64/kube-scheduler.sha256"
                    .into()
            }
        );
        assert_eq!(a.packaging, Packaging::Raw);
        assert_eq!(a.host(), "dl.k8s.io");
        let h = artifact(Component::HpccKubectl, k("1.36"), None, "arm64").unwrap();
        assert_eq!(
            h.url,
            "https://dl.k8s.io/release/v1.29.7/bin/linux/arm64/kubectl"
        );
    }

    #[test]
    fn etcd_is_a_tarball_checked_against_the_release_sha256sums() {
        let a = artifact(Component::Etcd, k("1.37"), None, "amd64").unwrap();
        assert_eq!(
            a.url,
            "https://github.com/etcd-io/etcd/releases/download/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz"
        );
        assert_eq!(
            a.checksum,
            Checksum::Sums {
                url: "https://github.com/etcd-io/etcd/releases/download/v3.6.16/SHA256SUMS".into(),
                name: "etcd-v3.6.16-linux-amd64.tar.gz".into()
            }
        );
        assert_eq!(
            a.packaging,
            Packaging::TarGz {
                member: "etcd-v3.6.16-linux-amd64/etcd".into()
            }
        );
    }

    #[test]
    fn a_mirror_replaces_every_host_with_one_layout() {
        let base = Some("http://mirror.example/harness/");
        let k8s = k("1.37");
        let url = |c| artifact(c, k8s, base, "amd64").unwrap();
        assert_eq!(
            url(Component::KubeApiserver).url,
            "http://mirror.example/harness/kubernetes/v1.37.1/bin/linux/amd64/kube-apiserver"
        );
        assert_eq!(
            url(Component::HpccKubectl).url,
            "http://mirror.example/harness/kubernetes/v1.29.7/bin/linux/amd64/kubectl"
        );
        let etcd = url(Component::Etcd);
        assert_eq!(
            etcd.url,
            "http://mirror.example/harness/etcd/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz"
        );
        assert_eq!(
            etcd.checksum.origin(),
            "http://mirror.example/harness/etcd/v3.6.16/SHA256SUMS (line for etcd-v3.6.16-linux-amd64.tar.gz)"
        );
        let kwok = url(Component::Kwok);
        assert_eq!(
            kwok.url,
            "http://mirror.example/harness/kwok/v0.8.0/kwok-linux-amd64"
        );
        assert!(matches!(kwok.checksum, Checksum::Pinned { .. }));
        assert_eq!(kwok.host(), "mirror.example");
    }

    #[test]
    fn jobset_and_unpinned_kwok_have_no_artifact_and_say_why() {
        let e = artifact(Component::Jobset, k("1.37"), None, "amd64").unwrap_err();
        assert!(e.contains("container image"), "{e}");
        let e = artifact(Component::Kwok, k("1.37"), None, "riscv64").unwrap_err();
        assert!(e.contains("no digest of kwok v0.8.0 linux/riscv64"), "{e}");
    }
}
