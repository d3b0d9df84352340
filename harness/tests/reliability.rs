//! Reliability, round two (issue 30): hostile files for every flag that
//! names one, flags checked before anything starts, damaged state and
//! leftover locks — each run against the built binary with a hard time
//! limit (a run that hangs is killed and fails the test), its own state
//! and cache directories, and no cluster binary, network or Docker.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run did.
struct Run {
    code: Option<i32>,
    out: String,
    took: Duration,
}

/// The scratch world: state and cache dirs, and files to point flags at.
struct World {
    tmp: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.state()).unwrap();
        std::fs::create_dir_all(w.tmp.path().join("cache")).unwrap();
        w
    }
    fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }
    fn file(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn fifo(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }
    /// A kubeconfig for a server nobody listens on.
    fn kubeconfig(&self) -> PathBuf {
        self.file(
            "kubeconfig",
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\n\
             users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\n",
        )
    }
    /// Run the harness from the repository with `args`, killed after
    /// `limit`.
    fn run(
        &self,
        args: &[&dyn AsRef<std::ffi::OsStr>],
        env: &[(&str, &str)],
        limit: Duration,
    ) -> Run {
        // HARNESS_TEST_BIN runs the cases against another build (an older
        // one, to see them fail there).
        let bin = std::env::var_os("HARNESS_TEST_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_harness").into());
        let mut cmd = Command::new(bin);
        cmd.args(
            args.iter()
                .map(|a| a.as_ref().to_owned())
                .collect::<Vec<OsString>>(),
        )
        .current_dir(common::repo_root())
        .env_remove("HARNESS_MAX_INPUT_BYTES")
        .env_remove("HARNESS_LOG")
        .env("HARNESS_NO_PROGRESS", "1")
        .env("HARNESS_STATE_DIR", self.state())
        .env("HARNESS_CACHE_DIR", self.path("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawning harness");
        let code = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s.code();
            }
            if started.elapsed() > limit {
                // SIGTERM first: a harness that started something tears it
                // down; SIGKILL only if it does not end.
                // SAFETY: kill(2) of the child this test spawned.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                let t = Instant::now();
                while child.try_wait().unwrap().is_none() && t.elapsed() < Duration::from_secs(20) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = started.elapsed();
        let o = child.wait_with_output().unwrap();
        Run {
            code,
            out: format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            took,
        }
    }
}

/// Whatever a run left running from the world (a component started by a
/// build that did not check first) is stopped with it.
impl Drop for World {
    fn drop(&mut self) {
        let left = harness::cluster::state::processes_under(self.tmp.path());
        harness::cluster::state::stop_pids(&left, Duration::from_secs(10));
    }
}

/// One hostile case: what it runs, the exit it must give, what it must
/// say, how long it may take.
struct Case {
    name: &'static str,
    args: Vec<OsString>,
    env: Vec<(&'static str, &'static str)>,
    want: i32,
    says: Vec<String>,
    bound: Duration,
}

fn case(
    name: &'static str,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    want: i32,
    says: &[&str],
) -> Case {
    Case {
        name,
        args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
        env: Vec::new(),
        want,
        says: says.iter().map(|s| s.to_string()).collect(),
        bound: Duration::from_secs(3),
    }
}

/// Run every case; one table; fail listing every case that went wrong.
fn run_cases(w: &World, cases: Vec<Case>) {
    let mut failed = Vec::new();
    println!(
        "{:<64} {:>5} {:>5} {:>8}  result",
        "case", "exit", "want", "time"
    );
    for c in &cases {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> = c
            .args
            .iter()
            .map(|a| a as &dyn AsRef<std::ffi::OsStr>)
            .collect();
        let r = w.run(&args, &c.env, c.bound * 3 + Duration::from_secs(5));
        let mut problems = Vec::new();
        if r.code.is_none() {
            problems.push(format!("killed after {:.1} s (hang)", r.took.as_secs_f64()));
        } else if r.code != Some(c.want) {
            problems.push(format!("exit {:?}, want {}", r.code, c.want));
        }
        if r.took > c.bound {
            problems.push(format!(
                "took {:.2} s, bound {:.2} s",
                r.took.as_secs_f64(),
                c.bound.as_secs_f64()
            ));
        }
        for s in &c.says {
            if !r.out.contains(s.as_str()) {
                problems.push(format!("does not say {s:?}"));
            }
        }
        if r.out.contains("panicked") {
            problems.push("PANIC".into());
        }
        let running = harness::cluster::state::processes_under(w.tmp.path());
        if !running.is_empty() {
            problems.push(format!("left running: pids {running:?}"));
            harness::cluster::state::stop_pids(&running, Duration::from_secs(10));
        }
        println!(
            "{:<64} {:>5} {:>5} {:>7.3}s  {}",
            c.name,
            r.code.map_or("kill".into(), |c| c.to_string()),
            c.want,
            r.took.as_secs_f64(),
            if problems.is_empty() {
                "ok".to_string()
            } else {
                problems.join("; ")
            }
        );
        if !problems.is_empty() {
            failed.push(format!("{}: {}\n{}", c.name, problems.join("; "), r.out));
        }
    }
    assert!(
        failed.is_empty(),
        "{} case(s) failed:\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}

/// Item 1: every file a flag names goes through the bounded reader: a
/// device or a FIFO is refused at once, naming the flag.
#[test]
fn files_named_by_flags_are_read_bounded() {
    let w = World::new();
    let kc = w.kubeconfig();
    let fifo = w.fifo("fifo");
    let zero = Path::new("/dev/zero");
    let url = "https://127.0.0.1:9/metrics";
    let mut cases = vec![
        case(
            "status --kubeconfig /dev/zero",
            &[
                &"status",
                &"--provider",
                &"existing",
                &"--kubeconfig",
                &zero,
            ],
            2,
            &["--kubeconfig /dev/zero: not a regular file"],
        ),
        case(
            "status --kubeconfig FIFO",
            &[
                &"status",
                &"--provider",
                &"existing",
                &"--kubeconfig",
                &fifo,
            ],
            2,
            &["--kubeconfig", "not a regular file"],
        ),
        case(
            "bench thor --kubeconfig FIFO",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &"suites/thor/smoke.yaml",
                &"--provider",
                &"existing",
                &"--kubeconfig",
                &fifo,
                &"--out",
                &w.path("out"),
            ],
            2,
            &["--kubeconfig", "not a regular file"],
        ),
    ];
    for flag in ["--etcd-cert", "--etcd-key", "--etcd-ca"] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"status",
            &"--provider",
            &"existing",
            &"--kubeconfig",
            &kc,
            &"--etcd-metrics-url",
            &url,
        ];
        match flag {
            "--etcd-cert" => args.extend([
                &"--etcd-cert" as &dyn AsRef<std::ffi::OsStr>,
                &zero,
                &"--etcd-key",
                &kc,
            ]),
            "--etcd-key" => args.extend([
                &"--etcd-cert" as &dyn AsRef<std::ffi::OsStr>,
                &kc,
                &"--etcd-key",
                &zero,
            ]),
            _ => args.extend([&"--etcd-ca" as &dyn AsRef<std::ffi::OsStr>, &zero]),
        }
        let says = format!("{flag} /dev/zero: not a regular file");
        cases.push(Case {
            says: vec![says],
            ..case("status --etcd-… /dev/zero", &args, 2, &[])
        });
    }
    cases.push(case(
        "status --audit-log /dev/zero",
        &[
            &"status",
            &"--provider",
            &"existing",
            &"--kubeconfig",
            &kc,
            &"--audit-log",
            &zero,
        ],
        2,
        &["--audit-log /dev/zero: not a regular file"],
    ));
    cases.push(case(
        "status --audit-log FIFO",
        &[
            &"status",
            &"--provider",
            &"existing",
            &"--kubeconfig",
            &kc,
            &"--audit-log",
            &fifo,
        ],
        2,
        &["--audit-log", "not a regular file"],
    ));
    // A certificate the kubeconfig names is checked before kube reads it.
    let kc_zero = w.file(
        "kc-zero",
        std::fs::read_to_string(&kc).unwrap().replace(
            "    server: https://127.0.0.1:9\n",
            "    server: https://127.0.0.1:9\n    certificate-authority: /dev/zero\n",
        ),
    );
    cases.push(case(
        "kubeconfig naming /dev/zero as its CA",
        &[
            &"status",
            &"--provider",
            &"existing",
            &"--kubeconfig",
            &kc_zero,
        ],
        2,
        &["certificate-authority /dev/zero: not a regular file"],
    ));
    cases.push(Case {
        env: vec![("HARNESS_MAX_INPUT_BYTES", "lots")],
        ..case(
            "HARNESS_MAX_INPUT_BYTES=lots",
            &[&"validate", &"kind-configs/baseline-1.37.yaml"],
            2,
            &["HARNESS_MAX_INPUT_BYTES=lots: not a positive number"],
        )
    });
    run_cases(&w, cases);
}

/// Item 2: `up`'s and the benchmarks' flags are checked before any
/// process, directory or lock file is made: exit 2 at once, nothing left
/// in the state directory.
#[test]
fn flags_are_checked_before_anything_starts() {
    let w = World::new();
    let out = w.path("out");
    let up = |name: &'static str, extra: &[&'static str], says: &[&str]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"up", &"--name", &"pre"];
        args.extend(extra.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        case(name, &args, 2, says)
    };
    let cases = vec![
        up(
            "up --node-cpu banana",
            &["--node-cpu", "banana"],
            &["--node-cpu: \"banana\" is not a Kubernetes quantity"],
        ),
        up(
            "up --node-memory lots",
            &["--node-memory", "lots"],
            &["--node-memory: \"lots\""],
        ),
        up(
            "up --node-cpu 0",
            &["--node-cpu", "0"],
            &["--node-cpu: \"0\" is not more than zero"],
        ),
        up(
            "up --feature-gates Bogus=true",
            &["--feature-gates", "Bogus=true"],
            &["--feature-gates: \"Bogus\" is not a feature gate"],
        ),
        up(
            "up --runtime-config nope.k8s.io/v1=true",
            &["--runtime-config", "nope.k8s.io/v1=true"],
            &["--runtime-config: API \"nope.k8s.io/v1\""],
        ),
        up(
            "up --timeout 0",
            &["--timeout", "0"],
            &["--timeout 0: must be at least 1"],
        ),
        up(
            "up --nodes 0",
            &["--nodes", "0"],
            &["--nodes 0: must be at least 1"],
        ),
        up(
            "up --node-pods 0",
            &["--node-pods", "0"],
            &["--node-pods 0: must be at least 1"],
        ),
        up(
            "up --provider kind --timeout 0",
            &["--provider", "kind", "--timeout", "0"],
            &["--timeout 0"],
        ),
        case(
            "bench thor --repeat 0",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &"suites/thor/smoke.yaml",
                &"--repeat",
                &"0",
                &"--out",
                &out,
            ],
            2,
            &["--repeat 0: must be at least 1"],
        ),
        case(
            "bench thor --modes bogus (names all four modes)",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &"suites/thor/smoke.yaml",
                &"--modes",
                &"bogus",
                &"--out",
                &out,
            ],
            2,
            &["one of baseline, jobset, jobset-gang, jobset-kueue"],
        ),
        case(
            "bench gang --timeout 0",
            &[&"bench", &"gang", &"--timeout", &"0", &"--out", &out],
            2,
            &["--timeout 0: must be at least 1"],
        ),
        case(
            "bench gang --nodes 0",
            &[&"bench", &"gang", &"--nodes", &"0", &"--out", &out],
            2,
            &["--nodes 0: must be at least 1"],
        ),
        case(
            "bench gang --node-pods 0",
            &[&"bench", &"gang", &"--node-pods", &"0", &"--out", &out],
            2,
            &["--node-pods 0: must be at least 1"],
        ),
    ];
    run_cases(&w, cases);
    let left: Vec<_> = walk(&w.state());
    assert!(left.is_empty(), "left in the state dir: {left:?}");
    assert!(!out.exists(), "the benchmarks wrote {}", out.display());
}

/// Every path under `dir` (files and directories).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            out.push(e.path());
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            }
        }
    }
    out
}

/// A readable local cluster's state file whose processes are long gone
/// (it is listed, unhealthy).
fn stopped_cluster_state(name: &str) -> String {
    let spec = harness::cluster::ClusterSpec::new(name, "1.37");
    serde_json::json!({
        "name": name, "provider": "local", "k8s_version": "1.37.0",
        "spec": spec,
        "ports": {"etcd_client": 1, "etcd_peer": 2, "apiserver": 3, "controller_manager": 4,
                  "scheduler": 5, "jobset_webhook": 6, "jobset_health": 7, "jobset_metrics": 8, "kwok": 9},
        "procs": [], "created_unix": 0, "binaries": {}, "ready": true,
    })
    .to_string()
}

/// Item 5: one damaged state file does not hide the other clusters;
/// `status` lists every cluster it can read and names each damaged one
/// (exit 1); `down --name` of a damaged cluster stops the processes
/// running from its directory and removes it; lock files go with their
/// holders, and stale ones are cleaned.
#[test]
fn damaged_state_is_listed_and_removable_and_locks_do_not_pile_up() {
    let w = World::new();
    let st = w.state();
    let write = |name: &str, bytes: &[u8]| {
        std::fs::create_dir_all(st.join(name)).unwrap();
        std::fs::write(st.join(name).join("state.json"), bytes).unwrap();
    };
    write("empty", b"");
    write(
        "truncated",
        &stopped_cluster_state("truncated").as_bytes()[..40],
    );
    write("latin1", b"{\"provider\": \"loc\xe9l\"}");
    write("good", stopped_cluster_state("good").as_bytes());
    w.fifo("state/fifo/state.json");
    std::fs::create_dir_all(st.join("halfmade")).unwrap();
    // A stale lock (its holder was killed) and a held one.
    std::fs::create_dir_all(st.join(".locks")).unwrap();
    std::fs::write(st.join(".locks/stale.lock"), "").unwrap();
    let held = std::fs::File::create(st.join(".locks/held.lock")).unwrap();
    held.try_lock().unwrap();

    let r = w.run(&[&"status"], &[], Duration::from_secs(20));
    assert_eq!(r.code, Some(1), "{}", r.out);
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    assert!(r.out.contains("good (local provider"), "{}", r.out);
    for name in ["empty", "truncated", "latin1", "fifo"] {
        assert!(
            r.out.contains(&format!("{name}: DAMAGED")),
            "{name}:\n{}",
            r.out
        );
    }
    assert!(
        r.out.contains("latin1/state.json:1:18: not valid UTF-8"),
        "{}",
        r.out
    );
    assert!(!r.out.contains("HARNESS_STATE_DIR"), "{}", r.out);
    assert!(r.out.contains("halfmade: INCOMPLETE"), "{}", r.out);
    assert!(
        !st.join(".locks/stale.lock").exists(),
        "a stale lock was kept"
    );
    assert!(
        st.join(".locks/held.lock").exists(),
        "a held lock was removed"
    );

    let r = w.run(
        &[&"status", &"--name", &"fifo"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(1), "{}", r.out);
    assert!(
        r.took < Duration::from_secs(5),
        "status --name fifo took {:?}",
        r.took
    );

    // A component of the damaged cluster still runs: `down` finds it by
    // its command line and stops it.
    use std::os::unix::process::CommandExt;
    let log = st.join("truncated/apiserver.log");
    std::fs::write(&log, "").unwrap();
    let mut comp = Command::new("tail")
        .arg("-f")
        .arg(&log)
        .process_group(0)
        .spawn()
        .unwrap();
    for name in ["empty", "truncated", "latin1", "fifo", "halfmade"] {
        let r = w.run(&[&"down", &"--name", &name], &[], Duration::from_secs(30));
        assert_eq!(r.code, Some(0), "down {name}: {}", r.out);
        assert!(
            !st.join(name).exists(),
            "down {name} left its dir: {}",
            r.out
        );
    }
    let waited = Instant::now();
    while comp.try_wait().unwrap().is_none() {
        assert!(
            waited.elapsed() < Duration::from_secs(15),
            "the damaged cluster's process {} still runs",
            comp.id()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = w.run(&[&"down", &"--name", &"good"], &[], Duration::from_secs(30));
    assert_eq!(r.code, Some(0), "{}", r.out);
    drop(held);
    // Every name locked above released its lock file; the held one's file
    // is stale now and the next status cleans it.
    let r = w.run(&[&"status"], &[], Duration::from_secs(20));
    assert_eq!(r.code, Some(0), "{}", r.out);
    let left = walk(&st);
    assert!(left.is_empty(), "left in the state dir: {left:?}");
}

/// A scratch repository under the world: the real repository's smoke
/// scenario, baseline and a kind config, with `edit` applied to files.
fn scratch_repo(w: &World) -> PathBuf {
    let repo = common::repo_root();
    let root = w.path("repo");
    for rel in [
        "suites/thor/smoke.yaml",
        "baselines/local/1.37/smoke.json",
        "kind-configs/baseline-1.37.yaml",
    ] {
        w.file(
            &format!("repo/{rel}"),
            std::fs::read(repo.join(rel)).unwrap(),
        );
    }
    w.file("repo/Cargo.toml", "[workspace]\n");
    root
}

/// Item 3: what `validate` accepted though it is malformed is refused
/// (exit 1, at its place); a folder named on the command line is checked
/// as the default run checks it.
#[test]
fn validate_closes_what_it_accepted() {
    let w = World::new();
    let root = scratch_repo(&w);
    let v = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"validate", &"--root", &root];
        a.extend(args);
        w.run(&a, &[], Duration::from_secs(30))
    };
    // The scratch repository passes as it is.
    let r = v(&[]);
    assert_eq!(r.code, Some(0), "{}", r.out);
    let baseline = std::fs::read_to_string(root.join("baselines/local/1.37/smoke.json")).unwrap();
    let kind = std::fs::read_to_string(root.join("kind-configs/baseline-1.37.yaml")).unwrap();
    let mut bad: Vec<(&str, PathBuf, &str)> = Vec::new();
    let mut file = |rel: &'static str, text: String, says: &'static str| {
        bad.push((rel, w.file(&format!("repo/{rel}"), text), says));
    };
    file(
        "baselines/local/1.37/empty.json",
        String::new(),
        "no document",
    );
    file(
        "baselines/local/1.37/passwd.json",
        baseline.replace("suites/thor/smoke.yaml", "/etc/passwd"),
        "scenario \"/etc/passwd\": must be a path relative to the repository root",
    );
    file(
        "baselines/local/1.37/outside.json",
        baseline.replace("suites/thor/smoke.yaml", "suites/thor/../../../etc/passwd"),
        "without `..`",
    );
    file(
        "baselines/local/1.37/notascenario.json",
        baseline.replace("suites/thor/smoke.yaml", "Cargo.toml"),
        "not a scenario",
    );
    file(
        "baselines/local/1.37/huge.json",
        baseline.replacen("\"value\": ", "\"value\": 1e400, \"x\": ", 1),
        "number out of range",
    );
    file(
        "kind-configs/empty-1.37.yaml",
        String::new(),
        "no document: the file is empty",
    );
    file(
        "kind-configs/comments-1.37.yaml",
        "# nothing\n".into(),
        "a kind config needs one",
    );
    file(
        "kind-configs/huge-1.37.yaml",
        kind.replacen("nodes:", "apiServerPort: 1e400\nnodes:", 1),
        "1e400: number out of range",
    );
    file(
        "manifests/audit-policy.yaml",
        "# only a comment\n".into(),
        "a manifest needs one",
    );
    for (rel, path, says) in &bad {
        let r = v(&[path]);
        assert_eq!(r.code, Some(1), "{rel}: {}", r.out);
        assert!(
            r.out.contains(says),
            "{rel}: does not say {says:?}:\n{}",
            r.out
        );
        assert!(!r.out.contains("invalid type: null"), "{rel}:\n{}", r.out);
        std::fs::remove_file(path).unwrap();
    }
    // A folder named on the command line: a README in it is skipped, as
    // in the default run.
    w.file("repo/kind-configs/README.md", "# kind configs\n");
    w.file("repo/baselines/README.md", "# baselines\n");
    for d in ["kind-configs", "baselines", "suites", "suites/thor"] {
        let r = v(&[&root.join(d)]);
        assert_eq!(r.code, Some(0), "validate {d}: {}", r.out);
    }
    // …but a file named itself that validate does not check is refused.
    let r = v(&[&root.join("kind-configs/README.md")]);
    assert_eq!(r.code, Some(2), "{}", r.out);
    // A FIFO named as a path is bad input, as a missing path is.
    let fifo = w.fifo("repo/kind-configs/fifo.yaml");
    let r = v(&[&fifo]);
    assert_eq!(r.code, Some(2), "{}", r.out);
    assert!(r.out.contains("not a regular file"), "{}", r.out);
    std::fs::remove_file(&fifo).unwrap();
    // Found in a named folder, it is a finding at its place.
    w.fifo("repo/kind-configs/sub/fifo.yaml");
    let r = v(&[&root.join("kind-configs/sub")]);
    assert_eq!(r.code, Some(1), "{}", r.out);
    assert!(
        r.out
            .contains("kind-configs/sub/fifo.yaml:1:1: (file): cannot read: not a regular file"),
        "{}",
        r.out
    );
    // A plain file where a default directory should be is not skipped.
    std::fs::remove_dir_all(root.join("kind-configs")).unwrap();
    w.file("repo/kind-configs", "not a dir\n");
    let r = v(&[]);
    assert_eq!(r.code, Some(1), "{}", r.out);
    assert!(r.out.contains("kind-configs: not a directory"), "{}", r.out);
}

/// The repository's own default folders can be named (they were refused
/// on their README files).
#[test]
fn the_default_folders_can_be_named() {
    let w = World::new();
    for d in [
        "manifests",
        "kind-configs",
        "baselines",
        "suites",
        "suites/gang",
    ] {
        let r = w.run(&[&"validate", &d], &[], Duration::from_secs(120));
        assert_eq!(r.code, Some(0), "validate {d}: {}", r.out);
    }
}
