//! Hostile command lines (issue 53, "Reliability, round three"): the
//! commands that write an out dir or build an image given outputs that
//! touch their inputs or cannot be made, flags that must be refused
//! before anything is built or written, a cluster that does not answer,
//! and answer-matrix selections that pick nothing or too much. Each case
//! runs the built `harness` binary under an address-space cap and a time
//! bound (common::capped) and must give its exit code and say what (and
//! where); none may panic, abort, hang or be accepted silently. The table
//! and the summary are printed (`--nocapture`).
//!
//! No cluster, Docker, download or network is needed: the "cluster" is a
//! kubeconfig whose server is a local port nothing listens on.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::capped::{Run, run};

/// The address-space cap of every run (as harness/tests/hostile.rs).
const AS_CAP: u64 = 2 << 30;
/// A refusal before anything heavy: startup and a few reads.
const FAST: Duration = Duration::from_secs(5);
/// A cluster that does not answer is named within this.
const UNREACHABLE: Duration = Duration::from_secs(10);

type Check = Box<dyn Fn(&Run) -> Result<(), String>>;
/// A case, what its run did, and what went wrong.
type Outcome<'a> = (&'a Case, Run, Vec<String>);

struct Case {
    class: &'static str,
    name: String,
    args: Vec<OsString>,
    want: i32,
    says: Vec<String>,
    /// One of `says` names a path (and a line where one applies).
    located: bool,
    bound: Duration,
    check: Option<Check>,
}

impl Case {
    fn new(
        class: &'static str,
        name: impl Into<String>,
        args: &[&dyn AsRef<std::ffi::OsStr>],
    ) -> Case {
        Case {
            class,
            name: name.into(),
            args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
            want: 2,
            says: Vec::new(),
            located: false,
            bound: FAST,
            check: None,
        }
    }
    fn want(mut self, code: i32) -> Case {
        self.want = code;
        self
    }
    fn says(mut self, s: impl Into<String>) -> Case {
        self.says.push(s.into());
        self
    }
    /// Says `p` (a path, or `path:line`).
    fn at(mut self, p: impl std::fmt::Display) -> Case {
        self.says.push(p.to_string());
        self.located = true;
        self
    }
    fn within(mut self, d: Duration) -> Case {
        self.bound = d;
        self
    }
    fn check(mut self, f: impl Fn(&Run) -> Result<(), String> + 'static) -> Case {
        self.check = Some(Box::new(f));
        self
    }
    /// `p` must not exist after the run (nothing made by a refusal).
    fn leaves_no(self, p: &Path) -> Case {
        let p = p.to_path_buf();
        self.check(move |_| match std::fs::symlink_metadata(&p) {
            Ok(_) => Err(format!("{} was made", p.display())),
            Err(_) => Ok(()),
        })
    }
    /// `p`'s bytes must be what they were before the run.
    fn keeps(self, p: &Path) -> Case {
        let p = p.to_path_buf();
        let before = std::fs::read(&p).unwrap();
        self.check(move |_| match std::fs::read(&p) {
            Ok(now) if now == before => Ok(()),
            _ => Err(format!("{} was changed", p.display())),
        })
    }
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// A kubeconfig whose server is `server`.
fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}\nusers:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n"
    )
}

/// A local port nothing listens on: bound, noted, released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A local port whose listener takes every connection and never answers
/// (a hung API server): held open by a thread for the test's life.
fn silent_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().flatten() {
            held.push(c);
        }
    });
    port
}

/// 1-based line of the first `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).unwrap();
    text[..at].matches('\n').count() + 1
}

/// A repository of the harness's shape in a temporary directory: the
/// Thor scenarios and the answer matrix copied, a few result dirs.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    state: PathBuf,
    cache: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let repo = common::repo_root();
        write(&root.join("Cargo.toml"), "[workspace]\n");
        for s in ["smoke", "medium", "large", "xlarge", "contention"] {
            let f = format!("suites/thor/{s}.yaml");
            write(&root.join(&f), std::fs::read(repo.join(&f)).unwrap());
        }
        write(
            &root.join("baselines/answer.yaml"),
            std::fs::read(repo.join("baselines/answer.yaml")).unwrap(),
        );
        let recorded =
            std::fs::read(repo.join("suites/thor/recorded/smoke-local-1.37/result.json")).unwrap();
        for d in ["s1", "s2", "r1", "r2", "saved"] {
            write(&root.join(d).join("result.json"), &recorded);
            std::fs::create_dir_all(root.join(d).join("runs")).unwrap();
        }
        write(&root.join("a-file"), "not a directory\n");
        write(&root.join("timed.log"), "# name: x\n");
        write(
            &root.join("manifests/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        );
        let state = tmp.path().join("state");
        let cache = tmp.path().join("cache");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        World {
            _tmp: tmp,
            root,
            state,
            cache,
        }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn file(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        write(&p, bytes);
        p
    }
}

fn corpus(w: &World) -> Vec<Case> {
    let mut cases = Vec::new();
    let p = |rel: &str| w.path(rel);

    // 1. Outputs never touch inputs, and an out dir is one that can be
    // made: every command that writes one, each way an out can touch an
    // input or not be a directory.
    std::os::unix::fs::symlink(p("s1"), p("s1-link")).unwrap();
    let outs: Vec<(&str, PathBuf, &str)> = vec![
        ("is an input", p("s1"), "is the input"),
        (
            "is an input, spelled s1/runs/..",
            p("s1/runs/.."),
            "is the input",
        ),
        (
            "is an input through a symlink",
            p("s1-link"),
            "is the input",
        ),
        (
            "is an input, spelled new/../s1",
            p("new/../s1"),
            "is the input",
        ),
        (
            "lies inside an input",
            p("s1/runs/new"),
            "lies inside the input",
        ),
        ("contains an input", w.root.clone(), "contains the input"),
        ("is a regular file", p("a-file"), "it is a file"),
        ("lies under a file", p("a-file/sub"), "not a directory"),
        ("is a device", PathBuf::from("/dev/null"), "device"),
    ];
    for (how, out, says) in &outs {
        cases.push(
            Case::new(
                "1",
                format!("report merge: --out {how}"),
                &[&"report", &"merge", &"--out", out, &p("s1"), &p("s2")],
            )
            .says(*says)
            .at(out.display())
            .keeps(&p("s1/result.json")),
        );
        cases.push(
            Case::new(
                "1",
                format!("report history: --out {how}"),
                &[&"report", &"history", &"--out", out, &p("s1"), &p("s2")],
            )
            .says(*says)
            .at(out.display())
            .leaves_no(&p("s1/history.md")),
        );
        cases.push(
            Case::new(
                "1",
                format!("bench thor --from: --out {how}"),
                &[
                    &"bench",
                    &"thor",
                    &"--scenario",
                    &p("suites/thor/smoke.yaml"),
                    &"--from",
                    &p("s1"),
                    &"--compare",
                    &"--out",
                    out,
                ],
            )
            .says(*says)
            .at(out.display())
            .leaves_no(&p("s1/compare.md")),
        );
    }
    let kc_closed = w.file(
        "kube/closed.yaml",
        kubeconfig(&format!("https://127.0.0.1:{}", closed_port())),
    );
    for (how, out, says) in [
        ("is the --apply dir", p("manifests"), "is the input --apply"),
        (
            "lies inside --apply",
            p("manifests/out"),
            "lies inside the input --apply",
        ),
        (
            "contains --kubeconfig",
            p("kube"),
            "contains the input --kubeconfig",
        ),
        ("is a device", PathBuf::from("/dev/null"), "device"),
    ] {
        cases.push(
            Case::new(
                "1",
                format!("measure: --out {how}"),
                &[
                    &"measure",
                    &"--provider",
                    &"existing",
                    &"--kubeconfig",
                    &kc_closed,
                    &"--apply",
                    &p("manifests"),
                    &"--out",
                    &out,
                ],
            )
            .says(says)
            .at(out.display())
            .leaves_no(&p("manifests/out")),
        );
    }
    // --here runs both sides now: rounds enough for a paired interval,
    // and nothing saved, sharded or recorded beside it.
    cases.push(
        Case::new(
            "1",
            "bench thor --compare --here: one round",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &p("suites/thor/smoke.yaml"),
                &"--compare",
                &"--here",
                &"--out",
                &p("here-out"),
            ],
        )
        .says("3 or more give an interval (asked: 1)")
        .leaves_no(&p("here-out/here.md")),
    );
    cases.push(
        Case::new(
            "1",
            "bench thor --compare --here: with --record-band",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &p("suites/thor/smoke.yaml"),
                &"--compare",
                &"--here",
                &"--repeat",
                &"3",
                &"--record-band",
                &"--out",
                &p("here-out"),
            ],
        )
        .says("drop --record-band")
        .leaves_no(&p("here-out/here.md")),
    );
    cases.push(
        Case::new(
            "1",
            "bench thor: --out contains the scenario",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &p("suites/thor/smoke.yaml"),
                &"--out",
                &p("suites"),
            ],
        )
        .says("contains the input --scenario")
        .at(p("suites").display()),
    );
    for (how, out, says) in [
        (
            "contains the matrix",
            p("baselines"),
            "contains the input --matrix",
        ),
        ("is a regular file", p("a-file"), "it is a file"),
        ("is a device", PathBuf::from("/dev/null"), "device"),
    ] {
        cases.push(
            Case::new(
                "1",
                format!("bench answer --plan: --out {how}"),
                &[&"bench", &"answer", &"--plan", &"--out", &out],
            )
            .says(says)
            .at(out.display()),
        );
    }
    cases.push(
        Case::new(
            "1",
            "report timings --record: the out file is the input log",
            &[
                &"report",
                &"timings",
                &"--record",
                &p("timed.log"),
                &"--title",
                &"t",
                &p("timed.log"),
            ],
        )
        .says("is the input")
        .at(p("timed.log").display())
        .keeps(&p("timed.log")),
    );
    for (how, out, says) in [
        ("it is a directory", p("s2"), "it is a directory"),
        (
            "lies under a file",
            p("a-file/image.tar"),
            "not a directory",
        ),
        ("is a device", PathBuf::from("/dev/null"), "device"),
    ] {
        cases.push(
            Case::new(
                "1",
                format!("image build: --out {how}"),
                &[&"image", &"build", &"--out", &out],
            )
            .says(says)
            .at(out.display()),
        );
    }

    // 2. Check before building: a malformed reference, kubeconfig or
    // shard is refused before a binary is resolved or a file written.
    for bad in [
        "no-registry",
        "/repo",
        "localhost:5000/",
        "reg.io/UPPER",
        "reg.io/repo:bad tag",
        "reg.io/repo:",
        "reg.io//double",
    ] {
        cases.push(
            Case::new(
                "2",
                format!("image build --push {bad:?}"),
                &[
                    &"image",
                    &"build",
                    &"--out",
                    &p("img/x.tar"),
                    &"--push",
                    &bad,
                ],
            )
            .says(format!("--push {bad:?}"))
            .leaves_no(&p("img")),
        );
    }
    let kc_garbage = w.file("kube/garbage.yaml", "clusters: [1, 2\n");
    for (what, kc, says) in [
        ("not a kubeconfig", kc_garbage.clone(), "not a kubeconfig"),
        ("missing", p("kube/none.yaml"), "kube/none.yaml"),
        ("a directory", p("kube"), "kube"),
    ] {
        cases.push(
            Case::new(
                "2",
                format!("bench thor --on-cluster: --kubeconfig {what}, --out not made"),
                &[
                    &"bench",
                    &"thor",
                    &"--scenario",
                    &p("suites/thor/smoke.yaml"),
                    &"--on-cluster",
                    &"--image",
                    &"reg.io/h:1",
                    &"--kubeconfig",
                    &kc,
                    &"--out",
                    &p("oc-out"),
                ],
            )
            .says(says)
            .leaves_no(&p("oc-out")),
        );
        cases.push(
            Case::new(
                "2",
                format!("measure --on-cluster: --kubeconfig {what}, --out not made"),
                &[
                    &"measure",
                    &"--on-cluster",
                    &"--image",
                    &"reg.io/h:1",
                    &"--kubeconfig",
                    &kc,
                    &"--out",
                    &p("oc-out"),
                    &"--",
                    &"true",
                ],
            )
            .says(says)
            .leaves_no(&p("oc-out")),
        );
    }
    for (shard, seed) in [("3/2", Some("1")), ("1/2", None), ("0/2", Some("1"))] {
        let mut args: Vec<OsString> = ["measure", "--provider", "existing", "--kubeconfig"]
            .map(OsString::from)
            .to_vec();
        args.push(kc_closed.clone().into());
        args.extend(["--repeat", "2", "--shard", shard].map(OsString::from));
        if let Some(s) = seed {
            args.extend(["--seed".into(), s.into()]);
        }
        args.extend([
            "--out".into(),
            p("shard-out").into(),
            "--".into(),
            "true".into(),
        ]);
        let mut c = Case::new(
            "2",
            format!("measure --shard {shard} seed {seed:?}, nothing made"),
            &[],
        )
        .says("--shard")
        .leaves_no(&p("shard-out"));
        c.args = args;
        cases.push(c);
    }

    // A command that fails after its out dir was made leaves no empty
    // one behind.
    cases.push(
        Case::new(
            "2",
            "bench thor --provider existing, unreachable: no empty --out left",
            &[
                &"bench",
                &"thor",
                &"--scenario",
                &p("suites/thor/smoke.yaml"),
                &"--provider",
                &"existing",
                &"--kubeconfig",
                &kc_closed,
                &"--out",
                &p("left-out"),
            ],
        )
        .want(3)
        .at(kc_closed.display())
        .leaves_no(&p("left-out")),
    );
    cases.push(
        Case::new(
            "2",
            "measure --provider existing, unreachable: no empty --out left",
            &[
                &"measure",
                &"--provider",
                &"existing",
                &"--kubeconfig",
                &kc_closed,
                &"--out",
                &p("left-out"),
                &"--",
                &"true",
            ],
        )
        .want(3)
        .at(kc_closed.display())
        .leaves_no(&p("left-out")),
    );

    // 3. A cluster that does not answer is named (server and kubeconfig)
    // within seconds.
    let port_url = format!("https://127.0.0.1:{}", closed_port());
    let kc_closed2 = w.file("kube2/closed.yaml", kubeconfig(&port_url));
    let kc_nohost = w.file(
        "kube2/nohost.yaml",
        kubeconfig("https://no-such-host.invalid:6443"),
    );
    let silent_url = format!("https://127.0.0.1:{}", silent_port());
    let kc_silent = w.file("kube2/silent.yaml", kubeconfig(&silent_url));
    for (what, kc, url) in [
        ("a closed local port", &kc_closed2, port_url.as_str()),
        (
            "a server that takes connections and never answers",
            &kc_silent,
            silent_url.as_str(),
        ),
        (
            "a host that does not resolve",
            &kc_nohost,
            "https://no-such-host.invalid:6443",
        ),
    ] {
        cases.push(
            Case::new(
                "3",
                format!("bench thor --on-cluster --image: {what}"),
                &[
                    &"bench",
                    &"thor",
                    &"--scenario",
                    &p("suites/thor/smoke.yaml"),
                    &"--on-cluster",
                    &"--image",
                    &"reg.io/h:1",
                    &"--kubeconfig",
                    kc,
                    &"--out",
                    &p("oc3"),
                ],
            )
            .want(3)
            .says(url)
            .at(kc.display())
            .within(UNREACHABLE)
            .leaves_no(&p("oc3")),
        );
        cases.push(
            Case::new(
                "3",
                format!("measure --on-cluster --image: {what}"),
                &[
                    &"measure",
                    &"--on-cluster",
                    &"--image",
                    &"reg.io/h:1",
                    &"--kubeconfig",
                    kc,
                    &"--out",
                    &p("oc3"),
                    &"--",
                    &"true",
                ],
            )
            .want(3)
            .says(url)
            .at(kc.display())
            .within(UNREACHABLE)
            .leaves_no(&p("oc3")),
        );
    }
    // The matrix's set fails the same way, said as every command says an
    // error (`error: ` first).
    cases.push(
        Case::new(
            "3",
            "bench answer --on-cluster: a closed port, said as an error",
            &[
                &"bench",
                &"answer",
                &"--only",
                &"smoke local 1.37",
                &"--on-cluster",
                &"--image",
                &"reg.io/h:1",
                &"--kubeconfig",
                &kc_closed2,
                &"--out",
                &p("answer-out"),
            ],
        )
        .want(3)
        .says("error: set smoke local 1.37: ")
        .says(port_url.as_str())
        .at(kc_closed2.display())
        .within(UNREACHABLE),
    );

    // 4. Selections: a blank --only, an empty axis, a matrix too large to
    // expand, a baseline path that is not a file.
    for only in ["", " ", "\t"] {
        cases.push(
            Case::new(
                "4",
                format!("bench answer --plan --only {only:?}"),
                &[&"bench", &"answer", &"--plan", &"--only", &only],
            )
            .says("empty pattern"),
        );
    }
    cases.push(
        Case::new(
            "4",
            "bench answer --plan --only smoke --only ''",
            &[
                &"bench", &"answer", &"--plan", &"--only", &"smoke", &"--only", &"",
            ],
        )
        .says("empty pattern"),
    );
    for field in ["scenario", "provider", "k8sMinor"] {
        let text = match field {
            "scenario" => {
                "sets:\n- scenario: smoke\n  repeat: 3\n- scenario: []\n  repeat: 3\n".to_string()
            }
            f => format!(
                "sets:\n- scenario: smoke\n  repeat: 3\n- scenario: medium\n  {f}: []\n  repeat: 3\n"
            ),
        };
        let line = line_of(&text, "[]");
        let m = w.file(&format!("m/empty-{field}.yaml"), &text);
        let at = format!("{}:{line}:", m.display());
        cases.push(
            Case::new(
                "4",
                format!("bench answer --plan: {field}: []"),
                &[&"bench", &"answer", &"--plan", &"--matrix", &m],
            )
            .says("empty list")
            .at(&at),
        );
        cases.push(
            Case::new(
                "4",
                format!("report headline --matrix: {field}: []"),
                &[&"report", &"headline", &"--matrix", &m],
            )
            .says("empty list")
            .at(&at),
        );
    }
    // ~20 KB whose lists multiply into a million sets, every value a
    // valid one (so nothing but the count can stop it early).
    let many = |n: usize, v: &str| vec![v; n].join(", ");
    let minors: Vec<&str> = (0..100)
        .map(|i| if i % 2 == 0 { "\"1.36\"" } else { "\"1.37\"" })
        .collect();
    let big = format!(
        "sets:\n- scenario: [{}]\n  provider: [{}]\n  k8sMinor: [{}]\n  repeat: 3\n",
        many(100, "smoke"),
        many(100, "local"),
        minors.join(", ")
    );
    assert!(big.len() < 20_000, "{}", big.len());
    let m = w.file("m/million.yaml", &big);
    cases.push(
        Case::new(
            "4",
            "bench answer --plan: a million sets",
            &[&"bench", &"answer", &"--plan", &"--matrix", &m],
        )
        .says("1000000 sets")
        .at(format!("{}:", m.display())),
    );
    cases.push(
        Case::new(
            "4",
            "report headline --matrix: a million sets",
            &[&"report", &"headline", &"--matrix", &m],
        )
        .says("1000000 sets")
        .at(format!("{}:", m.display())),
    );
    // Sets the repository's matrix does not name: the medium's baseline
    // on 1.36 a FIFO, the large's a directory.
    let fifo = "baselines/local/1.36/medium.json";
    mkfifo(&p(fifo));
    let dir = "baselines/local/1.36/large.tuned.json";
    std::fs::create_dir_all(p(dir)).unwrap();
    let m_fifo = w.file(
        "m/medium-1.36.yaml",
        "sets:\n- scenario: medium\n  k8sMinor: \"1.36\"\n  repeat: 3\n",
    );
    let m_dir = w.file(
        "m/large-1.36.yaml",
        "sets:\n- scenario: large\n  k8sMinor: \"1.36\"\n  repeat: 3\n",
    );
    for (what, m, path) in [("a FIFO", &m_fifo, fifo), ("a directory", &m_dir, dir)] {
        for (cmd, args) in [
            ("report headline --matrix", vec!["report", "headline"]),
            ("bench answer --plan", vec!["bench", "answer", "--plan"]),
            (
                "bench answer --missing --plan",
                vec!["bench", "answer", "--missing", "--plan"],
            ),
        ] {
            let mut c = Case::new("4", format!("{cmd}: the baseline is {what}"), &[])
                .says("not a regular file")
                .at(path);
            c.args = args.into_iter().map(OsString::from).collect();
            c.args
                .extend(["--matrix".into(), m.clone().into_os_string()]);
            cases.push(c);
        }
    }

    // Unusual but valid: a fresh out dir beside the inputs, a whole
    // matrix planned, a set's name picked.
    cases.push(
        Case::new(
            "ok",
            "bench answer --plan --out beside the matrix",
            &[&"bench", &"answer", &"--plan", &"--out", &p("answer-out")],
        )
        .want(0)
        .says("smoke local 1.37 (baselines/local/1.37/smoke.json"),
    );
    cases.push(
        Case::new(
            "ok",
            "report headline --matrix: a set not recorded yet",
            &[
                &"report",
                &"headline",
                &"--matrix",
                &w.file("m/large.yaml", "sets:\n- scenario: large\n  repeat: 3\n"),
            ],
        )
        .want(0)
        .says("Not recorded yet"),
    );
    cases
}

/// What went wrong with one case; empty when it did what it should.
fn judge(w: &World, c: &Case, r: &Run) -> Vec<String> {
    let mut p = common::capped::problems(r, c.want, &c.says, c.bound);
    if let Some(check) = &c.check
        && let Err(e) = check(r)
    {
        p.push(e);
    }
    if std::fs::read_dir(&w.state).is_ok_and(|mut d| d.next().is_some()) {
        p.push("cluster state left behind".into());
    }
    p
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[test]
fn hostile_command_lines_are_refused_cleanly_before_anything_is_made() {
    let started = std::time::Instant::now();
    let w = World::new();
    let cases = corpus(&w);
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let bin = env!("CARGO_BIN_EXE_harness");
    let mut outcomes = Vec::new();
    for c in &cases {
        let mut cmd = Command::new(bin);
        cmd.args(&c.args).current_dir(&w.root);
        for k in [
            "HARNESS_MAX_INPUT_BYTES",
            "HARNESS_LOG",
            "RUST_BACKTRACE",
            "KUBECONFIG",
        ] {
            cmd.env_remove(k);
        }
        // A proxy would change how a client is built (kube refuses one).
        for k in [
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ALL_PROXY",
            "https_proxy",
            "http_proxy",
        ] {
            cmd.env_remove(k);
        }
        cmd.env("HARNESS_STATE_DIR", &w.state)
            .env("HARNESS_CACHE_DIR", &w.cache);
        let hard = c.bound + Duration::from_secs(10);
        let r = run(cmd, AS_CAP, hard);
        let problems = judge(&w, c, &r);
        outcomes.push((c, r, problems));
    }

    println!(
        "\nhostile command lines (issue 53): {bin}, RLIMIT_AS {} GiB",
        AS_CAP >> 30
    );
    println!(
        "{:>3}  {:<5} {:<64} {:>5} {:>5} {:>8} {:>10}  result",
        "#", "class", "case", "exit", "want", "time", "peak RSS"
    );
    for (i, (c, r, problems)) in outcomes.iter().enumerate() {
        let exit = match (r.code, r.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "?".into(),
        };
        println!(
            "{:>3}  {:<5} {:<64} {:>5} {:>5} {:>7.3}s {:>10}  {}",
            i + 1,
            c.class,
            c.name.chars().take(64).collect::<String>(),
            exit,
            c.want,
            r.took.as_secs_f64(),
            mib(r.max_rss_kib),
            if problems.is_empty() {
                "ok".to_string()
            } else {
                problems.join("; ")
            }
        );
    }
    let count = |f: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let clean = |o: &Outcome| o.0.want != 0 && o.2.is_empty();
    let panicked = |o: &Outcome| o.2.iter().any(|p| p.starts_with("PANIC"));
    let oom = |o: &Outcome| {
        o.2.iter().any(|p| p.starts_with("OOM"))
            || matches!(
                o.1.signal,
                Some(libc::SIGABRT | libc::SIGSEGV | libc::SIGBUS)
            )
    };
    let hung = |o: &Outcome| {
        o.2.iter().any(|p| p.starts_with("HANG")) || o.1.signal == Some(libc::SIGKILL)
    };
    let peak = outcomes.iter().max_by_key(|o| o.1.max_rss_kib).unwrap();
    let longest = outcomes.iter().max_by_key(|o| o.1.took).unwrap();
    println!("\nsummary");
    println!("  cases                    {}", outcomes.len());
    println!(
        "  clean, with location     {}",
        count(&|o| clean(o) && o.0.located)
    );
    println!(
        "  clean, without           {}",
        count(&|o| clean(o) && !o.0.located)
    );
    println!(
        "  valid, accepted (exit 0) {}",
        count(&|o| o.0.want == 0 && o.2.is_empty())
    );
    println!(
        "  accepted malformed       {}",
        count(&|o| o.0.want != 0 && o.1.code == Some(0))
    );
    println!("  panics                   {}", count(&panicked));
    println!("  hangs                    {}", count(&hung));
    println!("  out of memory            {}", count(&oom));
    println!(
        "  other failures           {}",
        count(&|o| !(o.2.is_empty()
            || panicked(o)
            || hung(o)
            || oom(o)
            || (o.0.want != 0 && o.1.code == Some(0))))
    );
    println!(
        "  worst peak RSS           {} ({})",
        mib(peak.1.max_rss_kib),
        peak.0.name
    );
    println!(
        "  longest case             {:.3} s ({})",
        longest.1.took.as_secs_f64(),
        longest.0.name
    );
    println!(
        "  wall time                {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.2.is_empty())
        .map(|(c, r, problems)| {
            format!(
                "[{}] {}: {}\n--- output ---\n{}",
                c.class,
                c.name,
                problems.join("; "),
                r.text().chars().take(1500).collect::<String>()
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} case(s) failed:\n{}",
        failed.len(),
        failed.join("\n\n")
    );
}
