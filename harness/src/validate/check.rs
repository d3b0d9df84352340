//! One file's text checked as its kind says: typed decoding, the rules
//! of its kind, and a baseline's scenario found in the repository.

use std::path::Path;

use anyhow::Result;

use crate::schema::check_yaml;
use crate::schema::finding::Finding;
use crate::schema::typed::{Ctx, decode};
use crate::schema::{k8s, kind};
use crate::validate::classify::{FileKind, classify};
use crate::validate::hpcc;
use crate::validate::report::FileResult;
use crate::yaml::Seg;

/// Validate one file's text (the fuzz tests call this directly).
pub fn check_text(root: &Path, rel: &str, kind: FileKind, text: &str) -> FileResult {
    let mut result = FileResult {
        file: rel.to_string(),
        kind: format!("{kind:?}"),
        documents: 0,
        findings: Vec::new(),
    };
    if kind == FileKind::ThorScenario {
        // The rules `bench thor` applies, empty file and second document
        // included.
        let (documents, _, findings) = crate::workload::thor::scenario::check_file(rel, text, &[]);
        result.documents = documents;
        result.findings = findings;
        return result;
    }
    let (documents, findings) = check_yaml(rel, text, |ctx, v| {
        match kind {
            FileKind::KindConfig => kind::check(ctx, v),
            // Templates are checked rendered, over the whole matrix.
            FileKind::ThorTemplate => Vec::new(),
            FileKind::HpccValues => hpcc::check(ctx, v),
            FileKind::GangCase => {
                let (c, mut f) = decode::<crate::workload::gang::case::Case>(ctx, v, "gang case");
                if let Some(c) = c {
                    let problems = crate::workload::gang::rules::validate(&c)
                        .into_iter()
                        .map(|p| (p.at, p.message))
                        .collect();
                    f.extend(semantic(ctx, problems));
                }
                f
            }
            FileKind::Manifest => k8s::check_document(ctx, v),
            // Checked whole (one document) by `scenario::check_file`, above.
            FileKind::ThorScenario => Vec::new(),
            FileKind::AnswerMatrix => crate::bench::thor::answer::check(ctx, v, root).1,
            FileKind::Baseline => {
                let (b, mut f) = crate::bench::recorded::check(ctx, v);
                // `harness measure --record` names its workload, not a
                // scenario file.
                if let Some(b) = b
                    && !crate::bench::recorded::is_measure(&b)
                    && let Err(why) = scenario_in_repo(root, &b.scenario)
                {
                    f.push(ctx.finding(&[Seg::Key("scenario".into())], why));
                }
                f
            }
        }
    });
    result.documents = documents;
    result.findings = findings;
    // A file of these kinds is one thing (a config, a baseline, a case,
    // an object): empty or only comments, it is a mistake, not a pass.
    if documents == 0
        && result.findings.is_empty()
        && matches!(
            kind,
            FileKind::KindConfig
                | FileKind::Baseline
                | FileKind::GangCase
                | FileKind::Manifest
                | FileKind::AnswerMatrix
        )
    {
        result.findings.push(Finding {
            file: rel.to_string(),
            line: 1,
            column: 1,
            path: "(file)".into(),
            message: format!(
                "no document: the file is empty or only comments (a {} needs one)",
                match kind {
                    FileKind::KindConfig => "kind config",
                    FileKind::Baseline => "baseline",
                    FileKind::GangCase => "case",
                    FileKind::AnswerMatrix => "answer matrix",
                    _ => "manifest",
                }
            ),
        });
    }
    if kind == FileKind::ThorTemplate
        && let crate::validate::thor::disk::Copy::Differs(f) =
            crate::validate::thor::disk::check_on_disk(rel, text)
    {
        // The binary's copy is checked over the matrix; this one is not it.
        result.kind = "ThorTemplate (checked on disk: differs from the built-in copy)".into();
        result.findings.extend(f);
    }
    result
}

/// A baseline's `scenario`: a scenario file inside the repository — a
/// relative path with no `..`, under suites/thor/, a YAML file that
/// exists there (symbolic links resolved, still inside the root).
pub fn scenario_in_repo(root: &Path, scenario: &str) -> Result<(), String> {
    use std::path::Component;
    let p = Path::new(scenario);
    let plain = p.components().all(|c| matches!(c, Component::Normal(_)));
    if scenario.is_empty() || !plain {
        return Err(format!(
            "scenario {scenario:?}: must be a path relative to the repository root, without `..` (e.g. suites/thor/smoke.yaml)"
        ));
    }
    if classify(scenario, "") != Some(FileKind::ThorScenario) {
        return Err(format!(
            "scenario {scenario:?}: not a scenario (a YAML file under suites/thor/)"
        ));
    }
    let inside = match (root.join(p).canonicalize(), root.canonicalize()) {
        (Ok(f), Ok(r)) => f.starts_with(r) && f.is_file(),
        _ => false,
    };
    if !inside {
        return Err(format!(
            "scenario file {scenario:?} does not exist in the repository"
        ));
    }
    Ok(())
}

/// Turn (field path, message) pairs into findings.
fn semantic(ctx: &Ctx<'_>, problems: Vec<(Vec<Seg>, String)>) -> Vec<Finding> {
    problems
        .into_iter()
        .map(|(path, msg)| ctx.finding(&path, msg))
        .collect()
}
