//! What building one binary from Go modules takes (component.rs and
//! node_sources.rs fill it in; build.rs builds it).

/// How to build a component from Go modules: a wrapper module that requires
/// `module@version` and builds `package` — an upstream command, or the
/// wrapper's own `main_go` when the upstream module has no main package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoSource {
    /// Build tree name, shared by the components built in one wrapper
    /// module (the control plane's four Kubernetes commands share
    /// "k8s-1.37.1", the node's four "k8s-node-1.37.1": component.rs
    /// `KubeTree`).
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
    /// A main.go the harness writes into the wrapper module (then `package`
    /// is "."): for commands whose main lives outside their module, such as
    /// kubectl, whose `main` is in k8s.io/kubernetes/cmd/kubectl.
    pub main_go: Option<String>,
    /// Build with cgo (runc: its seccomp support links libseccomp);
    /// everything else is built with CGO_ENABLED=0.
    pub cgo: bool,
    /// `go build -tags`.
    pub tags: &'static [&'static str],
}

impl GoSource {
    /// Which builds go one after another, never side by side (`up`'s and
    /// `tools install`'s: `side_by_side`; the test runner's:
    /// suites/src/builds.rs): those of one module version, whatever their
    /// tree, a chain as `build_cost::longest_chain_first` orders them. They
    /// compile the same packages, and the Go build cache shares finished
    /// work, not work in progress: two at once would each compile them. So
    /// the control plane's and the node's Kubernetes commands, two trees of
    /// one version (component.rs `KubeTree`), take turns as when they were
    /// one tree. A chain holds whole trees, so no build waits for its
    /// tree's lock while holding a turn.
    pub fn chain(&self) -> String {
        format!("{}@{}", self.module, self.module_version)
    }
}
