//! The shape of harness/src, checked: every module imports only its own
//! layer or the layers below it (README, "Architecture"), and no source
//! file grows past 600 lines. Import cycles are checked by cargo-cycles in
//! ci/check-modules.sh.

mod common;

use std::path::{Path, PathBuf};

/// Top-level modules from the top layer down. A module may import its own
/// layer and any layer below it, never one above.
const LAYERS: &[&[&str]] = &[
    &["main", "cli"],
    &["validate"],
    &["bench"],
    &["lifecycle"],
    &["install"],
    &["workload"],
    &["metrics"],
    &["cluster"],
    &["tools"],
    &["schema"],
    &["k8s"],
    &[
        "lib", "yaml", "error", "paths", "output", "poll", "signal", "progress", "logs",
    ],
];

const MAX_LINES: usize = 600;

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its `#[cfg(test)] mod tests` block.
fn non_test(text: &str) -> &str {
    text.find("\n#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i])
}

/// `crate::X` / `harness::X` references to top-level modules in `code`,
/// with their line numbers.
fn references(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for prefix in ["crate::", "harness::"] {
            let mut rest = line;
            while let Some(i) = rest.find(prefix) {
                let before = rest[..i].chars().last();
                rest = &rest[i + prefix.len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                out.push((n + 1, name));
            }
        }
    }
    out
}

fn all_sources() -> Vec<PathBuf> {
    let src = common::repo_root().join("harness/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
}

#[test]
fn every_import_points_to_its_own_layer_or_below() {
    let src = common::repo_root().join("harness/src");
    let mut bad = Vec::new();
    let mut checked = 0;
    for path in all_sources() {
        let rel = path.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let own = rank(&top).unwrap_or_else(|| {
            panic!(
                "harness/src/{}: module {top} is in no layer of this test",
                rel.display()
            )
        });
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, target) in references(non_test(&text)) {
            checked += 1;
            if let Some(r) = rank(&target)
                && r < own
            {
                bad.push(format!(
                    "harness/src/{}:{line}: {top} imports {target}, a layer above it",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        checked > 300,
        "only {checked} references found: is the scan broken?"
    );
    assert!(
        bad.is_empty(),
        "imports pointing up a layer:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_source_file_is_longer_than_the_cap() {
    let long: Vec<String> = all_sources()
        .into_iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(&p).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {long:#?}");
}

#[test]
fn the_scan_sees_an_upward_import() {
    // The checker itself: a base module naming a workload is caught.
    let refs = references("use crate::workload::thor;\nlet x = harness::bench::thor::run;\n");
    assert_eq!(
        refs,
        [(1, "workload".to_string()), (2, "bench".to_string())]
    );
    assert!(rank("workload").unwrap() < rank("poll").unwrap());
    assert_eq!(
        non_test("a\n#[cfg(test)]\nmod tests {\nuse crate::x;\n}"),
        "a"
    );
}
