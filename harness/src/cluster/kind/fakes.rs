//! Recording fake commands, for tests of the kind provider on machines
//! without Docker: small `sh` scripts named docker, kind, kubectl and helm,
//! written into a directory that the test puts first on the search path.
//! Each appends its name and arguments to a log and prints canned output;
//! they use only shell built-ins, so the search path can be their directory
//! alone. They stand in for the programs, never for the Kubernetes API:
//! the kubeconfig the fake kind prints points at a closed port.
//!
//! Test support: compiled for this crate's unit tests, and with the
//! `testkit` feature (which harness's own dev-dependency on itself turns
//! on) for the integration tests under harness/tests/. Never in a release
//! build of the library or the binary.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A directory of fake programs and the log they append to.
pub struct FakeCommands {
    pub dir: PathBuf,
    pub log: PathBuf,
}

/// A kubeconfig for a server nobody listens on (port 1 on loopback).
pub const FAKE_KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: kind-fake\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: kind-fake\n  user:\n    token: fake\ncontexts:\n- name: kind-fake\n  context:\n    cluster: kind-fake\n    user: kind-fake\ncurrent-context: kind-fake\n";

impl FakeCommands {
    /// Fakes of all four programs with the behaviour of a working machine
    /// (Docker up, kind v0.33.0, no kind clusters yet). Replace one with
    /// `script` to change it.
    pub fn healthy(dir: &Path) -> FakeCommands {
        let f = FakeCommands {
            dir: dir.to_path_buf(),
            log: dir.join("calls.log"),
        };
        f.script("docker", DOCKER);
        f.script("kind", &kind_script(KIND));
        f.script("kubectl", "exit 0\n");
        f
    }

    /// `healthy` fakes in `bin/` of a new temporary directory, which the
    /// caller keeps alive (and may use for state next to `bin/`).
    pub fn healthy_in_temp_dir() -> (tempfile::TempDir, FakeCommands) {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).expect("creating bin/ for the fakes");
        let fakes = FakeCommands::healthy(&bin);
        (tmp, fakes)
    }

    /// Write fake `name`: record the call, then run `body` (sh, built-ins
    /// only).
    pub fn script(&self, name: &str, body: &str) {
        let text = format!(
            "#!/bin/sh\nprintf '%s' '{name}' >> '{log}'\nfor a in \"$@\"; do printf ' %s' \"$a\" >> '{log}'; done\nprintf '\\n' >> '{log}'\n{body}",
            log = self.log.display()
        );
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("writing a fake command");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("making a fake command executable");
    }

    /// Remove fake `name` (to test a missing program).
    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.dir.join(name)).expect("removing a fake command");
    }

    /// Every call so far, "program arg arg …", in order.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The search path: this directory alone.
    pub fn path(&self) -> std::ffi::OsString {
        self.dir.clone().into_os_string()
    }
}

/// `docker info` answers; every container is running; `exec … curl` prints
/// one metric line; the built-image network exists, empty, and goes.
pub const DOCKER: &str = r#"case "$1" in
  info) printf '29.0.0 2\n' ;;
  network) case "$2" in inspect) printf '0\n' ;; rm) ;; *) exit 2 ;; esac ;;
  inspect) printf 'running 4242\n' ;;
  image) printf 'sha256:0fa4e\n' ;;
  exec) printf 'etcd_server_has_leader 1\n' ;;
  *) printf 'fake docker: unexpected %s\n' "$1" >&2; exit 2 ;;
esac
"#;

/// (`docker image inspect` finds every image: the pinned node image is
/// there, so `--kind-images auto` uses it.)
/// kind v0.33.0 with no clusters; `create` succeeds; nodes are
/// `<name>-control-plane` and `<name>-worker`.
pub const KIND: &str = r#"case "$1 $2" in
  "version "*) printf 'kind v0.33.0 go1.25.1 linux/amd64\n' ;;
  "get clusters") printf 'No kind clusters found.\n' >&2 ;;
  "create cluster") printf 'Creating cluster "%s" ...\n' "$4" >&2 ;;
  "get kubeconfig") cat_kubeconfig ;;
  "get nodes") printf '%s-control-plane\n%s-worker\n' "$4" "$4" ;;
  "delete cluster") printf 'Deleting cluster "%s" ...\n' "$4" >&2 ;;
  *) printf 'fake kind: unexpected %s %s\n' "$1" "$2" >&2; exit 2 ;;
esac
"#;

/// The kind script with `cat_kubeconfig` defined as a shell function that
/// prints FAKE_KUBECONFIG.
pub fn kind_script(body: &str) -> String {
    format!("cat_kubeconfig() {{\nprintf '%s' '{FAKE_KUBECONFIG}'\n}}\n{body}")
}
