//! `harness validate`: offline checks of kind-configs/, manifests/,
//! suites/ and baselines/ with the harness's typed models — no cluster, no
//! binaries, no network.

pub mod hpcc;
pub mod report;

pub use report::{FileResult, Report};
pub mod thor;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

pub use crate::schema::Finding;
use crate::schema::typed::{Ctx, decode};
use crate::schema::{check_yaml, k8s, kind};

use crate::error::bad_input;
use crate::yaml::Seg;

/// The directories a whole-repository run covers.
pub const REPO_DIRS: &[&str] = &["kind-configs", "manifests", "suites", "baselines"];

/// What a file is, by where it lives (and, outside the repo layout, by
/// what it says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    KindConfig,
    ThorTemplate,
    /// Values for the HPCC chart (manifests/hpcc/values/).
    HpccValues,
    GangCase,
    Manifest,
    ThorScenario,
    Baseline,
}

fn classify(rel: &str, text: &str) -> Option<FileKind> {
    let is_yaml = rel.ends_with(".yaml") || rel.ends_with(".yml");
    if rel.starts_with("baselines/") {
        return rel.ends_with(".json").then_some(FileKind::Baseline);
    }
    // Kueue's performance runner's generator configs: the runner's own
    // format, read by it (`measure --kueue-perf`), no Kubernetes object.
    if !is_yaml || rel.starts_with("suites/measure/kueue-perf/") {
        return None;
    }
    if rel.starts_with("kind-configs/") || text.contains("kind.x-k8s.io/") {
        Some(FileKind::KindConfig)
    } else if rel.starts_with("manifests/hpcc/values/") {
        Some(FileKind::HpccValues)
    } else if rel.starts_with("manifests/hpcc/") {
        Some(FileKind::ThorTemplate)
    } else if rel.starts_with("suites/thor/") {
        Some(FileKind::ThorScenario)
    } else if ["suites/gang/", "suites/kueue/", "suites/batch/"]
        .iter()
        .any(|d| rel.starts_with(d))
    {
        Some(FileKind::GangCase)
    } else {
        Some(FileKind::Manifest)
    }
}

/// Every file below `dir`, sorted. Symbolic links to directories are not
/// followed (a link loop would recurse without end); links to files are
/// kept and read through.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        let own = std::fs::symlink_metadata(&p)?;
        if own.is_dir() {
            walk(&p, out)?;
        } else if own.file_type().is_symlink() && p.is_dir() {
            continue;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

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
            FileKind::Baseline => {
                let (b, mut f) = crate::bench::core::baseline::check(ctx, v);
                // `harness measure --record` names its workload, not a
                // scenario file.
                if let Some(b) = b
                    && !b.is_measure()
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
            FileKind::KindConfig | FileKind::Baseline | FileKind::GangCase | FileKind::Manifest
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

/// Validate `paths` (files or directories; default: the repository's
/// config directories) under `root`.
pub fn run(root: &Path, paths: &[PathBuf]) -> Result<Report> {
    let started = Instant::now();
    if !root.is_dir() {
        return Err(bad_input(format!(
            "--root {}: not a directory",
            root.display()
        )));
    }
    // Paths are made absolute below: so is the root, or no file would lie
    // under it (and each would be classified by its absolute path).
    let root = &if root.is_absolute() {
        root.to_path_buf()
    } else {
        std::env::current_dir()?.join(root)
    };
    // Each file with whether it was named itself on the command line: a
    // file found in a directory (named or default) that validate does not
    // check is skipped, as in the default run; a file named itself is
    // checked or refused.
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let mut results = Vec::new();
    let mut found = Vec::new();
    if paths.is_empty() {
        for d in REPO_DIRS {
            let dir = root.join(d);
            match std::fs::metadata(&dir) {
                Ok(m) if m.is_dir() => walk(&dir, &mut found)?,
                // Absent: a repository without that kind of file.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // A file (or anything else) where the directory should be:
                // its files would be skipped without a word.
                _ => results.push(FileResult {
                    file: d.to_string(),
                    kind: "unreadable".into(),
                    documents: 0,
                    findings: vec![Finding {
                        file: d.to_string(),
                        line: 1,
                        column: 1,
                        path: "(file)".into(),
                        message: format!("{d}: not a directory (validate checks the files in it)"),
                    }],
                }),
            }
        }
    } else {
        for p in paths {
            let p = if p.is_absolute() {
                p.clone()
            } else {
                std::env::current_dir()?.join(p)
            };
            if p.is_dir() {
                walk(&p, &mut found)?;
                files.extend(found.drain(..).map(|p| (p, false)));
            } else if p.exists() || p.is_symlink() {
                if std::fs::metadata(&p).is_ok_and(|m| !m.is_file()) {
                    // A FIFO or a device named as a path is bad input,
                    // like a missing one (a link loop or a dangling link
                    // is reported unreadable below).
                    return Err(bad_input(format!(
                        "{}: not a regular file (a FIFO, socket or device); give a file or a directory",
                        p.display()
                    )));
                }
                files.push((p, true));
            } else {
                return Err(bad_input(format!(
                    "{}: no such file or directory",
                    p.display()
                )));
            }
        }
    }
    files.extend(found.into_iter().map(|p| (p, false)));
    let mut templates_seen = false;
    for (path, named) in files {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let text = match crate::input::read_text(&path) {
            Ok(t) => t,
            Err(e) => {
                let ours =
                    rel.ends_with(".yaml") || rel.ends_with(".yml") || rel.ends_with(".json");
                if ours || named {
                    results.push(FileResult {
                        file: rel.clone(),
                        kind: "unreadable".into(),
                        documents: 0,
                        findings: vec![Finding {
                            file: rel,
                            line: e.at.map_or(1, |a| a.0),
                            column: e.at.map_or(1, |a| a.1),
                            path: "(file)".into(),
                            message: format!("cannot read: {}", e.message),
                        }],
                    });
                }
                continue;
            }
        };
        let Some(kind) = classify(&rel, &text) else {
            if named {
                return Err(bad_input(format!(
                    "{rel}: not a file validate checks (YAML under kind-configs/, manifests/, suites/; JSON under baselines/)"
                )));
            }
            continue;
        };
        templates_seen |= kind == FileKind::ThorTemplate;
        results.push(check_text(root, &rel, kind, &text));
    }
    let mut thor_renderings = 0;
    let mut documents: usize = results.iter().map(|r| r.documents).sum();
    if templates_seen {
        let t = thor::check_templates();
        thor_renderings = t.renderings;
        documents += t.documents;
        for f in t.findings {
            match results.iter_mut().find(|r| r.file == f.file) {
                Some(r) => r.findings.push(f),
                None => results.push(FileResult {
                    file: f.file.clone(),
                    kind: "ThorTemplate".into(),
                    documents: 0,
                    findings: vec![f],
                }),
            }
        }
    }
    for r in &mut results {
        r.findings.sort();
        r.findings.dedup();
    }
    Ok(Report {
        files: results,
        thor_renderings,
        documents,
        elapsed: started.elapsed(),
        static_model: thor::static_model(),
        longest_thor_name: [
            crate::workload::thor::Mode::Baseline,
            crate::workload::thor::Mode::Jobset,
        ]
        .into_iter()
        .map(|m| (m.name().to_string(), thor::longest_thor_name(m)))
        .collect(),
    })
}
