//! Renderings of a validation Report: for people, JSON, JUnit XML, Markdown.

use std::fmt::Write;

use std::time::Duration;

use crate::output::{JunitCase, JunitSuite, junit_xml, terminal_safe};
use crate::schema::finding::Finding;
use crate::validate::thor::model::StaticRow;

/// Result of one file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileResult {
    pub file: String,
    pub kind: String,
    pub documents: usize,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub files: Vec<FileResult>,
    /// Thor templates rendered over the matrix.
    pub thor_renderings: usize,
    pub documents: usize,
    pub elapsed: Duration,
    pub static_model: Vec<StaticRow>,
    pub longest_thor_name: Vec<(String, usize)>,
}

impl Report {
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.files.iter().flat_map(|f| f.findings.iter())
    }
    pub fn ok(&self) -> bool {
        self.findings().next().is_none()
    }
}

fn summary(r: &Report) -> String {
    let n = r.findings().count();
    format!(
        "{} file(s), {} document(s) checked ({} Thor renderings) in {} ms: {}",
        r.files.len(),
        r.documents,
        r.thor_renderings,
        r.elapsed.as_millis(),
        if n == 0 {
            "no problems".to_string()
        } else {
            format!("{n} problem(s)")
        }
    )
}

fn static_table(r: &Report, md: bool) -> String {
    let mut s = String::new();
    if md {
        s.push_str("| mode | numWorkers | objects created by Thor | objects created by controllers | pods | containers |\n|---|---:|---:|---:|---:|---:|\n");
        for row in &r.static_model {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                row.mode,
                row.num_workers,
                row.client_objects,
                row.controller_objects,
                row.pods,
                row.containers
            );
        }
    } else {
        let _ = writeln!(
            s,
            "{:<12} {:>8} {:>13} {:>17} {:>6} {:>11}",
            "MODE", "WORKERS", "THOR OBJECTS", "CONTROLLER OBJS", "PODS", "CONTAINERS"
        );
        for row in &r.static_model {
            let _ = writeln!(
                s,
                "{:<12} {:>8} {:>13} {:>17} {:>6} {:>11}",
                row.mode,
                row.num_workers,
                row.client_objects,
                row.controller_objects,
                row.pods,
                row.containers
            );
        }
    }
    s
}

pub fn human(r: &Report) -> String {
    let mut s = String::new();
    for f in r.findings() {
        // A value from a file must not reach the terminal raw.
        let _ = writeln!(s, "{}", terminal_safe(&f.to_string()));
    }
    if !r.static_model.is_empty() {
        s.push_str("\nPer Thor instance, from the templates (numWorkersPerPod 1):\n");
        s.push_str(&static_table(r, false));
        for (mode, n) in &r.longest_thor_name {
            let _ = writeln!(
                s,
                "longest Thor name that keeps {mode} names valid (1024 workers, instance 8): {n} characters"
            );
        }
    }
    let _ = writeln!(s, "\n{}", summary(r));
    s
}

pub fn json(r: &Report) -> String {
    let v = serde_json::json!({
        "ok": r.ok(),
        "files": r.files,
        "documents": r.documents,
        "thorRenderings": r.thor_renderings,
        "elapsedMs": r.elapsed.as_millis() as u64,
        "staticModel": r.static_model,
        "longestThorName": r.longest_thor_name.iter().map(|(m, n)| serde_json::json!({"mode": m, "chars": n})).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
    // serde_json leaves DEL and the C1 controls raw; they can only be in
    // strings, where `\u00XX` means the same and keeps a terminal safe.
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

pub fn junit(r: &Report) -> String {
    let cases = r
        .files
        .iter()
        .map(|f| {
            let c = JunitCase::new(format!("validate.{}", f.kind), &f.file);
            if f.findings.is_empty() {
                c
            } else {
                let text: Vec<String> = f.findings.iter().map(|x| x.to_string()).collect();
                JunitCase {
                    failure: Some((format!("{} problem(s)", f.findings.len()), text.join("\n"))),
                    ..c
                }
            }
        })
        .collect();
    junit_xml(&[JunitSuite {
        name: "harness validate".into(),
        time: Some(r.elapsed.as_secs_f64()),
        cases,
    }])
}

pub fn markdown(r: &Report) -> String {
    let mut s = String::from("## harness validate\n\n");
    let _ = writeln!(s, "{}\n", summary(r));
    if !r.ok() {
        s.push_str("| where | field | problem |\n|---|---|---|\n");
        for f in r.findings() {
            let _ = writeln!(
                s,
                "| `{}:{}:{}` | `{}` | {} |",
                terminal_safe(&f.file),
                f.line,
                f.column,
                terminal_safe(&f.path),
                terminal_safe(&f.message)
                    .replace('|', "\\|")
                    .replace('\n', " ")
            );
        }
        s.push('\n');
    }
    if !r.static_model.is_empty() {
        s.push_str("### Per Thor instance, from the templates\n\n");
        s.push_str(&static_table(r, true));
    }
    s
}
