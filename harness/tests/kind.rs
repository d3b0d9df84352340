//! `harness up --provider kind`, `status` and `down` through the binary,
//! with docker, kind, kubectl and helm replaced by recording fake commands
//! (harness::cluster::kind::fakes): no Docker is needed, and the Kubernetes
//! API is not faked — the fake kubeconfig points at a closed port, so the
//! steps that need an API server fail, and these tests check that they fail
//! cleanly (cluster deleted, state removed, a message that says why).

mod common;
use common::{assert_code, text};

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use harness::cluster::Cluster;
use harness::cluster::kind::commands::KindEnv;
use harness::cluster::kind::fakes::{FakeCommands, KIND, kind_script};
use harness::cluster::kind::{KindCluster, KindImages, KindSpec};

struct Bed {
    tmp: tempfile::TempDir,
    fakes: FakeCommands,
}

fn bed() -> Bed {
    let (tmp, fakes) = FakeCommands::healthy_in_temp_dir();
    Bed { tmp, fakes }
}

impl Bed {
    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
        c.env("HARNESS_NO_PROGRESS", "1")
            .env("HARNESS_STATE_DIR", self.state())
            .env("PATH", self.fakes.path())
            .current_dir(common::repo_root())
            .args(args);
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("running harness")
    }
    fn state_entries(&self) -> usize {
        std::fs::read_dir(self.state())
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn up(b: &Bed, extra: &[&str]) -> Output {
    let mut args = vec!["up", "--provider", "kind", "--name", "e2e"];
    args.extend_from_slice(extra);
    b.run(&args)
}

#[test]
fn docker_missing_exits_3_with_what_to_install() {
    let b = bed();
    b.fakes.remove("docker");
    let o = up(&b, &[]);
    assert_code(&o, 3);
    assert!(text(&o).contains("docs.docker.com"), "{}", text(&o));
    assert_eq!(b.state_entries(), 0);
}

#[test]
fn docker_daemon_down_exits_3() {
    let b = bed();
    b.fakes.script(
        "docker",
        "printf 'Cannot connect to the Docker daemon\\n' >&2\nexit 1\n",
    );
    let o = up(&b, &["--config", "kind-configs/jobset-1.36.yaml"]);
    assert_code(&o, 3);
    assert!(
        text(&o).contains("Cannot connect to the Docker daemon"),
        "{}",
        text(&o)
    );
    assert_eq!(b.state_entries(), 0);
}

#[test]
fn a_taken_name_exits_2() {
    let b = bed();
    b.fakes.script(
        "kind",
        &kind_script(&KIND.replace(
            r#""get clusters") printf 'No kind clusters found.\n' >&2 ;;"#,
            r#""get clusters") printf 'harness-e2e\n' ;;"#,
        )),
    );
    let o = up(&b, &[]);
    assert_code(&o, 2);
    assert!(text(&o).contains("is taken"), "{}", text(&o));
    assert!(!b.fakes.calls().iter().any(|c| c.contains("create")));
    assert_eq!(b.state_entries(), 0);
}

#[test]
fn version_and_config_must_agree_and_flags_of_the_other_provider_are_refused() {
    let b = bed();
    let o = up(
        &b,
        &[
            "--config",
            "kind-configs/gang-1.36.yaml",
            "--k8s-version",
            "1.37",
        ],
    );
    assert_code(&o, 2);
    assert!(text(&o).contains("gang-1.36.yaml"), "{}", text(&o));
    let o = up(&b, &["--feature-gates", "GenericWorkload=true"]);
    assert_code(&o, 2);
    // --config is kind's; the Kueue timeout is the local provider's.
    let o = b.run(&[
        "up",
        "--name",
        "l",
        "--config",
        "kind-configs/gang-1.37.yaml",
    ]);
    assert_code(&o, 2);
    let o = up(&b, &["--kueue", "--kueue-pods-ready-timeout", "20"]);
    assert_code(&o, 2);
    assert!(
        text(&o).contains("--kueue-pods-ready-timeout"),
        "{}",
        text(&o)
    );
    let o = up(&b, &["--kind-profile", "nope"]);
    assert_code(&o, 2);
    assert!(b.fakes.calls().is_empty(), "{:?}", b.fakes.calls());
}

#[test]
fn kind_create_failing_is_quoted_and_nothing_is_left() {
    let b = bed();
    b.fakes.script(
        "kind",
        &kind_script(&KIND.replace(
            r#""create cluster") printf 'Creating cluster "%s" ...\n' "$4" >&2 ;;"#,
            r#""create cluster") printf 'ERROR: failed to create cluster: node(s) already exist for a cluster with the name "%s"\n' "$4" >&2; exit 1 ;;"#,
        )),
    );
    let o = up(&b, &["--k8s-version", "1.37"]);
    assert_code(&o, 1);
    assert!(
        text(&o).contains("node(s) already exist for a cluster with the name \"harness-e2e\""),
        "{}",
        text(&o)
    );
    deleted_then_network_released(&b.fakes.calls(), "harness-e2e");
    assert_eq!(b.state_entries(), 0);
}

/// The whole `up` through the binary: the default config of the profile,
/// then, before any controller is applied, every node's kube-proxy having
/// written its rules, which needs a real API server: it fails, nothing is
/// applied, and the cluster is deleted. (The release manifests' URLs and
/// the apply command are the unit tests' of `install::release`.)
#[test]
fn up_waits_for_kube_proxy_before_applying_then_fails_cleanly_without_an_api_server() {
    let b = bed();
    let o = up(&b, &["--kind-profile", "gang", "--kueue", "--timeout", "2"]);
    assert_code(&o, 1);
    let t = text(&o);
    assert!(
        t.contains("kube-proxy on 2 node(s): not reached within 2 s"),
        "{t}"
    );
    assert!(t.contains("harness-e2e deleted"), "{t}");
    let calls = b.fakes.calls();
    let create = calls.iter().find(|c| c.starts_with("kind create")).unwrap();
    assert!(create.contains("--name harness-e2e --config "), "{create}");
    let applies: Vec<&String> = calls
        .iter()
        .filter(|c| c.starts_with("kubectl") && c.contains(" apply "))
        .collect();
    assert!(applies.is_empty(), "{applies:?}");
    deleted_then_network_released(&calls, "harness-e2e");
    assert_eq!(b.state_entries(), 0);
}

#[test]
fn ctrl_c_during_kind_create_deletes_the_cluster() {
    let b = bed();
    b.fakes.script(
        "kind",
        &kind_script(&KIND.replace(
            r#""create cluster") printf 'Creating cluster "%s" ...\n' "$4" >&2 ;;"#,
            r#""create cluster") exec /bin/sleep 30 ;;"#,
        )),
    );
    let mut child = b
        .cmd(&["up", "--provider", "kind", "--name", "e2e"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !b.fakes.calls().iter().any(|c| c.starts_with("kind create")) {
        assert!(
            Instant::now() < deadline,
            "kind create never ran: {:?}",
            b.fakes.calls()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling a child process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    deleted_then_network_released(&b.fakes.calls(), "harness-e2e");
    assert_eq!(b.state_entries(), 0);
}

/// A kind cluster made through the library (the part of `up` that needs no
/// API server), then `status` and `down` through the binary.
#[tokio::test]
async fn status_and_down_of_a_kind_cluster() {
    let b = bed();
    let env = KindEnv {
        search_path: b.fakes.path(),
        state_root: b.state(),
    };
    let spec = KindSpec {
        name: "s".into(),
        config: common::repo_root().join("kind-configs/baseline-1.36.yaml"),
        k8s_version: None,
        wait: Duration::from_secs(60),
        images: KindImages::Pulled,
    };
    let c = KindCluster::start(&spec, &env).await.unwrap();
    let kc = c.kubeconfig().to_path_buf();
    let o = b.run(&["status", "--name", "s", "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the API server is unreachable: {}",
        text(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["provider"], "kind");
    assert_eq!(v[0]["k8s_version"], "1.36.4");
    assert_eq!(v[0]["kubeconfig"], kc.to_str().unwrap());
    let comps = v[0]["components"].as_array().unwrap();
    assert_eq!(comps[0]["component"], "harness-s-control-plane");
    assert_eq!(comps[0]["healthy"], true);
    assert_eq!(comps[2]["component"], "kube-apiserver");
    assert_eq!(comps[2]["healthy"], false);
    let o = b.run(&["down", "--name", "s"]);
    assert_code(&o, 0);
    let calls = b.fakes.calls();
    deleted_then_network_released(&calls, "harness-s");
    assert_eq!(
        calls[calls.len() - 3],
        format!(
            "kind delete cluster --name harness-s --kubeconfig {}",
            kc.display()
        )
    );
    assert_eq!(b.state_entries(), 0);
}

/// The last calls of a `down`: kind deletes the cluster, then the last
/// harness kind cluster takes the built images' network with it.
fn deleted_then_network_released(calls: &[String], kind_name: &str) {
    let n = calls.len();
    assert!(n >= 3, "{calls:?}");
    assert!(
        calls[n - 3].starts_with(&format!("kind delete cluster --name {kind_name}")),
        "{calls:?}"
    );
    assert_eq!(
        calls[n - 2..],
        [
            "docker network inspect --format {{len .Containers}} harness-kind".to_string(),
            "docker network rm harness-kind".to_string(),
        ],
        "{calls:?}"
    );
}
