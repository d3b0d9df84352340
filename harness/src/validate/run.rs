//! `harness validate` over paths (or the repository's config
//! directories): the files found, each classified and checked, the Thor
//! templates rendered once any is seen, into one Report.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::error::bad_input;
use crate::schema::finding::Finding;
use crate::validate::check::check_text;
use crate::validate::classify::{FileKind, classify};
use crate::validate::report::{FileResult, Report};
use crate::validate::thor;

/// The directories a whole-repository run covers.
pub const REPO_DIRS: &[&str] = &["kind-configs", "manifests", "suites", "baselines"];

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

/// Validate `paths` (files or directories; default: the repository's
/// config directories) under `root`.
pub fn run(root: &Path, paths: &[PathBuf]) -> Result<Report> {
    let started = Instant::now();
    let root = &absolute_root(root)?;
    let mut results = Vec::new();
    let files = if paths.is_empty() {
        repo_files(root, &mut results)?
    } else {
        named_files(paths)?
    };
    let templates_seen = check_files(root, files, &mut results)?;
    let mut thor_renderings = 0;
    let mut documents: usize = results.iter().map(|r| r.documents).sum();
    if templates_seen {
        let t = thor::check_templates();
        thor_renderings = t.renderings;
        documents += t.documents;
        add_findings(&mut results, t.findings);
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

/// `--root` made absolute; an error when it is not a directory.
fn absolute_root(root: &Path) -> Result<PathBuf> {
    if !root.is_dir() {
        return Err(bad_input(format!(
            "--root {}: not a directory",
            root.display()
        )));
    }
    // Paths are made absolute below: so is the root, or no file would lie
    // under it (and each would be classified by its absolute path).
    Ok(if root.is_absolute() {
        root.to_path_buf()
    } else {
        std::env::current_dir()?.join(root)
    })
}

/// The files of the repository's config directories (none named itself);
/// one there that is not a directory is a result of its own.
fn repo_files(root: &Path, results: &mut Vec<FileResult>) -> Result<Vec<(PathBuf, bool)>> {
    let mut found = Vec::new();
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
    Ok(found.into_iter().map(|p| (p, false)).collect())
}

/// The files `paths` name, absolute, each with whether it was named itself
/// on the command line: a file found in a directory that validate does
/// not check is skipped, as in the default run; a file named itself is
/// checked or refused.
fn named_files(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let mut found = Vec::new();
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
    Ok(files)
}

/// Read, classify and check each file into `results`; says whether any
/// was a Thor template.
fn check_files(
    root: &Path,
    files: Vec<(PathBuf, bool)>,
    results: &mut Vec<FileResult>,
) -> Result<bool> {
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
                    "{rel}: not a file validate checks (YAML under kind-configs/, manifests/, suites/; JSON under baselines/, and its YAML answer matrix)"
                )));
            }
            continue;
        };
        templates_seen |= kind == FileKind::ThorTemplate;
        results.push(check_text(root, &rel, kind, &text));
    }
    Ok(templates_seen)
}

/// Add the template renderings' findings to their files' results (a file
/// without one gets a result of its own).
fn add_findings(results: &mut Vec<FileResult>, findings: Vec<Finding>) {
    for f in findings {
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
