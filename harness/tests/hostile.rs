//! Hostile input (issue 16): a corpus of malformed, oversized, recursive and
//! unusual inputs run against the built `harness` binary. Every case must
//! fail (or pass) cleanly before any cluster starts: the expected exit code,
//! `file:line` where a line applies, under a time bound, within an address
//! space cap set with setrlimit(RLIMIT_AS) in the child, no panic, no
//! signal, and no cluster state left behind. One table of the results and
//! the summary figures the issue asks for are printed (`--nocapture`).
//!
//! No cluster, binary download or network is needed.

mod common;

use common::capped::{Run, run};

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The address-space cap of every run. A normal `validate` of the whole
/// repository runs under 256 MiB of address space (debug build); 2 GiB
/// leaves room, and an unbounded parse hits it at once.
const AS_CAP: u64 = 2 << 30;
/// `bench thor` must refuse bad input "in well under a second".
const BENCH_BOUND: Duration = Duration::from_secs(1);
/// A small `validate` (startup, one file) — ~0.1 s here.
const FAST: Duration = Duration::from_secs(5);

type Check = Box<dyn Fn(&Run) -> Result<(), String>>;

/// One hostile input.
struct Case {
    /// The issue's class (1–15) or "own".
    class: &'static str,
    name: String,
    args: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(&'static str, OsString)>,
    /// The exit code it must give; 0 for unusual but valid input.
    want: i32,
    /// Text that must appear in stdout or stderr (file:line where a line
    /// applies).
    says: Vec<String>,
    bound: Duration,
    check: Option<Check>,
}

impl Case {
    /// `cmd`'s words, each `{}` replaced by the next of `paths`.
    fn new(
        class: &'static str,
        name: &str,
        cwd: &Path,
        cmd: &str,
        paths: &[&dyn AsRef<OsStr>],
    ) -> Case {
        let mut paths = paths.iter();
        let args = cmd
            .split_whitespace()
            .map(|w| match w {
                "{}" => paths
                    .next()
                    .expect("a path for each {}")
                    .as_ref()
                    .to_owned(),
                w => w.into(),
            })
            .collect();
        Case {
            class,
            name: name.to_string(),
            args,
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
            want: 2,
            says: Vec::new(),
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
    fn within(mut self, d: Duration) -> Case {
        self.bound = d;
        self
    }
    fn env(mut self, k: &'static str, v: impl Into<OsString>) -> Case {
        self.env.push((k, v.into()));
        self
    }
    fn check(mut self, f: impl Fn(&Run) -> Result<(), String> + 'static) -> Case {
        self.check = Some(Box::new(f));
        self
    }
}

/// 1-based line of the first `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in text"));
    text[..at].matches('\n').count() + 1
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

fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Every entry below `dir`, for "nothing was written" checks.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.clone());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(tree(&p));
            }
        }
    }
    out.sort();
    out
}

/// No raw control characters other than tab, newline and carriage return.
fn no_raw_controls(what: &str, s: &str) -> Result<(), String> {
    match s
        .chars()
        .find(|c| (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || *c == '\u{7f}')
    {
        Some(c) => Err(format!("{what}: raw control character U+{:04X}", c as u32)),
        None => Ok(()),
    }
}

/// A small well-formedness check of XML: legal characters, known entities,
/// quoted attributes without '<', and balanced tags.
fn well_formed_xml(xml: &str) -> Result<(), String> {
    // XML 1.0 Char: tab, newline, carriage return and #x20 up (not
    // #xFFFE, #xFFFF).
    if let Some(c) = xml.chars().find(|c| {
        (*c < ' ' && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}')
    }) {
        return Err(format!(
            "XML: character U+{:04X} XML cannot carry",
            c as u32
        ));
    }
    for (i, _) in xml.match_indices('&') {
        let rest = &xml[i..];
        if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"]
            .iter()
            .any(|e| rest.starts_with(e))
        {
            return Err(format!("bare '&' at byte {i}"));
        }
    }
    let mut open: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        let after = &rest[lt + 1..];
        let gt = after.find('>').ok_or("unclosed tag")?;
        let tag = &after[..gt];
        if tag.contains('<') {
            return Err(format!("'<' inside tag {tag:?}"));
        }
        if !tag.matches('"').count().is_multiple_of(2) {
            return Err(format!("unbalanced quotes in tag {tag:?}"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(o) if o == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else if !tag.starts_with('?') && !tag.starts_with('!') && !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap_or_default();
            open.push(name.to_string());
        }
        rest = &after[gt + 1..];
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed elements {open:?}"))
    }
}

const SCENARIO: &str = "name: smoke
thor: {numWorkers: 2, maxGraphs: 2}
workunits: 4
graphDuration: 3s
modes: [baseline]
cluster: {k8sMinor: \"1.37\", nodes: 3, nodeCpu: \"32\", nodeMemory: 256Gi}
";

const GANG: &str = r#"description: an eligible Job gets a Workload and a PodGroup
behaviour: {"1.36": "gang", "1.37": "basic"}
steps:
  - name: create the Job
    apply:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: train}
      spec:
        completionMode: Indexed
        parallelism: 4
        completions: 4
        template:
          spec:
            restartPolicy: Never
            containers: [{name: work, image: registry.k8s.io/pause:3.10}]
  - name: objects
    expect:
      "1.36":
        - kind: Workload
          count: 1
          capture: {wl: metadata.name, tpl: "spec.podGroupTemplates[0].name"}
        - kind: PodGroup
          count: 1
          fields:
            metadata.name: {$prefix: "${wl}-${tpl}-"}
      "1.37":
        - kind: Workload
          count: 1
          capture: {wl: metadata.name, tpl: "spec.podGroupTemplates[0].name"}
"#;

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n";

/// "Billion laughs": a list of ten, then `levels` levels of ten aliases.
fn alias_bomb(prefix: &str, levels: usize) -> String {
    let mut s = format!("{prefix}a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..=levels {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        s.push_str(&format!("{prefix}a{i}: &a{i} [{refs}]\n"));
    }
    s
}

/// The scratch world: a repository, a state and a cache directory.
struct World {
    tmp: tempfile::TempDir,
    /// Parent of the repository (a traversal would land here).
    outer: PathBuf,
    root: PathBuf,
    state: PathBuf,
    cache: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let outer = tmp.path().join("outer");
        let root = outer.join("repo");
        write(&root.join("Cargo.toml"), "[workspace]\n");
        std::fs::create_dir_all(root.join("manifests")).unwrap();
        let state = tmp.path().join("state");
        let cache = tmp.path().join("cache");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        World {
            outer,
            root,
            state,
            cache,
            tmp,
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
    /// `harness validate --root ROOT FILE…`
    fn validate(&self, class: &'static str, name: &str, files: &[&str]) -> Case {
        let mut args: Vec<OsString> = vec!["validate".into(), "--root".into()];
        args.push(self.root.clone().into());
        args.extend(files.iter().map(|f| self.path(f).into_os_string()));
        Case {
            args,
            ..Case::new(class, name, &self.root, "", &[]).want(1)
        }
    }
    /// `harness bench thor --scenario FILE --out OUT EXTRA…` from the repo.
    fn bench(&self, class: &'static str, name: &str, scenario: &str, extra: &[&str]) -> Case {
        let mut args: Vec<OsString> = vec!["bench".into(), "thor".into(), "--scenario".into()];
        args.push(self.path(scenario).into());
        args.push("--out".into());
        args.push(self.tmp.path().join("bench-out").into());
        args.extend(extra.iter().map(OsString::from));
        Case {
            args,
            ..Case::new(class, name, &self.root, "", &[]).within(BENCH_BOUND)
        }
    }
}

/// The outcome of one case, for the table.
struct Outcome {
    class: &'static str,
    name: String,
    want: i32,
    run: Run,
    bound: Duration,
    problems: Vec<String>,
}

fn judge(w: &World, c: &Case, r: &Run) -> Vec<String> {
    let mut p = common::capped::problems(r, c.want, &c.says, c.bound);
    if let Some(check) = &c.check
        && let Err(e) = check(r)
    {
        p.push(e);
    }
    let left = tree(&w.state);
    if !left.is_empty() {
        p.push(format!("cluster state left behind: {left:?}"));
    }
    p
}

/// The corpus; `w` holds its files.
fn corpus(w: &World) -> Vec<Case> {
    let mut cases = Vec::new();
    let repo = common::repo_root();

    // 1. Alias expansion: billion laughs, and two of our own.
    let bomb = w.file(
        "manifests/bomb.yaml",
        format!("{CONFIGMAP}{}", alias_bomb("  ", 8)),
    );
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1024);
    cases.push(
        w.validate(
            "1",
            "billion laughs 8×10 in a manifest",
            &["manifests/bomb.yaml"],
        )
        .says("manifests/bomb.yaml:9:")
        .says("aliases expand"),
    );
    w.file("suites/thor/bomb.yaml", alias_bomb("", 8));
    cases.push(
        w.bench(
            "1",
            "billion laughs 8×10 as --scenario",
            "suites/thor/bomb.yaml",
            &[],
        )
        .says("suites/thor/bomb.yaml:5:")
        .says("aliases expand"),
    );
    w.file(
        "manifests/longbomb.yaml",
        format!(
            "{CONFIGMAP}  a: &s \"{}\"\n  b: [{}]\n",
            "x".repeat(1 << 20),
            ["*s"; 200].join(",")
        ),
    );
    cases.push(
        w.validate(
            "own",
            "1 MiB string aliased 200 times",
            &["manifests/longbomb.yaml"],
        )
        .says("manifests/longbomb.yaml:6:")
        .says("aliases expand"),
    );
    w.file(
        "manifests/wide.yaml",
        format!(
            "{CONFIGMAP}  a: &a [1,1,1,1,1,1,1,1,1,1]\n  b: [{}]\n",
            ["*a"; 200_000].join(",")
        ),
    );
    cases.push(
        w.validate("own", "600 KB of 200 000 aliases", &["manifests/wide.yaml"])
            .says("manifests/wide.yaml:6:")
            .says("aliases expand"),
    );

    // 2. Duplicate keys, linearly.
    let mut keys = String::from(CONFIGMAP);
    for i in 0..80_000 {
        keys.push_str(&format!("  k{i}: v\n"));
    }
    keys.push_str("  k5: again\n");
    w.file("manifests/keys.yaml", &keys);
    cases.push(
        w.validate(
            "2",
            "80 000-key mapping with a duplicate",
            &["manifests/keys.yaml"],
        )
        .says(format!("manifests/keys.yaml:{}:3", 80_005))
        .says("duplicate key \"k5\" (first at line 10")
        .within(Duration::from_secs(10)),
    );
    let mut labels =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n");
    for i in 0..80_000 {
        labels.push_str(&format!("    Bad_{i}!: v\n"));
    }
    w.file("manifests/labels.yaml", &labels);
    cases.push(
        w.validate(
            "own",
            "80 000 invalid label keys",
            &["manifests/labels.yaml"],
        )
        .says("manifests/labels.yaml:6:5")
        .says("80000 problem(s)")
        .within(Duration::from_secs(10)),
    );
    let mut wide = SCENARIO.to_string();
    for i in 0..80_000 {
        wide.push_str(&format!("x{i}: 1\n"));
    }
    w.file("suites/thor/wide.yaml", &wide);
    cases.push(
        w.bench(
            "own",
            "scenario with 80 000 unknown keys",
            "suites/thor/wide.yaml",
            &[],
        )
        .says("suites/thor/wide.yaml:7:1")
        .says("unknown field")
        .within(Duration::from_secs(10)),
    );

    // 3. Files that are not regular files.
    mkfifo(&w.path("suites/thor/fifo.yaml"));
    cases.push(
        w.bench("3", "FIFO as --scenario", "suites/thor/fifo.yaml", &[])
            .says("not a regular file"),
    );
    mkfifo(&w.path("manifests/fifo.yaml"));
    cases.push(
        // Named itself, a FIFO is bad input as a missing path is (issue
        // 30); found in a named folder it is a finding (reliability.rs).
        w.validate("3", "FIFO under manifests/", &["manifests/fifo.yaml"])
            .want(2)
            .says("manifests/fifo.yaml: not a regular file"),
    );
    symlink("/dev/zero", &w.path("suites/thor/zero.yaml"));
    cases.push(
        w.bench(
            "3",
            "symlink to /dev/zero as --scenario",
            "suites/thor/zero.yaml",
            &[],
        )
        .says("not a regular file"),
    );
    symlink("/dev/zero", &w.path("manifests/zero.yaml"));
    cases.push(
        w.validate(
            "3",
            "symlink to /dev/zero under manifests/",
            &["manifests/zero.yaml"],
        )
        .want(2)
        .says("manifests/zero.yaml: not a regular file"),
    );
    std::fs::create_dir_all(w.path("suites/thor/dir.yaml")).unwrap();
    cases.push(
        w.bench(
            "own",
            "a directory as --scenario",
            "suites/thor/dir.yaml",
            &[],
        )
        .says("a directory"),
    );
    let kind_fifo = w.path("kind-fifo.yaml");
    mkfifo(&kind_fifo);
    cases.push(
        Case::new(
            "own",
            "FIFO as `up --provider kind --config`",
            &w.root,
            "up --provider kind --name hostile --config {}",
            &[&kind_fifo],
        )
        .says("not a regular file")
        .within(BENCH_BOUND),
    );
    cases.push(
        Case::new(
            "own",
            "/dev/zero as `up --hpcc-values`",
            &w.root,
            "up --provider kind --name hostile --config {} --hpcc baseline --hpcc-values {}",
            &[&kind_fifo, &w.path("suites/thor/zero.yaml")],
        )
        .says("--hpcc-values")
        .says("not a regular file")
        .within(BENCH_BOUND),
    );

    // 4. Size.
    w.file(
        "manifests/8k.yaml",
        format!("{CONFIGMAP}  a: \"{}\"\n", "x".repeat(8192)),
    );
    cases.push(
        w.validate(
            "4",
            "8 KiB manifest, HARNESS_MAX_INPUT_BYTES=4096",
            &["manifests/8k.yaml"],
        )
        .env("HARNESS_MAX_INPUT_BYTES", "4096")
        .says("manifests/8k.yaml:1:1")
        .says("over the 4096-byte limit"),
    );
    w.file(
        "suites/thor/8k.yaml",
        format!("{SCENARIO}description: \"{}\"\n", "x".repeat(8192)),
    );
    cases.push(
        w.bench(
            "4",
            "8 KiB scenario, HARNESS_MAX_INPUT_BYTES=4096",
            "suites/thor/8k.yaml",
            &[],
        )
        .env("HARNESS_MAX_INPUT_BYTES", "4096")
        .says("over the 4096-byte limit"),
    );
    let big = format!("{CONFIGMAP}  a: \"{}\"\n", "x".repeat(17 << 20));
    w.file("manifests/17m.yaml", &big);
    cases.push(
        w.validate(
            "4",
            "17 MiB manifest at the default 16 MiB cap",
            &["manifests/17m.yaml"],
        )
        .says("manifests/17m.yaml:1:1")
        .says("over the 16777216-byte limit"),
    );
    w.file("suites/thor/17m.yaml", &big);
    cases.push(
        w.bench(
            "own",
            "17 MiB scenario at the default cap",
            "suites/thor/17m.yaml",
            &[],
        )
        .says("over the 16777216-byte limit"),
    );

    // 5. Files built into the binary are checked on disk.
    let rbac = std::fs::read_to_string(repo.join("manifests/hpcc/rbac/baseline.yaml")).unwrap();
    let rbac = rbac.replacen("\nrules:", "\nrulez:", 1);
    w.file("manifests/hpcc/rbac/baseline.yaml", &rbac);
    let js = std::fs::read_to_string(repo.join("manifests/hpcc/jobset/thor-jobset.yaml")).unwrap();
    let js = js.replacen("parallelism:", "parallelizm:", 1);
    w.file("manifests/hpcc/jobset/thor-jobset.yaml", &js);
    cases.push(
        w.validate(
            "5",
            "unknown fields in on-disk copies of built-in templates",
            &[
                "manifests/hpcc/rbac/baseline.yaml",
                "manifests/hpcc/jobset/thor-jobset.yaml",
            ],
        )
        .says(format!(
            "manifests/hpcc/rbac/baseline.yaml:{}:",
            line_of(&rbac, "rulez:")
        ))
        .says(format!(
            "manifests/hpcc/jobset/thor-jobset.yaml:{}:",
            line_of(&js, "parallelizm:")
        ))
        .within(Duration::from_secs(30)),
    );

    // 6. One set of rules for scenarios: validate (exit 1, a finding) and
    // bench (exit 2, before any cluster, in well under a second).
    let variants: Vec<(&'static str, &str, String, String)> = vec![
        (
            "6",
            "nodeCpu: banana",
            SCENARIO.replace("nodeCpu: \"32\"", "nodeCpu: banana"),
            "nodeCpu".into(),
        ),
        (
            "6",
            "thor.name: \"Thor_Bad!\"",
            SCENARIO.replace("thor: {", "thor: {name: \"Thor_Bad!\", "),
            "thor".into(),
        ),
        (
            "6",
            "numWorkers: 4294967295",
            SCENARIO.replace("numWorkers: 2", "numWorkers: 4294967295"),
            "thor".into(),
        ),
        (
            "own",
            "numWorkers: 4294967296 (past u32)",
            SCENARIO.replace("numWorkers: 2", "numWorkers: 4294967296"),
            "thor".into(),
        ),
        (
            "own",
            "numWorkers: -1",
            SCENARIO.replace("numWorkers: 2", "numWorkers: -1"),
            "thor".into(),
        ),
        (
            "own",
            "numWorkers: 1e400",
            SCENARIO.replace("numWorkers: 2", "numWorkers: 1e400"),
            "thor".into(),
        ),
        (
            "6",
            "graphDuration: 5124095576030432h",
            SCENARIO.replace("graphDuration: 3s", "graphDuration: 5124095576030432h"),
            "graphDuration".into(),
        ),
        (
            "own",
            "graphDuration: 3 (no unit)",
            SCENARIO.replace("graphDuration: 3s", "graphDuration: 3"),
            "graphDuration".into(),
        ),
        ("6", "empty scenario", String::new(), String::new()),
        ("own", "comments only", "# nothing\n".into(), String::new()),
        (
            "6",
            "a bad second document",
            format!("{SCENARIO}---\nbogus: 1\n"),
            "bogus".into(),
        ),
        (
            "own",
            "a valid second document",
            format!("{SCENARIO}---\n{SCENARIO}"),
            "---".into(),
        ),
        (
            "own",
            "a list, not a mapping",
            "- 1\n- 2\n".into(),
            String::new(),
        ),
        (
            "own",
            "tab-indented",
            SCENARIO.replace(
                "thor: {numWorkers: 2, maxGraphs: 2}",
                "thor:\n\tnumWorkers: 2",
            ),
            "\t".into(),
        ),
        (
            "own",
            "a mapping as a key",
            format!("{SCENARIO}? [a, b]\n: c\n"),
            "? [a".into(),
        ),
        (
            "own",
            "ESC and BEL in nodeMemory",
            SCENARIO.replace("256Gi", "\"\\e]0;pwned\\a\""),
            "nodeMemory".into(),
        ),
    ];
    for (i, (class, what, text, at)) in variants.into_iter().enumerate() {
        let rel = format!("suites/thor/v{i}.yaml");
        w.file(&rel, &text);
        let line = if at.is_empty() {
            1
        } else if at == "---" {
            line_of(&text, "---") + 1
        } else {
            line_of(&text, &at)
        };
        let at_line = format!("{rel}:{line}:");
        let no_esc = |r: &Run| no_raw_controls("terminal", &r.text());
        cases.push(
            w.validate(class, &format!("scenario {what} (validate)"), &[&rel])
                .says(at_line.clone())
                .check(no_esc),
        );
        cases.push(
            w.bench(class, &format!("scenario {what} (bench)"), &rel, &[])
                .says(at_line)
                .check(no_esc),
        );
    }
    w.file("suites/thor/ok.yaml", SCENARIO);
    cases.push(
        w.bench(
            "own",
            "--set thor.numWorkers=4294967295",
            "suites/thor/ok.yaml",
            &["--set", "thor.numWorkers=4294967295"],
        )
        .says("numWorkers"),
    );
    cases.push(
        w.bench(
            "own",
            "--set with an alias to nothing",
            "suites/thor/ok.yaml",
            &["--set", "thor.maxGraphs=*a"],
        )
        .says("--set"),
    );
    cases.push(
        w.bench(
            "own",
            "--modes bogus",
            "suites/thor/ok.yaml",
            &["--modes", "bogus"],
        )
        .says("--modes"),
    );

    // 6. Gang cases: out-of-range numbers and unclosed variables.
    for (class, what, text, at) in [
        (
            "6",
            "completions: 1e400",
            GANG.replace("completions: 4", "completions: 1e400"),
            "1e400",
        ),
        (
            "own",
            "completions: .inf",
            GANG.replace("completions: 4", "completions: .inf"),
            ".inf",
        ),
        (
            "6",
            "\"${wl-${tpl\"",
            GANG.replacen("\"${wl}-${tpl}-\"", "\"${wl-${tpl\"", 1),
            "${wl-${tpl",
        ),
        (
            "own",
            "\"${wl\"",
            GANG.replacen("\"${wl}-${tpl}-\"", "\"${wl\"", 1),
            "${wl\"",
        ),
    ] {
        let rel = format!(
            "suites/gang/{}.yaml",
            what.replace(['"', '$', '{', ':', ' ', '.'], "_")
        );
        w.file(&rel, &text);
        cases.push(
            w.validate(class, &format!("gang case {what}"), &[&rel])
                .says(format!("{rel}:{}:", line_of(&text, at))),
        );
    }

    // 6, 8. Baselines: a BOM is fine; a truncated one is found before
    // any cluster.
    let smoke = std::fs::read_to_string(repo.join("baselines/local/1.37/smoke.json")).unwrap();
    w.file(
        "suites/thor/smoke.yaml",
        std::fs::read(repo.join("suites/thor/smoke.yaml")).unwrap(),
    );
    w.file(
        "bom/baselines/local/1.37/smoke.json",
        format!("\u{feff}{smoke}"),
    );
    w.file(
        "bom/suites/thor/smoke.yaml",
        std::fs::read(repo.join("suites/thor/smoke.yaml")).unwrap(),
    );
    w.file("bom/Cargo.toml", "[workspace]\n");
    std::fs::create_dir_all(w.path("bom/manifests")).unwrap();
    cases.push(
        Case::new(
            "6",
            "a baseline with a BOM (validate)",
            &w.path("bom"),
            "validate baselines/local/1.37/smoke.json",
            &[],
        )
        .want(0)
        .says("no problems"),
    );
    let cut = &smoke[..smoke.len() / 3];
    w.file("baselines/local/1.37/smoke.json", cut);
    let cut_at = format!(
        "baselines/local/1.37/smoke.json:{}:",
        cut.matches('\n').count() + 1
    );
    cases.push(
        w.bench(
            "8",
            "--compare against a truncated baseline",
            "suites/thor/ok.yaml",
            &["--compare"],
        )
        .says(cut_at.clone()),
    );
    cases.push(
        w.validate(
            "own",
            "a truncated baseline (validate)",
            &["baselines/local/1.37/smoke.json"],
        )
        .says("baselines/local/1.37/smoke.json:"),
    );
    w.file(
        "neg/baselines/local/1.37/smoke.json",
        smoke.replacen("\"value\": ", "\"value\": -", 1),
    );
    w.file("neg/Cargo.toml", "[workspace]\n");
    w.file("neg/suites/thor/ok.yaml", SCENARIO);
    std::fs::create_dir_all(w.path("neg/manifests")).unwrap();
    cases.push(
        Case::new(
            "own",
            "--compare against a negative baseline value",
            &w.path("neg"),
            "bench thor --scenario suites/thor/ok.yaml --compare --out {}",
            &[&w.path("neg/out")],
        )
        .says(format!(
            "baselines/local/1.37/smoke.json:{}:",
            line_of(&smoke, "\"value\": ")
        ))
        .says("not a finite, non-negative number")
        .within(BENCH_BOUND),
    );
    w.file("nobase/Cargo.toml", "[workspace]\n");
    w.file("nobase/suites/thor/ok.yaml", SCENARIO);
    std::fs::create_dir_all(w.path("nobase/manifests")).unwrap();
    cases.push(
        Case::new(
            "own",
            "--compare with no baseline",
            &w.path("nobase"),
            "bench thor --scenario suites/thor/ok.yaml --compare --out {}",
            &[&w.path("nobase/out")],
        )
        .says("no such file")
        .within(BENCH_BOUND),
    );

    // 7. Path traversal through the scenario's name.
    w.file(
        "suites/thor/pwned.yaml",
        SCENARIO.replace("name: smoke", "name: ../../../../x/PWNED"),
    );
    let outer = w.outer.clone();
    let baselines = w.path("baselines");
    let before = tree(&baselines);
    cases.push(
        w.bench(
            "7",
            "name: ../../../../x/PWNED with --record",
            "suites/thor/pwned.yaml",
            &["--record"],
        )
        .says("suites/thor/pwned.yaml:1:")
        .says("DNS-1123")
        .check(move |_| {
            let written: Vec<_> = tree(&outer)
                .into_iter()
                .filter(|p| p.to_string_lossy().contains("PWNED") && !p.ends_with("pwned.yaml"))
                .collect();
            let after = tree(&baselines);
            if !written.is_empty() || after != before {
                return Err(format!("written: {written:?}; baselines/ now {after:?}"));
            }
            Ok(())
        }),
    );
    cases.push(
        w.bench(
            "own",
            "--record with --set name=../x",
            "suites/thor/ok.yaml",
            &["--record", "--set", "name=../x"],
        )
        .says("--record"),
    );
    cases.push(
        Case::new(
            "own",
            "--record outside the repository",
            &w.outer,
            "bench thor --scenario {} --record --out {}",
            &[&w.path("suites/thor/ok.yaml"), &w.path("out-r")],
        )
        .says("--compare/--record need the repository")
        .within(BENCH_BOUND),
    );

    // 8. Late checks come first.
    let afile = w.file("a-file", "x");
    let under = afile.join("out");
    cases.push(
        Case::new(
            "8",
            "--out under a regular file",
            &w.root,
            "bench thor --scenario {} --out {}",
            &[&w.path("suites/thor/ok.yaml"), &under],
        )
        .says("--out")
        .says("not writable")
        .within(BENCH_BOUND),
    );
    cases.push(
        Case::new(
            "own",
            "--out under /proc",
            &w.root,
            "bench thor --scenario {} --out /proc/hostile-out",
            &[&w.path("suites/thor/ok.yaml")],
        )
        .says("not writable")
        .within(BENCH_BOUND),
    );

    // 9. One owner per cluster name (no cluster: the lock alone).
    cases.push(
        Case::new(
            "own",
            "down --name ../etc",
            &w.root,
            "down --name ../etc",
            &[],
        )
        .says("invalid cluster name")
        .within(BENCH_BOUND),
    );

    // 12. validate's own usage.
    cases.push(
        Case::new(
            "12",
            "validate --root /nonexistent",
            &w.root,
            "validate --root /nonexistent",
            &[],
        )
        .says("/nonexistent"),
    );
    cases.push(
        Case::new("12", "validate README.md", &repo, "validate README.md", &[]).says("README.md"),
    );
    cases.push(
        Case::new(
            "own",
            "validate --root a regular file",
            &w.root,
            "validate --root {}",
            &[&afile],
        )
        .says("not a directory"),
    );
    cases.push(
        Case::new(
            "own",
            "validate a missing path",
            &w.root,
            "validate --root {} /no/such/file.yaml",
            &[&w.root],
        )
        .says("no such file"),
    );

    // 13. Control characters in values.
    w.file(
        "ctl/manifests/ctl.yaml",
        "apiVersion: v1\nkind: \"Conf\\e[31mig\\aMap\\0\\v\\N\"\nmetadata: {name: x}\n",
    );
    w.file("ctl/Cargo.toml", "[workspace]\n");
    let ctl = w.path("ctl");
    cases.push(
        Case::new(
            "13",
            "control characters in kind: (--format junit)",
            &ctl,
            "validate --format junit",
            &[],
        )
        .want(1)
        .says("manifests/ctl.yaml:2:")
        .check(|r| {
            well_formed_xml(&r.stdout)?;
            no_raw_controls("stderr", &r.stderr)
        }),
    );
    for format in ["human", "markdown", "json"] {
        let c = Case::new(
            if format == "human" { "13" } else { "own" },
            &format!("control characters in kind: (--format {format})"),
            &ctl,
            &format!("validate --format {format}"),
            &[],
        )
        .want(1)
        .check(|r| no_raw_controls("terminal", &r.text()));
        cases.push(if format == "json" {
            c.check(|r| {
                no_raw_controls("terminal", &r.text())?;
                let v: serde_json::Value =
                    serde_json::from_str(&r.stdout).map_err(|e| e.to_string())?;
                let f = &v["files"][0]["findings"][0];
                let message = f["message"].as_str().unwrap_or_default();
                match (f["file"].as_str(), f["line"].as_u64()) {
                    (Some("manifests/ctl.yaml"), Some(2)) if message.contains("\u{1b}[31m") => {
                        Ok(())
                    }
                    _ => Err(format!("finding {f}")),
                }
            })
        } else {
            c.says("manifests/ctl.yaml:2:")
        });
    }

    // 14. HARNESS_STATE_DIR problems are the environment's, named.
    for cmd in ["status", "down --name x"] {
        let what = format!("HARNESS_STATE_DIR under a regular file ({cmd})");
        let c = Case::new("14", &what, &w.root, cmd, &[]);
        cases.push(
            c.want(3)
                .env("HARNESS_STATE_DIR", afile.join("state"))
                .says("HARNESS_STATE_DIR")
                .within(BENCH_BOUND),
        );
    }

    // 15. Smaller ones.
    w.file(
        "manifests/merge.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  <<: &m {name: base, labels: {a: b}}\n  name: derived\ndata: {x: \"1\"}\n",
    );
    cases.push(
        w.validate("15", "merge key <<: accepted", &["manifests/merge.yaml"])
            .want(0)
            .says("no problems"),
    );
    let mut utf = format!("{CONFIGMAP}  a: b\n  c: \"d").into_bytes();
    utf.extend_from_slice(b"\xff\xfe\"\n  e: f\n");
    w.file("manifests/utf8.yaml", &utf);
    cases.push(
        w.validate("15", "invalid UTF-8 on line 6", &["manifests/utf8.yaml"])
            .says("manifests/utf8.yaml:6:8")
            .says("not valid UTF-8"),
    );
    let mut sutf = SCENARIO.as_bytes().to_vec();
    sutf.splice(
        SCENARIO.find("3s").unwrap()..SCENARIO.find("3s").unwrap(),
        *b"\xc3",
    );
    w.file("suites/thor/utf8.yaml", &sutf);
    cases.push(
        w.bench(
            "15",
            "invalid UTF-8 in a scenario",
            "suites/thor/utf8.yaml",
            &[],
        )
        .says("suites/thor/utf8.yaml:4:16")
        .says("not valid UTF-8"),
    );
    // A repository of loops: a link to its parent directory, two links to
    // each other, next to a FIFO and a link to /dev/zero.
    let walk = w.path("walk");
    write(&walk.join("Cargo.toml"), "[workspace]\n");
    write(
        &walk.join("manifests/ok.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n",
    );
    symlink("..", &walk.join("manifests/loop/up"));
    symlink("l2.yaml", &walk.join("manifests/l1.yaml"));
    symlink("l1.yaml", &walk.join("manifests/l2.yaml"));
    mkfifo(&walk.join("manifests/fifo.yaml"));
    symlink("/dev/zero", &walk.join("manifests/zero.yaml"));
    cases.push(
        Case::new(
            "15",
            "symlink loops, a FIFO and /dev/zero under --root",
            &w.root,
            "validate --root {}",
            &[&walk],
        )
        .want(1)
        .says("manifests/l1.yaml:1:1")
        .says("manifests/fifo.yaml:1:1")
        .says("5 file(s)")
        .says("4 problem(s)")
        .check(|r| {
            let findings = r
                .stdout
                .lines()
                .filter(|l| l.starts_with("manifests/"))
                .count();
            if findings == 4 {
                Ok(())
            } else {
                Err(format!("{findings} findings, want 4 (l1, l2, fifo, zero)"))
            }
        }),
    );
    cases.push(
        Case::new(
            "own",
            "an explicit symlink loop",
            &w.root,
            "validate --root {} {}",
            &[&walk, &walk.join("manifests/l1.yaml")],
        )
        .want(1)
        .says("manifests/l1.yaml:1:1")
        .says("symbolic links"),
    );

    // Our own: nesting, many documents, odd bytes, relative roots.
    let n = 100_000;
    w.file(
        "manifests/deep.yaml",
        format!("{CONFIGMAP}  a: {}{}\n", "[".repeat(n), "]".repeat(n)),
    );
    cases.push(
        w.validate(
            "own",
            "100 000 nested flow sequences",
            &["manifests/deep.yaml"],
        )
        .says("manifests/deep.yaml:5:")
        .says("recursion limit"),
    );
    w.file("manifests/docs.yaml", "---\n".repeat(200_000));
    cases.push(
        // No object in it: a manifest file with nothing is refused (issue
        // 30), still at once.
        w.validate("own", "200 000 empty documents", &["manifests/docs.yaml"])
            .says("manifests/docs.yaml:1:1: (file): no document")
            .within(Duration::from_secs(10)),
    );
    w.file("manifests/nul.yaml", format!("{CONFIGMAP}  a: b\0c\n"));
    cases.push(
        w.validate(
            "own",
            "a NUL byte in a plain scalar",
            &["manifests/nul.yaml"],
        )
        .says("manifests/nul.yaml:5:"),
    );
    w.file(
        "manifests/longkey.yaml",
        format!("{CONFIGMAP}  {}: v\n", "k".repeat(1 << 20)),
    );
    cases.push(
        w.validate("own", "a 1 MiB key", &["manifests/longkey.yaml"])
            .says("manifests/longkey.yaml:5:"),
    );
    w.file(
        "suites/thor/crlf.yaml",
        format!("\u{feff}{}", SCENARIO.replace('\n', "\r\n")),
    );
    cases.push(
        w.validate(
            "own",
            "BOM and CRLF in a valid scenario",
            &["suites/thor/crlf.yaml"],
        )
        .want(0)
        .says("no problems"),
    );
    cases.push(
        Case::new(
            "own",
            "relative --root: files still classified",
            &w.root,
            "validate --root . suites/thor/v0.yaml",
            &[],
        )
        .want(1)
        .says("nodeCpu")
        .check(|r| {
            // Relative to the root, so classified as a scenario.
            if r.stdout.starts_with("suites/thor/v0.yaml:6:") {
                Ok(())
            } else {
                Err("not reported as suites/thor/v0.yaml:6:".into())
            }
        }),
    );
    cases
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[test]
fn hostile_inputs_fail_cleanly_bounded_and_before_any_cluster() {
    let w = World::new();
    let cases = corpus(&w);
    // A lock held elsewhere: this process holds `held`'s name lock, and a
    // start that died left its directory.
    let lock_state = w.path("../lock-state");
    std::fs::create_dir_all(lock_state.join(".locks")).unwrap();
    std::fs::create_dir_all(lock_state.join("held")).unwrap();
    let lock = std::fs::File::create(lock_state.join(".locks/held.lock")).unwrap();
    lock.try_lock().unwrap();
    let mut cases = cases;
    let lock_dir = lock_state.clone();
    cases.push(
        Case::new(
            "9",
            "down of a name another process holds",
            &w.root,
            "down --name held",
            &[],
        )
        .env("HARNESS_STATE_DIR", &lock_state)
        .says("being started or stopped by another harness process")
        .within(BENCH_BOUND)
        .check(move |_| {
            if lock_dir.join("held").is_dir() {
                Ok(())
            } else {
                Err("the other owner's directory was removed".into())
            }
        }),
    );

    let bin = env!("CARGO_BIN_EXE_harness");
    let mut outcomes = Vec::new();
    for c in &cases {
        let mut cmd = Command::new(bin);
        cmd.args(&c.args).current_dir(&c.cwd);
        for k in ["HARNESS_MAX_INPUT_BYTES", "HARNESS_LOG", "RUST_BACKTRACE"] {
            cmd.env_remove(k);
        }
        cmd.env("HARNESS_STATE_DIR", &w.state)
            .env("HARNESS_CACHE_DIR", &w.cache);
        for (k, v) in &c.env {
            cmd.env(k, v);
        }
        let hard = (c.bound * 3).max(c.bound + Duration::from_secs(10));
        let r = run(cmd, AS_CAP, hard);
        let problems = judge(&w, c, &r);
        outcomes.push(Outcome {
            class: c.class,
            name: c.name.clone(),
            want: c.want,
            run: r,
            bound: c.bound,
            problems,
        });
    }
    drop(lock);

    // The table and the figures the closing note quotes.
    println!(
        "\nhostile-input corpus (issue 16): {bin}, RLIMIT_AS {} GiB",
        AS_CAP >> 30
    );
    println!(
        "{:>3}  {:<5} {:<62} {:>5} {:>5} {:>8} {:>7} {:>10}  result",
        "#", "class", "case", "exit", "want", "time", "bound", "peak RSS"
    );
    for (i, o) in outcomes.iter().enumerate() {
        let exit = match (o.run.code, o.run.signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("sig{s}"),
            _ => "?".into(),
        };
        println!(
            "{:>3}  {:<5} {:<62} {:>5} {:>5} {:>7.3}s {:>6.1}s {:>10}  {}",
            i + 1,
            o.class,
            o.name.chars().take(62).collect::<String>(),
            exit,
            o.want,
            o.run.took.as_secs_f64(),
            o.bound.as_secs_f64(),
            mib(o.run.max_rss_kib),
            if o.problems.is_empty() {
                "ok".to_string()
            } else {
                o.problems.join("; ")
            }
        );
    }
    let count = |f: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let panicked = |o: &Outcome| o.problems.iter().any(|p| p.starts_with("PANIC"));
    let oom = |o: &Outcome| {
        o.problems.iter().any(|p| p.starts_with("OOM"))
            || matches!(
                o.run.signal,
                Some(libc::SIGABRT | libc::SIGSEGV | libc::SIGBUS)
            )
    };
    let hung = |o: &Outcome| {
        o.problems.iter().any(|p| p.starts_with("HANG")) || o.run.signal == Some(libc::SIGKILL)
    };
    let peak = outcomes.iter().max_by_key(|o| o.run.max_rss_kib).unwrap();
    let longest = outcomes.iter().max_by_key(|o| o.run.took).unwrap();
    println!("\nsummary");
    println!("  inputs tried          {}", outcomes.len());
    println!(
        "  clean errors          {}",
        count(&|o| o.want != 0 && o.problems.is_empty())
    );
    println!(
        "  unusual but valid     {} (accepted, exit 0)",
        count(&|o| o.want == 0 && o.problems.is_empty())
    );
    println!("  panics                {}", count(&panicked));
    println!("  out-of-memory         {}", count(&oom));
    println!("  hangs                 {}", count(&hung));
    let malformed_ok = |o: &Outcome| o.want != 0 && o.run.code == Some(0);
    println!("  accepted-malformed    {}", count(&malformed_ok));
    let other = |o: &Outcome| {
        !(o.problems.is_empty() || panicked(o) || oom(o) || hung(o) || malformed_ok(o))
    };
    println!("  other failures        {}", count(&other));
    println!(
        "  peak memory           {} ({})",
        mib(peak.run.max_rss_kib),
        peak.name
    );
    println!(
        "  longest time          {:.3} s ({})",
        longest.run.took.as_secs_f64(),
        longest.name
    );

    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.problems.is_empty())
        .map(|o| {
            format!(
                "[{}] {}: {}\n--- output ---\n{}",
                o.class,
                o.name,
                o.problems.join("; "),
                o.run.text().chars().take(2000).collect::<String>()
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

/// A baseline with a byte-order mark loads for `--compare` (the library
/// path: the binary would go on to start a cluster).
#[test]
fn a_baseline_with_a_bom_loads() {
    let repo = common::repo_root();
    let text = std::fs::read_to_string(repo.join("baselines/local/1.37/smoke.json")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("smoke.json");
    std::fs::write(&p, format!("\u{feff}{text}")).unwrap();
    let b = harness::bench::core::baseline::load(&p).unwrap();
    assert_eq!(b.k8s_minor, "1.37");
    std::fs::write(&p, &text[..text.len() / 2]).unwrap();
    let e = harness::bench::core::baseline::load(&p).unwrap_err();
    assert_eq!(harness::error::exit_code(&e), 2);
    assert!(e.to_string().contains("smoke.json:"), "{e}");
}
