//! The kind provider against recording fake commands (see `fakes`): the
//! command plan, the state it writes and its error paths. No Docker here;
//! the Kubernetes API is never faked (the fake kubeconfig points at a
//! closed port, and the provider is expected to say so).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::kind::commands::KindEnv;
use crate::cluster::kind::fakes::{FakeCommands, KIND, kind_script};
use crate::cluster::kind::*;
use crate::error::exit_code;

struct Bed {
    _tmp: tempfile::TempDir,
    fakes: FakeCommands,
    env: KindEnv,
}

fn bed() -> Bed {
    let (tmp, fakes) = FakeCommands::healthy_in_temp_dir();
    let env = KindEnv {
        search_path: fakes.path(),
        state_root: tmp.path().join("state"),
    };
    Bed {
        _tmp: tmp,
        fakes,
        env,
    }
}

fn profile(p: &str, minor: &str) -> PathBuf {
    config::default_config(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
        p,
        minor,
    )
    .unwrap()
}

fn spec(name: &str) -> KindSpec {
    KindSpec {
        name: name.into(),
        config: profile("gang", "1.37"),
        k8s_version: Some("1.37".into()),
        wait: Duration::from_secs(90),
        images: KindImages::Pulled,
    }
}

fn state_entries(env: &KindEnv) -> Vec<String> {
    std::fs::read_dir(&env.state_root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn up_status_down_runs_the_planned_commands_and_leaves_nothing() {
    let b = bed();
    let c = KindCluster::start(&spec("e2e"), &b.env).await.unwrap();
    let root = b.env.cluster_dir("e2e");
    let kc = root.join("kubeconfig");
    let cfg = root.join("kind-config.yaml");
    assert_eq!(
        b.fakes.calls(),
        [
            "docker info --format {{.ServerVersion}}".to_string(),
            "kind version".into(),
            "kind get clusters".into(),
            format!(
                "kind create cluster --name harness-e2e --config {} --kubeconfig {} --wait 90s --retain",
                cfg.display(),
                kc.display()
            ),
            "kind get kubeconfig --name harness-e2e".into(),
            "kind get nodes --name harness-e2e".into(),
        ]
    );
    // state.json: what AnyCluster and other processes attach with.
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["provider"], "kind");
    assert_eq!(state["kind_cluster"], "harness-e2e");
    assert_eq!(state["k8s_version"], "1.37.0");
    assert_eq!(state["kubeconfig"], kc.to_str().unwrap());
    assert_eq!(
        state["nodes"],
        serde_json::json!(["harness-e2e-control-plane", "harness-e2e-worker"])
    );
    assert_eq!(state["kind_version"], "kind v0.33.0 go1.25.1 linux/amd64");
    // Files: the kubeconfig kind printed (private), the effective config
    // with this cluster's mounts, the policy, an empty world-readable log.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        std::fs::read_to_string(&kc).unwrap(),
        fakes::FAKE_KUBECONFIG
    );
    assert_eq!(mode(&kc), 0o600);
    assert_eq!(mode(&root), 0o700);
    let eff = std::fs::read_to_string(&cfg).unwrap();
    let audit_dir = root.join("audit");
    assert!(
        eff.contains(&format!("hostPath: {}", audit_dir.display())),
        "{eff}"
    );
    assert!(eff.contains(config::NODE_AUDIT_POLICY), "{eff}");
    assert!(eff.contains("WorkloadWithJob: true"), "{eff}");
    assert_eq!(
        std::fs::read_to_string(root.join("audit-policy.yaml")).unwrap(),
        crate::cluster::local::AUDIT_POLICY
    );
    assert_eq!(mode(&audit_dir.join("audit.log")), 0o644);
    drop(c);

    // Attach by name, as `harness status` does.
    let c = KindCluster::load_in("e2e", &b.env).unwrap();
    assert_eq!(c.kubeconfig(), kc);
    let health = c.health().await;
    let names: Vec<&str> = health.iter().map(|h| h.component.as_str()).collect();
    assert_eq!(
        names,
        [
            "harness-e2e-control-plane",
            "harness-e2e-worker",
            "kube-apiserver"
        ]
    );
    assert!(health[0].healthy && health[0].running && health[0].pid == Some(4242));
    let api = &health[2];
    assert!(api.running, "the control-plane container runs");
    assert!(
        !api.healthy,
        "nothing serves the fake kubeconfig: {}",
        api.health
    );
    c.check_containers().unwrap();

    // etcd metrics come from inside the control-plane container.
    assert_eq!(
        c.etcd_metrics().await.unwrap(),
        "etcd_server_has_leader 1\n"
    );
    assert!(b.fakes.calls().iter().any(|l| l
        == "docker exec harness-e2e-control-plane curl -sS --fail --max-time 10 http://127.0.0.1:2381/metrics"));

    // The audit log is read from the host file with the shared reader.
    assert_eq!(c.audit_end().unwrap(), 0);
    let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"create","user":{"username":"system:serviceaccount:kube-system:job-controller"},"objectRef":{"resource":"pods","namespace":"default","name":"p","apiVersion":"v1"},"responseStatus":{"code":201}}"#;
    std::fs::write(audit_dir.join("audit.log"), format!("{line}\n")).unwrap();
    let (events, end) = c.audit_events(0).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].key(), "create pods");
    assert_eq!(end, c.audit_end().unwrap());

    let e = c.set_capacity(&NodeSpec::default()).await.unwrap_err();
    assert_eq!(exit_code(&e), 2);
    assert!(e.to_string().contains("real containers"), "{e}");

    let before = b.fakes.calls().len();
    c.down(false).unwrap();
    assert_eq!(
        b.fakes.calls()[before..],
        [format!(
            "kind delete cluster --name harness-e2e --kubeconfig {}",
            kc.display()
        )]
    );
    assert!(!root.exists());
}

#[tokio::test]
async fn down_keep_keeps_the_state() {
    let b = bed();
    let c = KindCluster::start(&spec("keep"), &b.env).await.unwrap();
    c.down(true).unwrap();
    assert!(b.env.cluster_dir("keep").join("state.json").is_file());
    assert!(
        b.fakes
            .calls()
            .last()
            .unwrap()
            .starts_with("kind delete cluster --name harness-keep")
    );
}

#[tokio::test]
async fn docker_missing_is_exit_3_and_touches_nothing() {
    let b = bed();
    b.fakes.remove("docker");
    b.fakes.remove("kubectl");
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 3);
    let msg = format!("{e:#}");
    assert!(msg.contains("not found: docker, kubectl"), "{msg}");
    assert!(
        msg.contains("https://docs.docker.com/engine/install/"),
        "{msg}"
    );
    assert!(b.fakes.calls().is_empty());
    assert!(state_entries(&b.env).is_empty());
}

#[tokio::test]
async fn docker_daemon_down_is_exit_3_quoting_docker() {
    let b = bed();
    b.fakes.script(
        "docker",
        "printf 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\\n' >&2\nexit 1\n",
    );
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 3);
    let msg = format!("{e:#}");
    assert!(msg.contains("Docker daemon is not reachable"), "{msg}");
    assert!(msg.contains("Is the docker daemon running?"), "{msg}");
    assert!(msg.contains("start Docker"), "{msg}");
    assert_eq!(b.fakes.calls(), ["docker info --format {{.ServerVersion}}"]);
    assert!(state_entries(&b.env).is_empty());
}

#[tokio::test]
async fn an_old_kind_is_exit_3_naming_the_pinned_version() {
    let b = bed();
    b.fakes.script(
        "kind",
        &kind_script(&KIND.replace("kind v0.33.0 go1.25.1", "kind v0.27.0 go1.24.0")),
    );
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 3);
    let msg = format!("{e:#}");
    assert!(
        msg.contains("older than v0.33.0") && msg.contains("go install sigs.k8s.io/kind@v0.33.0"),
        "{msg}"
    );
    assert!(state_entries(&b.env).is_empty());
}

#[tokio::test]
async fn a_name_kind_already_has_is_exit_2_and_nothing_is_touched() {
    let b = bed();
    b.fakes.script(
        "kind",
        &kind_script(&KIND.replace(
            r#""get clusters") printf 'No kind clusters found.\n' >&2 ;;"#,
            r#""get clusters") printf 'kind\nharness-a\n' ;;"#,
        )),
    );
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 2);
    assert!(
        e.to_string()
            .contains("`kind get clusters` lists harness-a"),
        "{e}"
    );
    assert!(
        !b.fakes
            .calls()
            .iter()
            .any(|c| c.contains("create") || c.contains("delete"))
    );
    assert!(state_entries(&b.env).is_empty());
    // A cluster kind knows under a name that only starts the same is no clash.
    KindCluster::start(&spec("a-b"), &b.env)
        .await
        .unwrap()
        .down(false)
        .unwrap();
}

#[tokio::test]
async fn a_name_with_state_is_exit_2_and_its_state_is_untouched() {
    let b = bed();
    let dir = b.env.cluster_dir("a");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("state.json"), "{\"provider\":\"local\"}").unwrap();
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 2);
    assert!(e.to_string().contains("is taken"), "{e}");
    assert_eq!(
        std::fs::read_to_string(dir.join("state.json")).unwrap(),
        "{\"provider\":\"local\"}"
    );
    assert!(
        !b.fakes
            .calls()
            .iter()
            .any(|c| c.starts_with("kind get clusters"))
    );
}

#[tokio::test]
async fn kind_create_failing_is_quoted_and_the_state_dir_removed() {
    let b = bed();
    b.fakes.script(
        "kind",
        &kind_script(&KIND.replace(
            r#""create cluster") printf 'Creating cluster "%s" ...\n' "$4" >&2 ;;"#,
            r#""create cluster") printf 'ERROR: failed to create cluster: could not find a log line that matches "Reached target .*Multi-User System.*"\n' >&2; exit 1 ;;"#,
        )),
    );
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 1);
    let msg = format!("{e:#}");
    assert!(msg.contains("kind could not create the cluster"), "{msg}");
    assert!(
        msg.contains("could not find a log line that matches"),
        "{msg}"
    );
    assert!(msg.contains("state dir removed"), "{msg}");
    let calls = b.fakes.calls();
    assert!(
        calls
            .last()
            .unwrap()
            .starts_with("kind delete cluster --name harness-a --kubeconfig "),
        "{calls:?}"
    );
    assert!(state_entries(&b.env).is_empty());
}

/// The fake kind whose `create` fails, as kubeadm does when a wait ran out,
/// the first `fails` times (counted in files beside the fakes).
fn kind_failing_creates(b: &Bed, fails: u32) -> String {
    let mark = b.fakes.dir.join("failed-create");
    let mut test = String::new();
    for i in 0..fails {
        test.push_str(&format!(
            "if [ ! -e '{m}{i}' ]; then : > '{m}{i}'; printf 'error: error execution phase wait-control-plane: unable to create ClusterRoleBinding: context deadline exceeded\\n' >&2; exit 1; fi; ",
            m = mark.display()
        ));
    }
    kind_script(&KIND.replace(
        r#""create cluster") printf"#,
        &format!(r#""create cluster") {test}printf"#),
    ))
}

#[tokio::test]
async fn a_create_that_ran_out_of_time_is_made_once_more_and_said() {
    let b = bed();
    b.fakes.script("kind", &kind_failing_creates(&b, 1));
    let c = KindCluster::start(&spec("a"), &b.env).await.unwrap();
    assert_eq!(
        c.state.failed_creates.len(),
        1,
        "{:?}",
        c.state.failed_creates
    );
    assert!(
        c.state.failed_creates[0].contains(
            "try 1 of 2 ran out of time (error: error execution phase wait-control-plane"
        ),
        "{:?}",
        c.state.failed_creates
    );
    let kind_calls: Vec<String> = b
        .fakes
        .calls()
        .into_iter()
        .filter(|c| c.starts_with("kind create") || c.starts_with("kind delete"))
        .map(|c| c.split(" --").next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        kind_calls,
        [
            "kind create cluster",
            "kind delete cluster",
            "kind create cluster"
        ]
    );
    let saved = std::fs::read_to_string(c.root.join("state.json")).unwrap();
    assert!(saved.contains("failed_creates"), "{saved}");
    c.down(false).unwrap();
}

#[tokio::test]
async fn a_create_that_runs_out_of_time_twice_fails_and_leaves_nothing() {
    let b = bed();
    b.fakes.script("kind", &kind_failing_creates(&b, 2));
    let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("context deadline exceeded"), "{msg}");
    assert!(msg.contains("state dir removed"), "{msg}");
    let creates = b
        .fakes
        .calls()
        .iter()
        .filter(|c| c.starts_with("kind create"))
        .count();
    assert_eq!(creates, 2);
    assert!(state_entries(&b.env).is_empty());
}

#[tokio::test]
async fn a_k8s_version_other_than_the_configs_is_exit_2_before_any_command() {
    let b = bed();
    let mut s = spec("a");
    s.k8s_version = Some("1.36".into());
    let e = KindCluster::start(&s, &b.env).await.unwrap_err();
    assert_eq!(exit_code(&e), 2);
    assert!(e.to_string().contains("gang-1.37.yaml"), "{e}");
    assert!(b.fakes.calls().is_empty());
}

#[tokio::test]
async fn a_stopped_node_container_is_named() {
    let b = bed();
    let c = KindCluster::start(&spec("s"), &b.env).await.unwrap();
    b.fakes.script("docker", "printf 'exited 0\\n'\n");
    let e = c.check_containers().unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("harness-s-control-plane: exited 0"), "{msg}");
    let h = c.health().await;
    assert!(!h[0].running && !h[0].healthy && h[0].pid.is_none());
    b.fakes.script("docker", "printf 'OCI runtime exec failed: exec: \"curl\": executable file not found in $PATH\\n' >&2\nexit 127\n");
    let e = c.etcd_metrics().await.unwrap_err();
    assert!(format!("{e:#}").contains("has no curl"), "{e:#}");
    c.down(false).unwrap();
}
