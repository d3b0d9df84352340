//! The kind provider's external commands: finding docker, kind, kubectl
//! and helm, the preflight checks and the command lines the provider runs
//! (as data, so tests can check them), run by tools::command.
//!
//! Tests replace these programs with *recording fake commands* (see
//! `fakes`): the search path is a parameter here, never read from the
//! process environment below `KindEnv::from_process`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::error::env_missing;
use crate::tools::command::{Cmd, output, run, tail};
use crate::tools::versions::KIND_VERSION;

/// Where the kind provider looks for programs and keeps cluster state.
#[derive(Debug, Clone)]
pub struct KindEnv {
    /// A PATH-style list of directories.
    pub search_path: OsString,
    /// The parent of the per-cluster state directories.
    pub state_root: PathBuf,
}

impl KindEnv {
    /// `$PATH`, then the harness's own kind and kubectl
    /// (`<cache>/kind-bin`, see [`tools_dir`]), and the harness's state dir
    /// (`$HARNESS_STATE_DIR`, …).
    pub fn from_process() -> KindEnv {
        let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        dirs.push(tools_dir());
        KindEnv {
            search_path: std::env::join_paths(dirs).unwrap_or_default(),
            state_root: crate::paths::clusters_dir(),
        }
    }

    pub fn cluster_dir(&self, name: &str) -> PathBuf {
        self.state_root.join(name)
    }
}

/// Where `harness tools install` links the kind and kubectl it built
/// (`kind`, `kubectl`), searched after `$PATH`.
pub fn tools_dir() -> PathBuf {
    crate::paths::cache_dir().join("kind-bin")
}

/// Link the kind and kubectl in the harness cache (when built there) into
/// [`tools_dir`] as `kind` and `kubectl`.
pub fn link_tools(k8s: crate::k8s::K8sRelease) -> Result<()> {
    use crate::tools::Component;
    let cache = crate::paths::cache_dir();
    let dir = tools_dir();
    for c in [Component::Kind, Component::Kubectl] {
        let target = c.cached_path(&cache, k8s);
        if !target.is_file() {
            continue;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let link = dir.join(c.name());
        let tmp = dir.join(format!(".{}.tmp", c.name()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&target, &tmp)
            .with_context(|| format!("linking {}", link.display()))?;
        std::fs::rename(&tmp, &link).with_context(|| format!("linking {}", link.display()))?;
    }
    Ok(())
}

/// The programs the kind provider uses, by absolute path. (Helm is HPCC's
/// installer's, found there: install/hpcc.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindTools {
    pub docker: PathBuf,
    pub kind: PathBuf,
    pub kubectl: PathBuf,
}

/// What to install when a program is missing.
pub fn install_hint(program: &str) -> String {
    match program {
        "docker" => "Docker Engine (https://docs.docker.com/engine/install/) or Docker Desktop, with `docker` on PATH".into(),
        "kind" => format!(
            "kind v{KIND_VERSION}: `harness tools install --kind` builds it from its Go module, or `go install sigs.k8s.io/kind@v{KIND_VERSION}`"
        ),
        "kubectl" => {
            "kubectl: `harness tools install --kind` links the one it builds, or https://kubernetes.io/docs/tasks/tools/".into()
        }
        other => other.to_string(),
    }
}

/// Find every program on `search_path`; one error naming all that are
/// missing (exit 3).
pub fn find_tools(search_path: &OsString) -> Result<KindTools> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in ["docker", "kind", "kubectl"] {
        match which::which_in(name, Some(search_path), &cwd) {
            Ok(p) => found.push(p),
            Err(_) => missing.push(name),
        }
    }
    if !missing.is_empty() {
        return Err(env_missing(
            format!(
                "the kind provider needs {} on PATH; not found: {}",
                "docker, kind and kubectl",
                missing.join(", ")
            ),
            missing
                .iter()
                .map(|m| format!("install {}", install_hint(m)))
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    let mut it = found.into_iter();
    let mut next = || it.next().expect("three programs found");
    Ok(KindTools {
        docker: next(),
        kind: next(),
        kubectl: next(),
    })
}

/// "kind v0.33.0 go1.25.1 linux/amd64" → (0, 33, 0).
pub fn parse_kind_version(text: &str) -> Option<(u32, u32, u32)> {
    let v = text.split_whitespace().find_map(|w| w.strip_prefix('v'))?;
    let core = v.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// What the preflight learned: kind's version line and the cgroup
/// version of the engine's host (`cluster::kind::cgroup_driver`).
pub struct Preflight {
    pub kind_version: String,
    pub cgroup_v1: bool,
}

/// The Docker daemon answers, and kind is the pinned version (or newer,
/// with a warning).
pub async fn preflight(tools: &KindTools) -> Result<Preflight> {
    let info = Cmd::new(
        &tools.docker,
        &["info", "--format", "{{.ServerVersion}} {{.CgroupVersion}}"],
    );
    let out = output(&info).await?;
    if !out.status.success() {
        return Err(env_missing(
            format!(
                "the Docker daemon is not reachable: `{}` failed ({}):\n{}",
                info.display(),
                out.status,
                tail(&out, 8)
            ),
            "start Docker (`sudo systemctl start docker`, or Docker Desktop) and make sure your user may use it: `docker info` must succeed",
        ));
    }
    let engine = String::from_utf8_lossy(&out.stdout).to_string();
    let cgroup_v1 = crate::cluster::kind::cgroup_driver::host_is_v1(
        engine.split_whitespace().nth(1).unwrap_or(""),
    );
    let ver = Cmd::new(&tools.kind, &["version"]);
    let out = run(&ver).await?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let want = parse_kind_version(&format!("v{KIND_VERSION}")).expect("KIND_VERSION is x.y.z");
    match parse_kind_version(&text) {
        None => Err(env_missing(
            format!("cannot read kind's version from `kind version`: {text:?}"),
            format!("install {}", install_hint("kind")),
        )),
        Some(v) if v < want => Err(env_missing(
            format!(
                "kind {text:?} is older than v{KIND_VERSION}, the release the pinned node images were built for"
            ),
            format!("install {}", install_hint("kind")),
        )),
        Some(v) => {
            if v != want {
                tracing::warn!(
                    "{text}: the node images are pinned for kind v{KIND_VERSION}; a newer kind supports them best effort"
                );
            }
            Ok(Preflight {
                kind_version: text,
                cgroup_v1,
            })
        }
    }
}

/// crictl's deadline for each call to containerd: its own default (2 s)
/// ran out stopping a container on a loaded machine ("StopContainer …
/// context deadline exceeded", k8s.io/cri-client `StopContainer` adds it
/// to the stop's grace period). 2 min is the kubelet's own
/// `--runtime-request-timeout` default, so the harness waits for the
/// runtime as long as the kubelet does.
pub const CRICTL_TIMEOUT: &str = "2m";

/// The command lines of the provider, as data.
pub mod plan {
    use super::*;

    pub fn get_clusters(t: &KindTools) -> Cmd {
        Cmd::new(&t.kind, &["get", "clusters"])
    }

    pub fn create(
        t: &KindTools,
        kind_name: &str,
        config: &Path,
        kubeconfig: &Path,
        wait: Duration,
    ) -> Cmd {
        Cmd::new(
            &t.kind,
            &[
                "create",
                "cluster",
                "--name",
                kind_name,
                "--config",
                &config.to_string_lossy(),
                "--kubeconfig",
                &kubeconfig.to_string_lossy(),
                "--wait",
                &format!("{}s", wait.as_secs()),
                // The nodes of a failed create are kept for the harness to
                // read, then deleted by it (KindCluster::create).
                "--retain",
            ],
        )
    }

    pub fn get_kubeconfig(t: &KindTools, kind_name: &str) -> Cmd {
        Cmd::new(&t.kind, &["get", "kubeconfig", "--name", kind_name])
    }

    pub fn get_nodes(t: &KindTools, kind_name: &str) -> Cmd {
        Cmd::new(&t.kind, &["get", "nodes", "--name", kind_name])
    }

    /// `--kubeconfig` keeps kind away from the user's ~/.kube/config.
    pub fn delete(kind: &Path, kind_name: &str, kubeconfig: &Path) -> Cmd {
        Cmd::new(
            kind,
            &[
                "delete",
                "cluster",
                "--name",
                kind_name,
                "--kubeconfig",
                &kubeconfig.to_string_lossy(),
            ],
        )
    }

    /// Prints "<status> <pid>", e.g. "running 4242".
    pub fn inspect(docker: &Path, container: &str) -> Cmd {
        Cmd::new(
            docker,
            &[
                "inspect",
                "--format",
                "{{.State.Status}} {{.State.Pid}}",
                container,
            ],
        )
    }

    /// Every container of the control-plane node's containerd, ended ones
    /// too, as JSON (kind's node image has crictl): restarts::restarted.
    pub fn crictl_ps(docker: &Path, control_plane: &str) -> Cmd {
        crictl(docker, control_plane, &["ps", "-a", "-o", "json"])
    }

    /// crictl in a node, with the harness's deadline for the runtime.
    fn crictl(docker: &Path, node: &str, args: &[&str]) -> Cmd {
        let head = ["exec", node, "crictl", "--timeout", CRICTL_TIMEOUT];
        Cmd::new(docker, &[&head[..], args].concat())
    }

    /// The last `lines` lines of a control-plane node container's log.
    pub fn crictl_logs(docker: &Path, control_plane: &str, id: &str, lines: usize) -> Cmd {
        let lines = lines.to_string();
        crictl(docker, control_plane, &["logs", "--tail", &lines, id])
    }

    /// etcd's metrics, from inside the control-plane node: kubeadm's etcd
    /// serves them on http://127.0.0.1:2381 there, and kind's node image
    /// has curl.
    pub fn etcd_metrics(docker: &Path, control_plane: &str) -> Cmd {
        Cmd::new(
            docker,
            &[
                "exec",
                control_plane,
                "curl",
                "-sS",
                "--fail",
                "--max-time",
                "10",
                "http://127.0.0.1:2381/metrics",
            ],
        )
    }

    /// A control-plane component's metrics, from inside the control-plane
    /// node: kubeadm's scheduler (10259) and controller manager (10257)
    /// serve them on 127.0.0.1 to an authorized client, so the request
    /// carries the client certificate of the node's admin.conf (written to
    /// a temporary directory, removed after); the serving certificate is
    /// the component's self-signed one.
    pub fn component_metrics(docker: &Path, control_plane: &str, port: u16) -> Cmd {
        let script = format!(
            "set -e; k=/etc/kubernetes/admin.conf; d=$(mktemp -d); \
             trap 'rm -rf \"$d\"' EXIT; \
             sed -n 's/^ *client-certificate-data: *//p' $k | base64 -d > \"$d/c\"; \
             sed -n 's/^ *client-key-data: *//p' $k | base64 -d > \"$d/k\"; \
             curl -sS --fail --max-time 10 -k --cert \"$d/c\" --key \"$d/k\" https://127.0.0.1:{port}/metrics"
        );
        Cmd::new(docker, &["exec", control_plane, "sh", "-c", &script])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> KindTools {
        KindTools {
            docker: "/x/docker".into(),
            kind: "/x/kind".into(),
            kubectl: "/x/kubectl".into(),
        }
    }

    #[test]
    fn kind_versions_parse() {
        assert_eq!(
            parse_kind_version("kind v0.33.0 go1.25.1 linux/amd64"),
            Some((0, 33, 0))
        );
        assert_eq!(
            parse_kind_version("kind v0.34.0-alpha+abc go1.25"),
            Some((0, 34, 0))
        );
        assert_eq!(parse_kind_version("kind version unknown"), None);
    }

    #[test]
    fn command_lines() {
        let t = tools();
        let c = plan::create(
            &t,
            "harness-e2e",
            Path::new("/s/e2e/kind-config.yaml"),
            Path::new("/s/e2e/kubeconfig"),
            Duration::from_secs(120),
        );
        assert_eq!(
            c.display(),
            "kind create cluster --name harness-e2e --config /s/e2e/kind-config.yaml --kubeconfig /s/e2e/kubeconfig --wait 120s --retain"
        );
        assert_eq!(
            plan::delete(&t.kind, "harness-e2e", Path::new("/s/e2e/kubeconfig")).display(),
            "kind delete cluster --name harness-e2e --kubeconfig /s/e2e/kubeconfig"
        );
        assert_eq!(
            plan::etcd_metrics(&t.docker, "harness-e2e-control-plane").args,
            [
                "exec",
                "harness-e2e-control-plane",
                "curl",
                "-sS",
                "--fail",
                "--max-time",
                "10",
                "http://127.0.0.1:2381/metrics"
            ]
        );
    }

    #[test]
    fn missing_programs_are_named_with_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let e = find_tools(&dir.path().as_os_str().to_os_string()).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(msg.contains("not found: docker, kind, kubectl"), "{msg}");
        assert!(msg.contains("harness tools install --kind"), "{msg}");
    }
}
