//! The `harness` binary end to end: real clusters brought up and torn down
//! through the CLI, exit codes, and what is left behind (nothing).
//! Each test uses its own state directory so it cannot touch a user's
//! clusters.

mod common;
use common::{assert_code, text};

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use harness::cluster::local::process::Proc;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.env("HARNESS_NO_PROGRESS", "1");
    c
}

struct Env {
    state: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            state: tempfile::tempdir().expect("temp state dir"),
        }
    }
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = bin();
        c.env("HARNESS_STATE_DIR", self.state.path()).args(args);
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("running harness")
    }
    fn dir(&self, name: &str) -> PathBuf {
        self.state.path().join(name)
    }
    fn procs(&self, name: &str) -> Vec<Proc> {
        let text = std::fs::read_to_string(self.dir(name).join("state.json")).expect("state.json");
        let v: serde_json::Value = serde_json::from_str(&text).expect("state.json is JSON");
        serde_json::from_value(v["procs"].clone()).expect("procs")
    }
}

/// Whatever happens in a test, no component outlives it.
impl Drop for Env {
    fn drop(&mut self) {
        if let Ok(entries) = std::fs::read_dir(self.state.path()) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let _ = self.run(&["down", "--name", &name]);
            }
        }
    }
}

fn none_running(procs: &[Proc]) -> bool {
    procs.iter().all(|p| !p.group_running())
}

#[test]
fn two_clusters_side_by_side_then_etcd_dies_and_down_leaves_nothing() {
    let env = Env::new();
    let (a, b) = ("side-a", "side-b");
    for name in [a, b] {
        let up = env.run(&["up", "--name", name, "--nodes", "1"]);
        assert_code(&up, 0);
        let out = String::from_utf8_lossy(&up.stdout);
        let kubeconfig = env.dir(name).join("kubeconfig");
        assert!(
            out.contains(&format!("export KUBECONFIG={}", kubeconfig.display())),
            "{}",
            text(&up)
        );
    }
    let status = env.run(&["status"]);
    assert_code(&status, 0);
    let s = String::from_utf8_lossy(&status.stdout);
    assert!(
        s.contains("side-a (local provider") && s.contains("side-b (local provider"),
        "{s}"
    );
    let mode = std::fs::metadata(env.dir(a)).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o700
    );

    // Kill b's etcd: the next command on b fails and names etcd; a is fine.
    let b_procs = env.procs(b);
    let etcd = b_procs
        .iter()
        .find(|p| p.name == "etcd")
        .expect("etcd recorded");
    unsafe {
        libc::kill(etcd.pid, libc::SIGKILL);
    }
    let t = Instant::now();
    while etcd.is_running() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status_b = env.run(&["status", "--name", b]);
    assert_code(&status_b, 1);
    let all = text(&status_b);
    assert!(all.contains("etcd") && all.contains("EXITED"), "{all}");
    // etcd is named first. The controller-manager may be named too: when
    // etcd dies while it is still building its controllers, it exits
    // ("failed to create Kubernetes client … connection reset by peer").
    let broken = all
        .lines()
        .find(|l| l.contains("is broken: "))
        .unwrap_or_default();
    assert!(
        broken.contains("is broken: etcd") && broken.ends_with("not running"),
        "{all}"
    );
    assert_code(&env.run(&["status", "--name", a]), 0);

    let a_procs = env.procs(a);
    for name in [a, b] {
        let down = env.run(&["down", "--name", name]);
        assert_code(&down, 0);
        assert!(!env.dir(name).exists(), "state dir of {name} left behind");
    }
    assert!(
        none_running(&a_procs),
        "a component of {a} is still running"
    );
    assert!(
        none_running(&b_procs),
        "a component of {b} is still running"
    );
    // A second down is a usage error, not a crash.
    assert_code(&env.run(&["down", "--name", a]), 2);
}

#[test]
fn interrupting_up_tears_everything_down() {
    let env = Env::new();
    let name = "interrupted";
    let child = env
        .cmd(&["up", "--name", name])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting harness up");
    // Interrupt once the API server process exists.
    let state = env.dir(name).join("state.json");
    let t = Instant::now();
    let procs = loop {
        if let Ok(text) = std::fs::read_to_string(&state)
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        {
            let procs: Vec<Proc> = serde_json::from_value(v["procs"].clone()).unwrap_or_default();
            if procs.iter().any(|p| p.name == "kube-apiserver") {
                break procs;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "kube-apiserver never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().expect("waiting for harness up");
    assert_code(&out, 130);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("tearing down"),
        "{}",
        text(&out)
    );
    assert!(none_running(&procs), "a component survived the interrupt");
    assert!(!env.dir(name).exists(), "state dir left behind");
    // Not only those seen when the API server appeared: nothing at all
    // runs from the state dir (a component started after that moment, a
    // child of one), issue 30.
    let left = processes_naming(env.state.path());
    assert!(
        left.is_empty(),
        "still running from the state dir: {left:?}"
    );
}

/// Every live process whose command line names a path under `dir`, with
/// that command line.
fn processes_naming(dir: &std::path::Path) -> Vec<(i32, String)> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let state = stat[stat.rfind(')')? + 1..]
                .split_whitespace()
                .next()?
                .to_string();
            (cmd.contains(&needle) && state != "Z").then_some((pid, cmd))
        })
        .collect()
}

#[test]
fn a_component_that_fails_to_start_is_named_with_its_log() {
    let env = Env::new();
    // An unknown gate is now refused before anything starts (exit 2) …
    let out = env.run(&[
        "up",
        "--name",
        "badgate",
        "--feature-gates",
        "NoSuchGateAnywhere=true",
    ]);
    assert_code(&out, 2);
    assert!(text(&out).contains("NoSuchGateAnywhere"), "{}", text(&out));
    assert!(
        !env.dir("badgate").exists(),
        "the preflight made a state dir"
    );
    // … so an API server that dies at start-up is one that reports the
    // right version and then exits complaining.
    let bin = env.state.path().join("fake-apiserver");
    std::fs::write(
        &bin,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Kubernetes v1.37.1'; exit 0; fi\necho 'E1126 start-up refused: NoSuchGateAnywhere' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = env.run(&[
        "up",
        "--name",
        "badgate",
        "--bin",
        &format!("kube-apiserver={}", bin.display()),
    ]);
    assert_code(&out, 1);
    let all = text(&out);
    assert!(
        all.contains("kube-apiserver exited during start-up"),
        "{all}"
    );
    assert!(
        all.contains("NoSuchGateAnywhere"),
        "the log tail should show the apiserver's complaint: {all}"
    );
    // etcd had started: it must be stopped; logs are kept for inspection.
    let procs = env.procs("badgate");
    assert!(procs.iter().any(|p| p.name == "etcd"));
    assert!(none_running(&procs), "etcd left running after a failed up");
    assert!(env.dir("badgate").join("logs/kube-apiserver.log").is_file());
    assert_code(&env.run(&["down", "--name", "badgate"]), 0);
    assert!(!env.dir("badgate").exists());
}

/// Each usage error exits 2 with its own message: a substring per case
/// (clap's "unexpected argument" for a flag that was removed would not
/// say it), issue 30.
#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    let smoke = ["bench", "thor", "--scenario", "suites/thor/smoke.yaml"];
    let bench = |extra: &[&'static str]| -> Vec<&'static str> {
        smoke.iter().chain(extra).copied().collect()
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["up", "--feature-gates", "Foo=maybe"],
            "--feature-gates: Foo=maybe: the value must be true or false",
        ),
        (
            vec!["up", "--k8s-version", "1.20"],
            "unsupported Kubernetes version \"1.20\"",
        ),
        (
            vec!["up", "--name", "Bad_Name"],
            "invalid cluster name \"Bad_Name\"",
        ),
        (
            vec!["up", "--runtime-config", "nonsense"],
            "--runtime-config: \"nonsense\" is not GROUP/VERSION=true|false",
        ),
        (
            vec!["down", "--name", "never-existed"],
            "no cluster named \"never-existed\"",
        ),
        (
            vec!["tools", "list", "--bin", "nope=/x"],
            "--bin nope: unknown binary",
        ),
        (bench(&["--counts-only"]), "--compare"),
        (
            vec!["no-such-command"],
            "unrecognized subcommand 'no-such-command'",
        ),
        // A cluster the harness did not start is never stopped.
        (
            vec!["down", "--provider", "existing"],
            "--provider existing: the harness never stops a cluster it did not start",
        ),
        (
            vec!["down", "--kubeconfig", "/some/kubeconfig"],
            "/some/kubeconfig: the harness never stops a cluster it did not start",
        ),
        // --provider existing needs its kubeconfig; its flags need it.
        (
            bench(&["--provider", "existing"]),
            "--provider existing needs --kubeconfig FILE",
        ),
        (
            bench(&["--audit-log", "/var/log/audit.log"]),
            "are for --provider existing",
        ),
        // --dry-run plans a run on an existing cluster; APF identities
        // need --attribution apf and say their form (checked before the
        // kubeconfig is read).
        (
            bench(&["--dry-run"]),
            "--dry-run is for --provider existing",
        ),
        (
            bench(&[
                "--provider",
                "existing",
                "--kubeconfig",
                "/k",
                "--apf-identity",
                "user:x",
            ]),
            "--apf-identity needs --attribution apf",
        ),
        (
            bench(&[
                "--provider",
                "existing",
                "--kubeconfig",
                "/k",
                "--attribution",
                "apf",
                "--apf-identity",
                "robot:r2",
            ]),
            "robot:r2",
        ),
        (
            vec!["status", "--kubeconfig", "/some/kubeconfig"],
            "--kubeconfig and the other existing-cluster flags need --provider existing",
        ),
        (
            vec!["status", "--provider", "existing", "--name", "dev"],
            "--name is for the local provider's clusters",
        ),
    ];
    for (args, says) in cases {
        // From the repository, where the scenario path leads somewhere
        // (from harness/ every bench case failed on the missing file).
        let out = env
            .cmd(&args)
            .current_dir(common::repo_root())
            .output()
            .expect("running harness");
        let t = assert_code(&out, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(says),
            "{args:?} does not say {says:?}:\n{t}"
        );
    }
}

#[test]
fn missing_go_toolchain_exits_3_and_says_what_to_install() {
    let env = Env::new();
    let cache = tempfile::tempdir().unwrap();
    let out = env
        .cmd(&["tools", "install"])
        .env("HARNESS_CACHE_DIR", cache.path())
        .env("PATH", "/nonexistent")
        .env_remove("HARNESS_GO")
        .output()
        .unwrap();
    assert_code(&out, 3);
    let all = text(&out);
    assert!(all.contains("no Go toolchain to build it"), "{all}");
    // The first binary to fail (builds go biggest first, side by side)
    // is named with the variable that provides it.
    let first = all
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .and_then(|l| l.split(" v").next())
        .unwrap_or_else(|| panic!("no error line: {all}"));
    let var = format!(
        "HARNESS_{}_BIN=/path/to/{first}",
        first.to_uppercase().replace('-', "_")
    );
    assert!(all.contains(&var), "{var} not in: {all}");
    assert!(all.contains("install Go"), "{all}");
}

#[test]
fn tools_list_reports_every_binary() {
    let env = Env::new();
    let out = env.run(&["tools", "list", "--format", "json"]);
    assert_code(&out, 0);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let names: Vec<&str> = rows.iter().map(|r| r["binary"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubectl",
            "kwok",
            "jobset-controller",
            "kueue-controller",
            "kueue-perf-runner",
            "hpcc-kubectl",
            "kubelet",
            "agnhost",
            "containerd",
            "containerd-shim-runc-v2",
            "ctr",
            "runc",
            "bridge",
            "host-local",
            "loopback",
            "kubeadm",
            "kube-proxy",
            "crictl",
            "coredns",
            "kind",
            "registry"
        ]
    );
}

#[test]
fn concurrent_installs_build_a_binary_once() {
    let env = Env::new();
    let cache = tempfile::tempdir().unwrap();
    let spawn = || {
        env.cmd(&["tools", "install", "--only", "kwok"])
            .env("HARNESS_CACHE_DIR", cache.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting harness tools install")
    };
    let (first, second) = (spawn(), spawn());
    let outs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    for o in &outs {
        assert_code(o, 0);
    }
    let builds = outs
        .iter()
        .filter(|o| String::from_utf8_lossy(&o.stderr).contains("building kwok v0.8.0"))
        .count();
    assert_eq!(
        builds,
        1,
        "kwok was built {builds} times:\n{}\n{}",
        text(&outs[0]),
        text(&outs[1])
    );
    let bin = cache.path().join("bin/kwok-0.8.0");
    assert!(bin.is_file(), "no {}", bin.display());
}

#[test]
fn a_failed_build_exits_3_with_the_build_log() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let cache = tempfile::tempdir().unwrap();
    // A Go toolchain that reports a good version but cannot build: the
    // harness must say which build failed, quote its log and exit 3.
    let go = cache.path().join("broken-go");
    std::fs::write(
        &go,
        "#!/bin/sh\nif [ \"$1\" = env ]; then echo go1.26.8; exit 0; fi\necho \"go: simulated failure in $*\"\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&go, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env
        .cmd(&["tools", "install", "--only", "kwok"])
        .env("HARNESS_CACHE_DIR", cache.path())
        .env("HARNESS_GO", &go)
        .output()
        .unwrap();
    assert_code(&out, 3);
    let all = text(&out);
    assert!(all.contains("building kwok v0.8.0 failed"), "{all}");
    assert!(
        all.contains("go: simulated failure in mod tidy"),
        "log tail missing: {all}"
    );
    assert!(all.contains("HARNESS_KWOK_BIN"), "{all}");
    assert!(!cache.path().join("bin/kwok-0.8.0").exists());
}
