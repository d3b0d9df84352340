//! The shape of harness/src, checked: no import cycles between modules
//! (every `crate::` path counts, in `use` lines and in expressions: a
//! stricter reading than cargo-cycles in ci/check-modules.sh, which sees
//! `use` lines only), every module imports only its own layer or the layers
//! below it (README, "Architecture"), and no source file grows past 600
//! lines.

mod common;

use std::collections::{BTreeMap, BTreeSet};
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
        "lib", "inotify", "input", "yaml", "error", "paths", "output", "poll", "signal",
        "progress", "logs", "stats", "timings", "machine",
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

/// The module a file is: "cluster::local" for cluster/local/mod.rs,
/// "cluster::state" for cluster/state.rs, "" for lib.rs and main.rs.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// Every `crate::a::b::…` path in `code`, as its segments.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let path: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        out.push(
            path.split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        );
    }
    out
}

/// Module → the modules its code names (the longest module prefix of each
/// `crate::` path), for the library and for the binary apart.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = common::repo_root().join("harness/src");
    let files = all_sources();
    let is_bin = |rel: &Path| rel.starts_with("cli") || rel == Path::new("main.rs");
    let modules: BTreeMap<String, bool> = files
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap();
            (module_of(rel), is_bin(rel))
        })
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &files {
        let rel = p.strip_prefix(&src).unwrap();
        let (me, bin) = (module_of(rel), is_bin(rel));
        let key = if bin { format!("bin:{me}") } else { me.clone() };
        let text = std::fs::read_to_string(p).unwrap();
        let edges = graph.entry(key).or_default();
        for path in crate_paths(non_test(&text)) {
            // The longest prefix of the path that is a module of this crate.
            let target = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|m| modules.get(m) == Some(&bin));
            if let Some(t) = target
                && t != me
            {
                edges.insert(if bin { format!("bin:{t}") } else { t });
            }
        }
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'g> {
        g: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(t: &mut T<'g>, v: &'g str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                scc.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_module_imports_itself_round_a_cycle() {
    let g = module_graph();
    assert!(
        g.len() > 80,
        "only {} modules: is the scan broken?",
        g.len()
    );
    let found = cycles(&g);
    let text: Vec<String> = found
        .iter()
        .map(|scc| {
            let edges: Vec<String> = scc
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| scc.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            edges.join("; ")
        })
        .collect();
    assert!(found.is_empty(), "import cycles:\n{}", text.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(cycles(&g), [vec!["a", "b", "c"]]);
    assert_eq!(
        crate_paths("use crate::cluster::local::LocalCluster; x = crate::poll::Poll::new(1);"),
        [
            vec!["cluster", "local", "LocalCluster"],
            vec!["poll", "Poll", "new"]
        ]
    );
    assert_eq!(
        module_of(Path::new("cluster/local/mod.rs")),
        "cluster::local"
    );
}
