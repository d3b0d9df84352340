//! The binaries a local cluster needs, where each comes from in Go module
//! land, and how to read each one's version back.

use crate::k8s::K8sRelease;
use crate::tools::versions::{ETCD_VERSION, JOBSET_VERSION, KWOK_VERSION};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    Etcd,
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Kubectl,
    Kwok,
    Jobset,
}

/// How to build a component from Go modules: a wrapper module that requires
/// `module@version` and builds `package`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoSource {
    /// Build tree name, shared by components built from one module version
    /// (the four Kubernetes commands share "k8s-1.37.1").
    pub tree: String,
    pub module: &'static str,
    /// With the leading "v".
    pub module_version: String,
    pub package: String,
    /// Whether the module's own go.mod replaces staging modules with local
    /// paths (k8s.io/kubernetes): the wrapper must replace them with the
    /// published staging versions.
    pub staging_replaces: Option<String>,
    pub ldflags: Vec<String>,
}

impl Component {
    pub const ALL: [Component; 7] = [
        Component::Etcd,
        Component::KubeApiserver,
        Component::KubeControllerManager,
        Component::KubeScheduler,
        Component::Kubectl,
        Component::Kwok,
        Component::Jobset,
    ];

    /// The binary's file name.
    pub fn name(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::KubeApiserver => "kube-apiserver",
            Component::KubeControllerManager => "kube-controller-manager",
            Component::KubeScheduler => "kube-scheduler",
            Component::Kubectl => "kubectl",
            Component::Kwok => "kwok",
            Component::Jobset => "jobset-controller",
        }
    }

    pub fn from_name(name: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The environment variable that names this binary explicitly,
    /// e.g. `HARNESS_KUBE_APISERVER_BIN`.
    pub fn env_var(self) -> String {
        format!(
            "HARNESS_{}_BIN",
            self.name().to_ascii_uppercase().replace('-', "_")
        )
    }

    pub fn is_kubernetes(self) -> bool {
        matches!(
            self,
            Component::KubeApiserver
                | Component::KubeControllerManager
                | Component::KubeScheduler
                | Component::Kubectl
        )
    }

    /// The pinned version (no leading v) for a Kubernetes release.
    /// Where the cache keeps this component at its pinned version.
    pub fn cached_path(self, cache_dir: &std::path::Path, k8s: K8sRelease) -> std::path::PathBuf {
        cache_dir
            .join("bin")
            .join(format!("{}-{}", self.name(), self.version(k8s)))
    }

    pub fn version(self, k8s: K8sRelease) -> String {
        match self {
            Component::Etcd => ETCD_VERSION.to_string(),
            Component::Kwok => KWOK_VERSION.to_string(),
            Component::Jobset => JOBSET_VERSION.to_string(),
            _ => k8s.version.to_string(),
        }
    }

    pub fn go_source(self, k8s: K8sRelease) -> GoSource {
        let v = self.version(k8s);
        match self {
            Component::Etcd => GoSource {
                tree: format!("etcd-{v}"),
                module: "go.etcd.io/etcd/server/v3",
                module_version: format!("v{v}"),
                package: "go.etcd.io/etcd/server/v3".into(),
                staging_replaces: None,
                // etcd's version is a constant in go.etcd.io/etcd/api/v3.
                ldflags: vec![],
            },
            Component::Kwok => GoSource {
                tree: format!("kwok-{v}"),
                module: "sigs.k8s.io/kwok",
                module_version: format!("v{v}"),
                package: "sigs.k8s.io/kwok/cmd/kwok".into(),
                staging_replaces: None,
                ldflags: vec![],
            },
            Component::Jobset => GoSource {
                tree: format!("jobset-{v}"),
                module: "sigs.k8s.io/jobset",
                module_version: format!("v{v}"),
                package: "sigs.k8s.io/jobset".into(),
                staging_replaces: None,
                ldflags: vec![format!("sigs.k8s.io/jobset/pkg/version.GitVersion=v{v}")],
            },
            _ => {
                let minor = k8s.minor_number();
                let mut ldflags = Vec::new();
                for pkg in [
                    "k8s.io/component-base/version",
                    "k8s.io/client-go/pkg/version",
                ] {
                    ldflags.push(format!("{pkg}.gitVersion=v{v}"));
                    ldflags.push(format!("{pkg}.gitMajor=1"));
                    ldflags.push(format!("{pkg}.gitMinor={minor}"));
                    ldflags.push(format!("{pkg}.gitTreeState=clean"));
                }
                GoSource {
                    tree: format!("k8s-{v}"),
                    module: "k8s.io/kubernetes",
                    module_version: format!("v{v}"),
                    package: format!("k8s.io/kubernetes/cmd/{}", self.name()),
                    staging_replaces: Some(k8s.staging_version()),
                    ldflags,
                }
            }
        }
    }

    /// The arguments that make the binary print its version, or None when it
    /// has no version command (the JobSet controller: its version is read
    /// from the Go build information embedded in the binary).
    pub fn version_args(self) -> Option<&'static [&'static str]> {
        match self {
            Component::Kubectl => Some(&["version", "--client"]),
            Component::Jobset => None,
            _ => Some(&["--version"]),
        }
    }

    /// Extract "X.Y.Z" from what the version command printed.
    pub fn parse_version(self, output: &str) -> Option<String> {
        let prefix = match self {
            Component::Etcd => "etcd Version: ",
            Component::Kubectl => "Client Version: v",
            Component::Kwok => "version v",
            Component::Jobset => "jobset ",
            _ => "Kubernetes v",
        };
        let start = output.find(prefix)? + prefix.len();
        let rest = output[start..].trim_start_matches('v');
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let v = v.trim_end_matches('.');
        (v.split('.').count() == 3).then(|| v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_env_vars() {
        assert_eq!(
            Component::KubeApiserver.env_var(),
            "HARNESS_KUBE_APISERVER_BIN"
        );
        assert_eq!(Component::Jobset.env_var(), "HARNESS_JOBSET_CONTROLLER_BIN");
        for c in Component::ALL {
            assert_eq!(Component::from_name(c.name()), Some(c));
        }
    }

    #[test]
    fn parse_version_outputs() {
        assert_eq!(
            Component::KubeApiserver.parse_version("Kubernetes v1.37.1\n"),
            Some("1.37.1".into())
        );
        assert_eq!(
            Component::Kubectl
                .parse_version("Client Version: v1.36.4\nKustomize Version: v5.7.1\n"),
            Some("1.36.4".into())
        );
        assert_eq!(
            Component::Etcd.parse_version(
                "etcd Version: 3.6.16\nGit SHA: GitNotFound\nGo Version: go1.26.8\n"
            ),
            Some("3.6.16".into())
        );
        assert_eq!(
            Component::KubeScheduler.parse_version("Kubernetes v0.0.0-master+$Format"),
            Some("0.0.0".into())
        );
        assert_eq!(Component::Etcd.parse_version("garbage"), None);
        assert_eq!(
            Component::KubeApiserver.parse_version("Kubernetes v1.3"),
            None
        );
    }

    #[test]
    fn kubernetes_sources_share_one_tree_and_stamp_versions() {
        let r = K8sRelease::parse("1.37").unwrap();
        let a = Component::KubeApiserver.go_source(r);
        let s = Component::KubeScheduler.go_source(r);
        assert_eq!(a.tree, s.tree);
        assert_eq!(a.package, "k8s.io/kubernetes/cmd/kube-apiserver");
        assert_eq!(a.staging_replaces.as_deref(), Some("v0.37.1"));
        assert!(
            a.ldflags
                .contains(&"k8s.io/component-base/version.gitVersion=v1.37.1".to_string())
        );
        assert!(
            a.ldflags
                .contains(&"k8s.io/client-go/pkg/version.gitMinor=37".to_string())
        );
        let e = Component::Etcd.go_source(r);
        assert_eq!(e.module_version, "v3.6.16");
        assert!(e.staging_replaces.is_none());
    }
}
