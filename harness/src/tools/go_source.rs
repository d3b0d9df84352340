//! What building one binary from Go modules takes (component.rs and
//! node_sources.rs fill it in; build.rs builds it).

/// How to build a component from Go modules: a wrapper module that requires
/// `module@version` and builds `package` — an upstream command, or the
/// wrapper's own `main_go` when the upstream module has no main package.
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
