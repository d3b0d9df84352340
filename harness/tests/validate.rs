//! `harness validate`: the repository's own files validate clean, each
//! check catches its broken fixture at the right file:line, and malformed
//! input never panics.

mod common;

use std::path::PathBuf;
use std::process::Command;

use harness::validate::{self, FileKind, Finding};
use harness::workload::thor::{self, Mode, Template};

/// A scratch repository holding `files` (path → text) plus the real
/// suites/thor scenarios that baselines refer to.
fn scratch(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (p, text) in files {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
    dir
}

fn findings(files: &[(&str, &str)]) -> Vec<Finding> {
    let dir = scratch(files);
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| dir.path().join(p)).collect();
    let report = validate::run(dir.path(), &paths).unwrap();
    report.findings().cloned().collect()
}

fn one(files: &[(&str, &str)]) -> Finding {
    let f = findings(files);
    assert_eq!(f.len(), 1, "expected one finding, got {f:#?}");
    f.into_iter().next().unwrap()
}

#[test]
fn the_repository_validates_clean() {
    let report = validate::run(&common::repo_root(), &[]).unwrap();
    let problems: Vec<String> = report.findings().map(|f| f.to_string()).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        report.documents > 100,
        "only {} documents",
        report.documents
    );
    assert!(report.thor_renderings > 100);
    assert!(
        report
            .files
            .iter()
            .any(|f| f.file == "manifests/audit-policy.yaml")
    );
    assert!(
        report
            .files
            .iter()
            .any(|f| f.file == "suites/thor/smoke.yaml")
    );
    // The static model: baseline and JobSet instances of 32 workers.
    let row = |mode: &str| {
        report
            .static_model
            .iter()
            .find(|r| r.mode == mode && r.num_workers == 32)
            .unwrap()
            .clone()
    };
    let (b, j) = (row("baseline"), row("jobset"));
    assert_eq!((b.client_objects, b.pods, b.containers), (4, 33, 66));
    assert_eq!(
        (j.client_objects, j.controller_objects, j.pods, j.containers),
        (3, 2, 33, 66)
    );
}

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: j
spec:
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: i
";

#[test]
fn unknown_field_in_a_manifest() {
    let text = JOB.replace("  parallelism: 3", "  parallelizm: 3");
    let f = one(&[("manifests/job.yaml", &text)]);
    assert_eq!(
        (f.file.as_str(), f.line, f.column),
        ("manifests/job.yaml", 6, 3)
    );
    assert_eq!(f.path, "spec.parallelizm");
    assert!(
        f.message
            .contains("unknown field \"parallelizm\" in batch/v1 Job"),
        "{f}"
    );
}

#[test]
fn wrong_type_in_a_manifest() {
    let text = JOB.replace("  parallelism: 3", "  parallelism: many");
    let f = one(&[("manifests/job.yaml", &text)]);
    assert_eq!((f.line, f.path.as_str()), (6, "spec.parallelism"));
    assert!(f.message.contains("invalid type"), "{f}");
}

#[test]
fn duplicate_key() {
    let text = JOB.replace("  parallelism: 3\n", "  parallelism: 3\n  parallelism: 4\n");
    let f = one(&[("manifests/job.yaml", &text)]);
    assert_eq!(f.line, 7);
    assert!(
        f.message
            .contains("duplicate key \"parallelism\" (first at line 6"),
        "{f}"
    );
}

#[test]
fn invalid_names_and_labels() {
    let text = JOB.replace(
        "  name: j\n",
        "  name: Bad_Name\n  labels:\n    ok: \"-nope\"\n",
    );
    let f = findings(&[("manifests/job.yaml", &text)]);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(
        f.iter()
            .any(|x| x.path == "metadata.name" && x.line == 4 && x.message.contains("DNS-1123"))
    );
    assert!(
        f.iter()
            .any(|x| x.path == "metadata.labels.ok" && x.line == 6)
    );
}

#[test]
fn unknown_kinds_are_not_waved_through() {
    let f = one(&[(
        "manifests/x.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    )]);
    assert!(
        f.message.contains("no model for example.com/v1 Widget"),
        "{f}"
    );
}

fn kind_config(image: &str, gates: &str, runtime: &str) -> String {
    format!(
        "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nfeatureGates:\n{gates}runtimeConfig:\n{runtime}nodes:\n  - role: control-plane\n    image: {image}\n"
    )
}

const IMG_136: &str =
    "kindest/node:v1.36.4@sha256:0000000000000000000000000000000000000000000000000000000000000000";
const IMG_137: &str =
    "kindest/node:v1.37.0@sha256:0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn feature_gate_missing_in_that_version() {
    let ok = kind_config(
        IMG_136,
        "  GangScheduling: true\n",
        "  scheduling.k8s.io/v1alpha2: \"true\"\n",
    );
    assert_eq!(findings(&[("kind-configs/gang-1.36.yaml", &ok)]), vec![]);
    let bad = kind_config(
        IMG_137,
        "  GangScheduling: true\n",
        "  scheduling.k8s.io/v1beta1: \"true\"\n",
    );
    let f = one(&[("kind-configs/gang-1.37.yaml", &bad)]);
    assert_eq!(
        (f.line, f.path.as_str()),
        (4, "featureGates.GangScheduling")
    );
    assert!(
        f.message.contains("does not exist in Kubernetes 1.37"),
        "{f}"
    );
}

#[test]
fn runtime_config_group_missing_in_that_version() {
    let bad = kind_config(
        IMG_137,
        "  GenericWorkload: true\n",
        "  scheduling.k8s.io/v1alpha2: \"true\"\n",
    );
    let f = one(&[("kind-configs/gang-1.37.yaml", &bad)]);
    assert_eq!(
        (f.line, f.path.as_str()),
        (6, "runtimeConfig.scheduling.k8s.io/v1alpha2")
    );
    assert!(
        f.message.contains("does not exist in Kubernetes 1.37"),
        "{f}"
    );
}

#[test]
fn kind_config_unknown_field_and_unpinned_image() {
    let text = kind_config(
        "kindest/node:v1.37.0",
        "  GenericWorkload: true\n",
        "  api/all: \"true\"\n",
    )
    .replace(
        "  - role: control-plane\n",
        "  - role: control-plane\n    extraMountz: []\n",
    );
    let f = findings(&[("kind-configs/x.yaml", &text)]);
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(
        f.iter()
            .any(|x| x.path == "nodes[0].extraMountz" && x.line == 9)
    );
    assert!(
        f.iter()
            .any(|x| x.path == "nodes[0].image"
                && x.message.contains("pin the node image by digest"))
    );
}

const SCENARIO: &str = "name: s
thor:
  numWorkers: 10
  numWorkersPerPod: 2
  maxGraphs: 2
workunits: 4
graphDuration: 3s
modes: [baseline, jobset]
cluster:
  k8sMinor: \"1.37\"
  nodes: 3
  nodeCpu: \"32\"
  nodeMemory: 256Gi
";

#[test]
fn scenario_with_non_dividing_workers_per_pod() {
    assert_eq!(findings(&[("suites/thor/s.yaml", SCENARIO)]), vec![]);
    let f = one(&[(
        "suites/thor/s.yaml",
        &SCENARIO.replace("numWorkersPerPod: 2", "numWorkersPerPod: 3"),
    )]);
    assert_eq!((f.line, f.path.as_str()), (4, "thor.numWorkersPerPod"));
    assert!(f.message.contains("3 does not divide numWorkers 10"), "{f}");
    let f = one(&[(
        "suites/thor/s.yaml",
        &SCENARIO.replace("[baseline, jobset]", "[baseline, jobsett]"),
    )]);
    assert_eq!((f.line, f.path.as_str()), (8, "modes[1]"));
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

#[test]
fn rbac_missing_or_extra_verbs() {
    assert_eq!(validate::thor::check_rbac(Mode::Baseline), vec![]);
    let real = thor::rbac(Mode::Baseline);
    let missing = Template {
        text: leak(real.text.replace(
            "verbs: [\"get\", \"list\", \"watch\", \"create\", \"delete\"]",
            "verbs: [\"get\", \"list\", \"create\", \"delete\"]",
        )),
        ..real
    };
    let f = validate::thor::check_rbac_template(Mode::Baseline, &missing);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("uses watch on jobs.batch but the Role does not grant it"),
        "{}",
        f[0]
    );
    assert_eq!(f[0].file, "manifests/hpcc/rbac/baseline.yaml");
    assert_eq!(f[0].path, "[0].rules");
    let extra = Template {
        text: leak(real.text.replace(
            "verbs: [\"get\", \"list\"]",
            "verbs: [\"get\", \"list\", \"update\"]",
        )),
        ..real
    };
    let f = validate::thor::check_rbac_template(Mode::Baseline, &extra);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("grants update on pods, which the baseline driver never uses"),
        "{}",
        f[0]
    );
}

#[test]
fn broken_thor_templates_are_caught_over_the_matrix() {
    let real = thor::templates(Mode::Baseline)[3];
    assert!(real.path.ends_with("thorworker-job.yaml"));
    let indexed = Template {
        text: leak(real.text.replace(
            "  backoffLimit: 0\n",
            "  backoffLimit: 0\n  completionMode: Indexed\n",
        )),
        ..real
    };
    let r = validate::thor::check_template_set(&[(Mode::Baseline, indexed)]);
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("no completions and is NonIndexed")),
        "{:#?}",
        r.findings
    );
    let js = thor::templates(Mode::Jobset)[2];
    assert!(js.path.ends_with("thor-jobset.yaml"));
    let no_index = Template {
        text: leak(
            js.text
                .replace("\"--rank=$(JOB_COMPLETION_INDEX)\"", "\"--rank=0\""),
        ),
        ..js
    };
    let r = validate::thor::check_template_set(&[(Mode::Jobset, no_index)]);
    let f: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.message.contains("its rank from JOB_COMPLETION_INDEX"))
        .collect();
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert_eq!(f[0].file, "manifests/hpcc/jobset/thor-jobset.yaml");
    let typo = Template {
        text: leak(
            js.text
                .replace("completionMode: Indexed", "completionMod: Indexed"),
        ),
        ..js
    };
    let r = validate::thor::check_template_set(&[(Mode::Jobset, typo)]);
    assert!(
        r.findings
            .iter()
            .any(|f| f.message.contains("unknown field \"completionMod\"") && f.line > 1),
        "{:#?}",
        r.findings
    );
}

const BASELINE: &str = r#"{
  "schema": "harness.baseline/v1",
  "provider": "local",
  "k8sMinor": "1.37",
  "scenario": "suites/thor/s.yaml",
  "recorded": "2026-11-21T00:00:00Z",
  "harnessVersion": "0.1.0",
  "modes": {
    "baseline": {
      "api_requests_total": {"value": 120, "unit": "requests", "kind": "count", "tolerance": {"relative": 0.05}},
      "pod_startup_ms.p99": {"value": 800, "unit": "ms", "kind": "latency", "tolerance": {"ratio": [0.66, 1.5], "floor": 1000}}
    }
  }
}
"#;

#[test]
fn corrupt_and_insane_baselines() {
    let with_scenario = |b: &str| {
        vec![
            ("suites/thor/s.yaml", SCENARIO.to_string()),
            ("baselines/local/1.37/s.json", b.to_string()),
        ]
    };
    let run = |files: Vec<(&str, String)>| {
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        findings(&refs)
    };
    assert_eq!(run(with_scenario(BASELINE)), vec![]);
    // Truncated JSON.
    let f = run(with_scenario(&BASELINE[..BASELINE.len() / 2]));
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].file, "baselines/local/1.37/s.json");
    assert!(f[0].message.starts_with("YAML:"), "{}", f[0]);
    // A count without a tolerance; a latency band the wrong way round.
    let bad = BASELINE
        .replace(
            ", \"tolerance\": {\"relative\": 0.05}",
            ", \"tolerance\": {}",
        )
        .replace("[0.66, 1.5]", "[1.5, 0.66]");
    let f = run(with_scenario(&bad));
    assert_eq!(f.len(), 2, "{f:#?}");
    assert!(
        f.iter()
            .any(|x| x.line == 10 && x.message.contains("needs a relative tolerance"))
    );
    assert!(
        f.iter()
            .any(|x| x.line == 11 && x.message.contains("0 < low < 1 < high"))
    );
    // A scenario that does not exist.
    let f = run(vec![("baselines/local/1.37/s.json", BASELINE.to_string())]);
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].message
            .contains("scenario file \"suites/thor/s.yaml\" does not exist")
    );
    assert_eq!(f[0].line, 5);
}

/// A small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn malformed_input_never_panics() {
    let root = common::repo_root();
    let mut inputs: Vec<(String, FileKind, String)> = Vec::new();
    for (rel, kind) in [
        ("manifests/audit-policy.yaml", FileKind::Manifest),
        ("suites/thor/smoke.yaml", FileKind::ThorScenario),
        ("manifests/hpcc/jobset/thor-jobset.yaml", FileKind::Manifest),
        ("manifests/hpcc/rbac/baseline.yaml", FileKind::Manifest),
    ] {
        inputs.push((
            rel.into(),
            kind,
            std::fs::read_to_string(root.join(rel)).unwrap(),
        ));
    }
    inputs.push((
        "kind-configs/k.yaml".into(),
        FileKind::KindConfig,
        kind_config(
            IMG_137,
            "  GenericWorkload: true\n",
            "  api/all: \"true\"\n",
        ),
    ));
    inputs.push((
        "baselines/b.json".into(),
        FileKind::Baseline,
        BASELINE.into(),
    ));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let junk: &[u8] = b":-[]{}&*!|>'\"%@` \n\t#,?0123456789abcxyz\xff";
    let mut runs = 0;
    for (rel, kind, text) in &inputs {
        let bytes = text.as_bytes();
        // Every truncation point (on char boundaries).
        for cut in (0..bytes.len()).filter(|&i| text.is_char_boundary(i)) {
            validate::check_text(&root, rel, *kind, &text[..cut]);
            runs += 1;
        }
        // Random byte edits.
        for _ in 0..300 {
            let mut b = bytes.to_vec();
            for _ in 0..1 + rng.next() % 6 {
                let at = (rng.next() as usize) % b.len().max(1);
                let ch = junk[(rng.next() as usize) % junk.len()];
                match rng.next() % 3 {
                    0 => b[at] = ch,
                    1 => b.insert(at, ch),
                    _ => {
                        b.remove(at.min(b.len().saturating_sub(1)));
                    }
                }
            }
            let mutated = String::from_utf8_lossy(&b);
            validate::check_text(&root, rel, *kind, &mutated);
            runs += 1;
        }
    }
    // Random garbage of every kind.
    for _ in 0..500 {
        let len = (rng.next() % 200) as usize;
        let s: String = (0..len)
            .map(|_| junk[(rng.next() as usize) % (junk.len() - 1)] as char)
            .collect();
        for kind in [
            FileKind::Manifest,
            FileKind::KindConfig,
            FileKind::ThorScenario,
            FileKind::Baseline,
        ] {
            validate::check_text(&root, "x.yaml", kind, &s);
            runs += 1;
        }
    }
    assert!(runs > 5000, "{runs}");
}

fn harness_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

#[test]
fn cli_exit_codes_and_formats() {
    let out = harness_bin()
        .arg("validate")
        .current_dir(common::repo_root())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no problems") && text.contains("CONTAINERS"),
        "{text}"
    );

    let dir = scratch(&[(
        "manifests/job.yaml",
        &JOB.replace("parallelism", "parallelizm"),
    )]);
    let out = harness_bin()
        .args(["validate", "--format", "junit", "--root"])
        .arg(dir.path())
        .arg(dir.path().join("manifests"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(
        xml.contains("<failure message=\"1 problem(s)\">manifests/job.yaml:6:3"),
        "{xml}"
    );

    let out = harness_bin()
        .args(["validate", "--format", "json", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);

    let out = harness_bin()
        .args(["validate", "/no/such/path"])
        .current_dir(common::repo_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = harness_bin()
        .args(["validate", "--format", "yaml"])
        .current_dir(common::repo_root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The gate table of the default release agrees with the real
/// kube-apiserver: every alpha/beta gate its --help lists is in the table
/// with the same stage and default.
#[test]
fn feature_gate_table_matches_the_real_apiserver() {
    use harness::k8s::K8sRelease;
    use harness::tools::{Component, Resolver};
    let k8s = K8sRelease::default_release();
    let found = Resolver::from_env(k8s, Default::default())
        .find(Component::KubeApiserver)
        .unwrap_or_else(|tried| {
            panic!(
                "kube-apiserver v{} is needed: run `harness tools install` ({})",
                k8s.version,
                tried.join("; ")
            )
        });
    let out = Command::new(&found.path).arg("--help").output().unwrap();
    let help =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let facts = harness::k8s::facts::for_minor(k8s.minor).unwrap();
    let mut checked = 0;
    for line in help.lines().map(str::trim) {
        // kube:GenericWorkload=true|false (BETA - default=false)
        let Some(rest) = line.strip_prefix("kube:") else {
            continue;
        };
        let Some((name, tail)) = rest.split_once("=true|false (") else {
            continue;
        };
        let stage = tail.split(' ').next().unwrap_or_default();
        let default = tail.contains("default=true");
        let gate = facts.gate(name).unwrap_or_else(|| {
            panic!(
                "{name} is in kube-apiserver --help but not in harness/data/k8s/{}.json",
                k8s.minor
            )
        });
        if name != "AllAlpha" && name != "AllBeta" {
            assert_eq!(gate.stage.as_deref(), Some(stage), "stage of {name}");
            assert_eq!(gate.default, Some(default), "default of {name}");
        }
        checked += 1;
    }
    assert!(checked > 100, "only {checked} gates in --help");
}

#[test]
fn the_repository_values_are_classified_and_checked() {
    let root = &common::repo_root();
    let report = harness::validate::run(root, &[root.join("manifests/hpcc/values")]).unwrap();
    let files: Vec<(&str, &str)> = report
        .files
        .iter()
        .map(|f| (f.file.as_str(), f.kind.as_str()))
        .collect();
    assert!(
        files.contains(&("manifests/hpcc/values/kind.yaml", "HpccValues")),
        "{files:?}"
    );
    assert!(report.ok(), "{:#?}", report.files);
}
