//! The ECL suite's outputs: one JSON file per mode
//! (`ecl-<mode>.json`, schema `harness.ecl-report/v1`), a JUnit XML file per
//! trial (`junit/ecl-<mode>-<case>.xml`) and a Markdown report
//! (`ecl-report.md`) that, when both a baseline and a jobset JSON are in
//! the directory, compares them case by case.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::output::{JunitCase, JunitSuite, junit_xml, write_atomic};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::metrics::WindowFigures;

pub const ECL_REPORT_SCHEMA: &str = "harness.ecl-report/v1";

/// One case in one mode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EclCaseRecord {
    pub case: String,
    pub mode: String,
    pub passed: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wuid: Option<String>,
    /// The workunit's final state (HPCC's name for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Whether the figures below were measured (false when the case failed
    /// before its measurement window closed).
    pub measured: bool,
    /// Create → final state, seconds.
    pub wall_s: f64,
    /// What the control plane did during the case: requests per client,
    /// latency, etcd writes, objects (the same keys as the Thor result).
    #[serde(flatten)]
    pub window: WindowFigures,
    /// Pods that appeared in the namespace during the case.
    pub pods_created: u64,
    pub thor_manager_pods: u64,
    pub thor_worker_pods: u64,
    pub containers_created: u64,
}

/// All cases of one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EclReport {
    pub schema: String,
    pub mode: String,
    pub cluster: String,
    pub provider: String,
    pub k8s_version: String,
    pub namespace: String,
    pub started: String,
    pub cases: BTreeMap<String, EclCaseRecord>,
}

impl EclReport {
    pub fn new(mode: &str, cluster: &str, provider: &str, k8s: &str, namespace: &str) -> Self {
        EclReport {
            schema: ECL_REPORT_SCHEMA.into(),
            mode: mode.into(),
            cluster: cluster.into(),
            provider: provider.into(),
            k8s_version: k8s.into(),
            namespace: namespace.into(),
            started: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            cases: BTreeMap::new(),
        }
    }
}

pub fn json_path(dir: &Path, mode: &str) -> PathBuf {
    dir.join(format!("ecl-{mode}.json"))
}

pub fn load(path: &Path) -> Result<EclReport> {
    let text = crate::input::read(path)?;
    let r: EclReport = serde_json::from_str(&text)
        .with_context(|| format!("{}: not an ECL report", path.display()))?;
    anyhow::ensure!(
        r.schema == ECL_REPORT_SCHEMA,
        "{}: schema {:?}, expected {ECL_REPORT_SCHEMA:?}",
        path.display(),
        r.schema
    );
    Ok(r)
}

/// JUnit XML of one trial.
pub fn junit(r: &EclCaseRecord) -> String {
    let props: Vec<(&str, String)> = vec![
        ("wuid", r.wuid.clone().unwrap_or_default()),
        ("state", r.state.clone().unwrap_or_default()),
        (
            "api_requests_total",
            r.window.api_requests_total.to_string(),
        ),
        ("etcd_writes_total", r.window.etcd_writes_total.to_string()),
        ("pods_created", r.pods_created.to_string()),
        ("thor_manager_pods", r.thor_manager_pods.to_string()),
        ("thor_worker_pods", r.thor_worker_pods.to_string()),
        ("wall_s", format!("{:.2}", r.wall_s)),
    ];
    let mut case = JunitCase {
        properties: props.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        ..JunitCase::new(format!("ecl.{}", r.case), &r.mode).time(r.wall_s)
    };
    if let Some(e) = &r.error {
        case = case.failed(e);
    }
    junit_xml(&[JunitSuite {
        name: format!("ecl {}", r.mode),
        time: None,
        cases: vec![case],
    }])
}

fn ratio(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{:.2}", b / a)
    } else {
        "—".into()
    }
}

fn thor_pods(r: &EclCaseRecord) -> String {
    format!(
        "{} ({}+{})",
        r.thor_manager_pods + r.thor_worker_pods,
        r.thor_manager_pods,
        r.thor_worker_pods
    )
}

/// One mode's table.
pub fn mode_markdown(r: &EclReport) -> String {
    let mut s = format!(
        "## ECL on Thor — {} mode\n\ncluster `{}` ({}, Kubernetes {}), namespace `{}`, started {}\n\n",
        r.mode, r.cluster, r.provider, r.k8s_version, r.namespace, r.started
    );
    s.push_str("| case | result | workunit | state | wall s | API requests | etcd writes | pods | Thor pods (mgr+wrk) |\n|---|---|---|---|---:|---:|---:|---:|---:|\n");
    for c in r.cases.values() {
        let figures = if c.measured {
            format!(
                "{} | {} | {} | {}",
                c.window.api_requests_total,
                c.window.etcd_writes_total,
                c.pods_created,
                thor_pods(c)
            )
        } else {
            "— | — | — | —".into()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {figures} |",
            c.case,
            if c.passed { "pass" } else { "**FAIL**" },
            c.wuid.as_deref().unwrap_or("—"),
            c.state.as_deref().unwrap_or("—"),
            if c.wuid.is_some() {
                format!("{:.1}", c.wall_s)
            } else {
                "—".into()
            },
        );
    }
    let failures: Vec<&EclCaseRecord> = r.cases.values().filter(|c| !c.passed).collect();
    if !failures.is_empty() {
        s.push_str("\nFailures:\n\n");
        for c in failures {
            let _ = writeln!(
                s,
                "- {}: {}",
                c.case,
                c.error
                    .as_deref()
                    .unwrap_or("(no message)")
                    .replace('\n', " ")
            );
        }
    }
    s
}

/// Baseline vs jobset, per case that both ran.
pub fn compare_markdown(base: &EclReport, js: &EclReport) -> String {
    let mut s = String::from(
        "## Baseline vs JobSet\n\n| case | metric | baseline | jobset | jobset / baseline |\n|---|---|---:|---:|---:|\n",
    );
    let mut only: Vec<String> = Vec::new();
    for (name, b) in &base.cases {
        let Some(j) = js.cases.get(name) else {
            only.push(format!("{name} (baseline only)"));
            continue;
        };
        if !b.measured || !j.measured {
            only.push(format!("{name} (not measured in both modes)"));
            continue;
        }
        let rows: [(&str, f64, f64, String, String); 5] = [
            (
                "API requests",
                b.window.api_requests_total as f64,
                j.window.api_requests_total as f64,
                b.window.api_requests_total.to_string(),
                j.window.api_requests_total.to_string(),
            ),
            (
                "etcd writes",
                b.window.etcd_writes_total as f64,
                j.window.etcd_writes_total as f64,
                b.window.etcd_writes_total.to_string(),
                j.window.etcd_writes_total.to_string(),
            ),
            (
                "pods created",
                b.pods_created as f64,
                j.pods_created as f64,
                b.pods_created.to_string(),
                j.pods_created.to_string(),
            ),
            (
                "Thor pods (mgr+wrk)",
                (b.thor_manager_pods + b.thor_worker_pods) as f64,
                (j.thor_manager_pods + j.thor_worker_pods) as f64,
                thor_pods(b),
                thor_pods(j),
            ),
            (
                "wall s",
                b.wall_s,
                j.wall_s,
                format!("{:.1}", b.wall_s),
                format!("{:.1}", j.wall_s),
            ),
        ];
        let flag = |r: &EclCaseRecord| if r.passed { "" } else { " (failed)" };
        for (metric, bv, jv, bt, jt) in rows {
            let _ = writeln!(
                s,
                "| {name} | {metric} | {bt}{} | {jt}{} | {} |",
                flag(b),
                flag(j),
                ratio(bv, jv)
            );
        }
    }
    for name in js.cases.keys().filter(|n| !base.cases.contains_key(*n)) {
        only.push(format!("{name} (jobset only)"));
    }
    if !only.is_empty() {
        let _ = writeln!(s, "\nNot compared: {}", only.join(", "));
    }
    s
}

/// The whole Markdown report: each mode present, then the comparison when
/// both baseline and jobset are there.
pub fn markdown(reports: &[EclReport]) -> String {
    let mut s = String::from("# ECL suite report\n\n");
    for r in reports {
        s.push_str(&mode_markdown(r));
        s.push('\n');
    }
    let find = |m: &str| reports.iter().find(|r| r.mode == m);
    if let (Some(b), Some(j)) = (find("baseline"), find("jobset")) {
        s.push_str(&compare_markdown(b, j));
    }
    s
}

/// Merge `report`'s cases into the mode's JSON in `dir` (cases not rerun
/// are kept), write it, the trials' JUnit files and the Markdown report
/// over every mode's JSON in `dir`. Returns the files written.
pub fn write_all(dir: &Path, report: &EclReport) -> Result<Vec<PathBuf>> {
    let path = json_path(dir, &report.mode);
    let mut merged = report.clone();
    if path.exists() {
        let old = load(&path)?;
        for (k, v) in old.cases {
            merged.cases.entry(k).or_insert(v);
        }
    }
    let mut files = Vec::new();
    write_atomic(&path, &serde_json::to_string_pretty(&merged)?)?;
    files.push(path);
    for c in report.cases.values() {
        let p = dir
            .join("junit")
            .join(format!("ecl-{}-{}.xml", c.mode, c.case));
        write_atomic(&p, junit(c))?;
        files.push(p);
    }
    let mut all = Vec::new();
    for mode in ["baseline", "jobset"] {
        let p = json_path(dir, mode);
        if mode == merged.mode {
            all.push(merged.clone());
        } else if p.exists() {
            all.push(load(&p)?);
        }
    }
    if !["baseline", "jobset"].contains(&merged.mode.as_str()) {
        all.push(merged.clone());
    }
    let md = dir.join("ecl-report.md");
    write_atomic(&md, markdown(&all))?;
    files.push(md);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        case: &str,
        mode: &str,
        req: u64,
        etcd: u64,
        mgr: u64,
        wrk: u64,
        wall: f64,
    ) -> EclCaseRecord {
        EclCaseRecord {
            case: case.into(),
            mode: mode.into(),
            passed: true,
            wuid: Some(format!("W-{case}-{mode}")),
            state: Some("completed".into()),
            measured: true,
            wall_s: wall,
            window: crate::metrics::WindowFigures {
                api_requests_total: req,
                etcd_writes_total: etcd,
                ..Default::default()
            },
            pods_created: mgr + wrk,
            thor_manager_pods: mgr,
            thor_worker_pods: wrk,
            ..Default::default()
        }
    }

    fn report(mode: &str, cases: Vec<EclCaseRecord>) -> EclReport {
        let mut r = EclReport::new(mode, "e2e", "kind", "1.37.0", "default");
        r.started = "2026-01-01T00:00:00Z".into();
        r.cases = cases.into_iter().map(|c| (c.case.clone(), c)).collect();
        r
    }

    #[test]
    fn comparison_lists_each_metric_with_ratios() {
        let b = report(
            "baseline",
            vec![
                rec("sort", "baseline", 200, 80, 1, 2, 40.0),
                rec("inline", "baseline", 100, 40, 1, 2, 20.0),
            ],
        );
        let j = report(
            "jobset",
            vec![
                rec("sort", "jobset", 100, 60, 1, 2, 30.0),
                rec("join", "jobset", 1, 1, 1, 2, 1.0),
            ],
        );
        let md = compare_markdown(&b, &j);
        assert!(
            md.contains("| sort | API requests | 200 | 100 | 0.50 |"),
            "{md}"
        );
        assert!(
            md.contains("| sort | etcd writes | 80 | 60 | 0.75 |"),
            "{md}"
        );
        assert!(
            md.contains("| sort | Thor pods (mgr+wrk) | 3 (1+2) | 3 (1+2) | 1.00 |"),
            "{md}"
        );
        assert!(
            md.contains("| sort | wall s | 40.0 | 30.0 | 0.75 |"),
            "{md}"
        );
        assert!(
            md.contains("inline (baseline only)") && md.contains("join (jobset only)"),
            "{md}"
        );
        assert!(!md.contains("| inline |"), "{md}");
        let mut failing = j.clone();
        failing.cases.get_mut("sort").unwrap().passed = false;
        assert!(compare_markdown(&b, &failing).contains("100 (failed)"));
        let zero = report("baseline", vec![rec("sort", "baseline", 0, 0, 0, 0, 0.0)]);
        assert!(compare_markdown(&zero, &j).contains("| sort | API requests | 0 | 100 | — |"));
    }

    #[test]
    fn full_markdown_compares_only_with_both_modes() {
        let b = report("baseline", vec![rec("sort", "baseline", 2, 1, 1, 2, 4.0)]);
        let j = report("jobset", vec![rec("sort", "jobset", 1, 1, 1, 2, 3.0)]);
        let one = markdown(std::slice::from_ref(&b));
        assert!(one.contains("baseline mode") && !one.contains("Baseline vs JobSet"));
        assert!(
            one.contains(
                "| sort | pass | W-sort-baseline | completed | 4.0 | 2 | 1 | 3 | 3 (1+2) |"
            ),
            "{one}"
        );
        let mut unmeasured = b.clone();
        let c = unmeasured.cases.get_mut("sort").unwrap();
        (c.measured, c.passed, c.wuid, c.state) = (false, false, None, None);
        c.error = Some("no cluster\nnamed x".into());
        let md = markdown(std::slice::from_ref(&unmeasured));
        assert!(
            md.contains("| sort | **FAIL** | — | — | — | — | — | — | — |"),
            "{md}"
        );
        assert!(md.contains("- sort: no cluster named x"), "{md}");
        assert!(compare_markdown(&unmeasured, &j).contains("sort (not measured in both modes)"));
        let both = markdown(&[b, j]);
        assert!(both.contains("jobset mode") && both.contains("Baseline vs JobSet"));
    }

    #[test]
    fn junit_marks_failures() {
        let mut r = rec("join", "jobset", 1, 2, 1, 2, 3.0);
        assert!(junit(&r).contains("failures=\"0\"") && !junit(&r).contains("<failure"));
        r.passed = false;
        r.error = Some("result x: row 0 is <a> — expected \"b\"\nmore".into());
        let x = junit(&r);
        assert!(x.contains("failures=\"1\""), "{x}");
        assert!(
            x.contains(
                "<failure message=\"result x: row 0 is &lt;a&gt; — expected &quot;b&quot;\">"
            ),
            "{x}"
        );
        assert!(x.contains("name=\"wuid\" value=\"W-join-jobset\""), "{x}");
    }

    #[test]
    fn write_all_merges_and_compares() {
        let d = tempfile::tempdir().unwrap();
        let b1 = report("baseline", vec![rec("sort", "baseline", 2, 1, 1, 2, 4.0)]);
        write_all(d.path(), &b1).unwrap();
        let b2 = report("baseline", vec![rec("join", "baseline", 5, 1, 1, 2, 4.0)]);
        let files = write_all(d.path(), &b2).unwrap();
        assert_eq!(files.len(), 3, "{files:?}");
        let merged = load(&json_path(d.path(), "baseline")).unwrap();
        assert_eq!(
            merged.cases.keys().collect::<Vec<_>>(),
            vec!["join", "sort"]
        );
        let md = std::fs::read_to_string(d.path().join("ecl-report.md")).unwrap();
        assert!(!md.contains("Baseline vs JobSet"));
        let j = report("jobset", vec![rec("sort", "jobset", 1, 1, 1, 2, 3.0)]);
        write_all(d.path(), &j).unwrap();
        let md = std::fs::read_to_string(d.path().join("ecl-report.md")).unwrap();
        assert!(
            md.contains("| sort | API requests | 2 | 1 | 0.50 |"),
            "{md}"
        );
        assert!(d.path().join("junit/ecl-jobset-sort.xml").exists());
        std::fs::write(json_path(d.path(), "jobset"), "{}").unwrap();
        assert!(write_all(d.path(), &b1).is_err());
    }
}
