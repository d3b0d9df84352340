//! Module versions the Go module proxy refuses that commands of a
//! Kubernetes release import, and so the binaries the harness cannot build
//! for that release (`unbuildable`). A pure function of the release and the
//! component: a build that cannot succeed fails at once (exit 3), saying
//! which module and which binaries, instead of after a toolchain download
//! and a `go mod tidy` that would name only the module. The harness never
//! works around a refusal by replacing or vendoring an upstream module.

use crate::error::env_missing;
use crate::k8s::K8sRelease;
use crate::tools::component::Component;

/// A module version the proxy refuses, and the commands of one release
/// that import it.
#[derive(Debug)]
pub struct RefusedModule {
    /// The pinned Kubernetes version whose commands import it
    /// ("1.38.0-beta.0"): an entry holds for that version only, and is
    /// checked again when the pin moves (a test fails until it is).
    pub k8s_version: &'static str,
    pub module: &'static str,
    /// With the leading "v".
    pub version: &'static str,
    /// The commands that import it. The others of the release build
    /// without it: the node's commands have a wrapper module of their own
    /// (component.rs `KubeTree`), and its `tool` lines leave these out.
    pub needed_by: &'static [Component],
    /// Where in k8s.io/kubernetes they import it.
    pub imported_in: &'static str,
    /// What cannot be had without them, and what still can.
    pub so: &'static str,
}

/// Measured 2026-12-07 with GOTOOLCHAIN=go1.27.3: the proxy serves
/// k8s.io/kubernetes v1.38.0-beta.0 and its staging modules at
/// v0.38.0-beta.0, and answers sigs.k8s.io/iptables-wrappers v1.0.0 with
/// 403. In v1.38.0-beta.0 only the kubelet and kube-proxy import it.
pub const REFUSED_MODULES: &[RefusedModule] = &[RefusedModule {
    k8s_version: "1.38.0-beta.0",
    module: "sigs.k8s.io/iptables-wrappers",
    version: "v1.0.0",
    needed_by: &[Component::Kubelet, Component::KubeProxy],
    imported_in: "pkg/kubelet/kubelet_network_linux.go; cmd/kube-proxy/app/server_linux.go and pkg/proxy",
    so: "a real node (`up --real-node`) and a kind node image of this release cannot be built here; \
         its control plane (`up` on the local provider) can",
}];

/// The refused module `c` of `k8s` imports, if any.
pub fn refused_module(k8s: K8sRelease, c: Component) -> Option<&'static RefusedModule> {
    REFUSED_MODULES
        .iter()
        .find(|m| m.k8s_version == k8s.version && m.needed_by.contains(&c))
}

/// Why `c` of `k8s` cannot be built here (exit 3: the environment lacks
/// the module), or None when the proxy refuses nothing it imports.
pub fn unbuildable(k8s: K8sRelease, c: Component) -> Option<anyhow::Error> {
    let m = refused_module(k8s, c)?;
    let needed_by: Vec<&str> = m.needed_by.iter().map(|c| c.name()).collect();
    let what = format!(
        "{name} v{version} cannot be built here: the Go module proxy refuses {module} {mv} \
         (HTTP 403), which Kubernetes v{version}'s {needed_by} import ({imported_in}); {so}",
        name = c.name(),
        version = k8s.version,
        module = m.module,
        mv = m.version,
        needed_by = needed_by.join(" and "),
        imported_in = m.imported_in,
        so = m.so,
    );
    let fix = format!(
        "provide {name} v{version} built elsewhere ({var}=/path/to/{name}, or on PATH), or let \
         the harness download it (--source auto or download, from the release host or \
         HARNESS_DOWNLOAD_BASE's mirror), or run a release whose modules the proxy serves \
         (--k8s-version {default})",
        name = c.name(),
        version = k8s.version,
        var = c.env_var(),
        default = K8sRelease::default_release().minor,
    );
    Some(env_missing(what, fix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::{K8S_PRERELEASES, K8S_RELEASES};

    fn k(minor: &str) -> K8sRelease {
        K8sRelease::parse(minor).unwrap()
    }

    #[test]
    fn kubelet_and_kube_proxy_of_1_38_are_refused_with_the_module_named() {
        for c in [Component::Kubelet, Component::KubeProxy] {
            let e = unbuildable(k("1.38"), c).expect("refused");
            assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_ENV);
            let text = format!("{e:#}");
            assert!(
                text.starts_with(&format!(
                    "{} v1.38.0-beta.0 cannot be built here: the Go module proxy refuses \
                     sigs.k8s.io/iptables-wrappers v1.0.0 (HTTP 403), which Kubernetes \
                     v1.38.0-beta.0's kubelet and kube-proxy import",
                    c.name()
                )),
                "{text}"
            );
            assert!(
                text.contains("a real node (`up --real-node`) and a kind node image"),
                "{text}"
            );
            assert!(
                text.contains(&format!("to fix: provide {} v1.38.0-beta.0", c.name()))
                    && text.contains(&c.env_var())
                    && text.contains("--k8s-version 1.37"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_control_plane_and_the_other_releases_are_not_refused() {
        // What `up --k8s-version 1.38` runs builds without the module.
        for c in Component::CLUSTER {
            assert!(refused_module(k("1.38"), c).is_none(), "{}", c.name());
        }
        for c in [Component::Kubeadm, Component::Agnhost] {
            assert!(refused_module(k("1.38"), c).is_none(), "{}", c.name());
        }
        for minor in ["1.36", "1.37"] {
            for c in Component::ALL {
                assert!(unbuildable(k(minor), c).is_none(), "{minor} {}", c.name());
            }
        }
    }

    #[test]
    fn every_entry_is_for_a_pinned_version() {
        // A pin that moves leaves its entry unchecked: this fails until the
        // entry is measured again and moved or removed.
        for m in REFUSED_MODULES {
            assert!(
                K8S_RELEASES
                    .iter()
                    .chain(K8S_PRERELEASES)
                    .any(|r| r.version == m.k8s_version),
                "{} is no pinned release",
                m.k8s_version
            );
        }
    }
}
