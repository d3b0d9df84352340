//! Where a real node's runtime comes from in Go module land: containerd
//! (its daemon, the runc shim and ctr), runc and the CNI reference plugins.
//! The kubelet and agnhost come from the Kubernetes tree (component.rs).

use crate::tools::go_source::GoSource;

/// The Go source of the binary `name` at version `v` (no leading "v"):
/// containerd, containerd-shim-runc-v2, ctr, runc and the CNI plugins
/// bridge, host-local and loopback; crictl, CoreDNS and kind.
pub fn go_source(name: &str, v: &str) -> GoSource {
    let containerd = |cmd: &str| GoSource {
        tree: format!("containerd-{v}"),
        module: "github.com/containerd/containerd/v2",
        module_version: format!("v{v}"),
        package: format!("github.com/containerd/containerd/v2/cmd/{cmd}"),
        staging_replaces: None,
        // What containerd's Makefile stamps (version/version.go).
        ldflags: vec![format!(
            "github.com/containerd/containerd/v2/version.Version=v{v}"
        )],
        main_go: None,
        cgo: false,
        tags: &[],
    };
    let cni = |dir: &str| GoSource {
        tree: format!("cni-plugins-{v}"),
        module: "github.com/containernetworking/plugins",
        module_version: format!("v{v}"),
        package: format!("github.com/containernetworking/plugins/plugins/{dir}"),
        staging_replaces: None,
        // What the plugins' build_linux.sh stamps (pkg/utils/buildversion).
        ldflags: vec![format!(
            "github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=v{v}"
        )],
        main_go: None,
        cgo: false,
        tags: &[],
    };
    match name {
        "containerd" | "containerd-shim-runc-v2" | "ctr" => containerd(name),
        // runc's Makefile builds with the seccomp tag (libseccomp through
        // cgo): kubelet asks for the RuntimeDefault profile for pod
        // sandboxes, which a runc without it refuses ("seccomp not
        // supported").
        "runc" => GoSource {
            tree: format!("runc-{v}"),
            module: "github.com/opencontainers/runc",
            module_version: format!("v{v}"),
            package: "github.com/opencontainers/runc".into(),
            staging_replaces: None,
            ldflags: vec![format!("main.version={v}")],
            main_go: None,
            cgo: true,
            tags: &["seccomp"],
        },
        "bridge" | "loopback" => cni(&format!("main/{name}")),
        "host-local" => cni("ipam/host-local"),
        // A kind node built here (tools/kindnode): crictl, as kind's base
        // image carries it; CoreDNS, whose main package is its module's
        // root (coredns.go), stamped as its Makefile does
        // (coremain.GitCommit); kind, as `go install sigs.k8s.io/kind`.
        "crictl" => GoSource {
            tree: format!("cri-tools-{v}"),
            module: "sigs.k8s.io/cri-tools",
            module_version: format!("v{v}"),
            package: "sigs.k8s.io/cri-tools/cmd/crictl".into(),
            staging_replaces: None,
            ldflags: vec![format!("sigs.k8s.io/cri-tools/pkg/version.Version=v{v}")],
            main_go: None,
            cgo: false,
            tags: &[],
        },
        "coredns" => GoSource {
            tree: format!("coredns-{v}"),
            module: "github.com/coredns/coredns",
            module_version: format!("v{v}"),
            package: "github.com/coredns/coredns".into(),
            staging_replaces: None,
            ldflags: vec![format!(
                "github.com/coredns/coredns/coremain.GitCommit=v{v}"
            )],
            main_go: None,
            cgo: false,
            tags: &[],
        },
        "kind" => GoSource {
            tree: format!("kind-{v}"),
            module: "sigs.k8s.io/kind",
            module_version: format!("v{v}"),
            package: "sigs.k8s.io/kind".into(),
            staging_replaces: None,
            ldflags: vec![],
            main_go: None,
            cgo: false,
            tags: &[],
        },
        other => panic!(
            "{other} is not built from containerd, runc, the CNI plugins, cri-tools, CoreDNS or kind"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tree_per_module_and_runc_alone_with_cgo() {
        let trees: std::collections::BTreeSet<String> =
            ["containerd", "containerd-shim-runc-v2", "ctr"]
                .map(|c| go_source(c, "2.4.2").tree)
                .into_iter()
                .collect();
        assert_eq!(trees.len(), 1);
        assert_eq!(
            go_source("host-local", "1.9.1").package,
            "github.com/containernetworking/plugins/plugins/ipam/host-local"
        );
        assert_eq!(
            go_source("bridge", "1.9.1").package,
            "github.com/containernetworking/plugins/plugins/main/bridge"
        );
        for c in [
            "containerd",
            "ctr",
            "runc",
            "bridge",
            "host-local",
            "loopback",
        ] {
            assert_eq!(go_source(c, "1.0.0").cgo, c == "runc", "{c}");
        }
    }
}
