//! The shape of harness/src and suites/src, checked: no import cycles
//! between modules (every `crate::` path counts, in `use` lines and in
//! expressions: a stricter reading than cargo-cycles in
//! ci/check-modules.sh, which sees `use` lines only), every module imports
//! only its own layer or the layers below it (docs/src/architecture.md),
//! and a folder's module file only declares (its code lives in files named
//! by their concept). A file is as long as its one concept needs: there is
//! no line cap. In harness/src, install, metrics, workloads and the
//! benchmarks also name no provider (a branch on one is
//! tests/provider_matches.rs's).
//! Paths in comments are not imports and are not read.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// harness/src's top-level modules from the top layer down. A module may
/// import its own layer and any layer below it, never one above.
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
        "progress", "logs", "stats", "timings", "machine", "pki", "load",
    ],
];

/// Folder module files that may hold code: none (kept as the one place an
/// exception would have to be named).
const HOLDING_CODE: &[&str] = &[];

/// suites/src's: the suites above the framework they run on (the runner,
/// its slots and builds, the timings, the case-suite runner, lib.rs's
/// fixtures), which never imports a suite.
const SUITE_LAYERS: &[&[&str]] = &[
    &["suite"],
    &[
        "lib",
        "runner",
        "slots",
        "lane",
        "builds",
        "timing",
        "failures",
        "case_suite",
    ],
];

/// One crate's source tree, as these rules read it.
struct Tree {
    /// Its sources, from the repository root.
    src: &'static str,
    layers: &'static [&'static [&'static str]],
    /// How its code names its own top-level modules (the binary names the
    /// library by the crate's name).
    prefixes: &'static [&'static str],
    /// Folder module files allowed to hold code.
    holding_code: &'static [&'static str],
    /// Files of a binary, whose modules are not the library's.
    is_bin: fn(&Path) -> bool,
    /// Fewer references, modules or folder module files than these and
    /// the scan is broken.
    min_references: usize,
    min_modules: usize,
    min_folder_modules: usize,
}

const HARNESS: Tree = Tree {
    src: "harness/src",
    layers: LAYERS,
    prefixes: &["crate::", "harness::"],
    holding_code: HOLDING_CODE,
    is_bin: |rel| rel.starts_with("cli") || rel == Path::new("main.rs"),
    min_references: 300,
    min_modules: 80,
    min_folder_modules: 20,
};

const SUITES: Tree = Tree {
    src: "suites/src",
    layers: SUITE_LAYERS,
    prefixes: &["crate::"],
    holding_code: &[],
    is_bin: |_| false,
    min_references: 40,
    min_modules: 25,
    min_folder_modules: 4,
};

const TREES: &[&Tree] = &[&HARNESS, &SUITES];

fn rank_in(layers: &[&[&str]], module: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&module))
}

fn rank(module: &str) -> Option<usize> {
    rank_in(LAYERS, module)
}

/// The code of a file without its `#[cfg(test)] mod tests` block.
fn non_test(text: &str) -> &str {
    text.find("\n#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i])
}

/// `code` with its comment lines blanked (kept as empty lines, so line
/// numbers hold): a path a comment names is no import.
fn without_comments(code: &str) -> String {
    code.lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `crate::X` / `harness::X` references to top-level modules in `code`,
/// with their line numbers.
fn references(code: &str) -> Vec<(usize, String)> {
    references_by(code, HARNESS.prefixes)
}

/// References to top-level modules in `code` by each of `prefixes`, with
/// their line numbers.
fn references_by(code: &str, prefixes: &[&str]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for prefix in prefixes {
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

/// The sources of `tree`, sorted.
fn sources_of(tree: &Tree) -> Vec<PathBuf> {
    common::rust_sources(&common::repo_root().join(tree.src))
}

fn all_sources() -> Vec<PathBuf> {
    sources_of(&HARNESS)
}

#[test]
fn every_import_points_to_its_own_layer_or_below() {
    for tree in TREES {
        imports_point_down(tree);
    }
}

fn imports_point_down(tree: &Tree) {
    let src = common::repo_root().join(tree.src);
    let mut bad = Vec::new();
    let mut checked = 0;
    for path in sources_of(tree) {
        let rel = path.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let own = rank_in(tree.layers, &top).unwrap_or_else(|| {
            panic!(
                "{}/{}: module {top} is in no layer of this test",
                tree.src,
                rel.display()
            )
        });
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, target) in references_by(&without_comments(non_test(&text)), tree.prefixes) {
            checked += 1;
            if let Some(r) = rank_in(tree.layers, &target)
                && r < own
            {
                bad.push(format!(
                    "{}/{}:{line}: {top} imports {target}, a layer above it",
                    tree.src,
                    rel.display()
                ));
            }
        }
    }
    assert!(
        checked > tree.min_references,
        "{}: only {checked} references found: is the scan broken?",
        tree.src
    );
    assert!(
        bad.is_empty(),
        "imports pointing up a layer:\n{}",
        bad.join("\n")
    );
}

/// A folder's module file: its `mod.rs`, or `x.rs` beside a folder `x/`.
fn is_folder_module(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "mod.rs") || path.with_extension("").is_dir()
}

/// The first line of `code` (a module file without its test module) that
/// is more than a declaration, with its number: a module file holds doc
/// comments, attributes, `mod x;` declarations and `use` re-exports only —
/// no fn, struct, enum, impl, const, static, type, trait or macro.
fn first_non_declaration(code: &str) -> Option<(usize, String)> {
    // Open brackets of an attribute, or a `use` not yet ended by `;`,
    // carried over to the next lines.
    let (mut attribute, mut open_use) = (0i32, false);
    for (n, line) in code.lines().enumerate() {
        let t = line.trim();
        if open_use {
            open_use = !t.ends_with(';');
            continue;
        }
        if attribute > 0 {
            attribute += t.matches('[').count() as i32 - t.matches(']').count() as i32;
            continue;
        }
        if t.is_empty() || t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[") || t.starts_with("#![") {
            attribute = t.matches('[').count() as i32 - t.matches(']').count() as i32;
            continue;
        }
        let item = match t.strip_prefix("pub") {
            // `pub mod`, `pub(crate) use`, …
            Some(rest) if rest.starts_with(' ') => rest.trim_start(),
            Some(rest) if rest.starts_with('(') => rest
                .split_once(')')
                .map_or(rest, |(_, after)| after.trim_start()),
            _ => t,
        };
        if item.starts_with("mod ") && t.ends_with(';') {
            continue;
        }
        if item.starts_with("use ") {
            open_use = !t.ends_with(';');
            continue;
        }
        return Some((n + 1, t.to_string()));
    }
    None
}

#[test]
fn a_folders_module_file_only_declares() {
    for tree in TREES {
        module_files_declare(tree);
    }
}

fn module_files_declare(tree: &Tree) {
    let src = common::repo_root().join(tree.src);
    let gone: Vec<&str> = tree
        .holding_code
        .iter()
        .copied()
        .filter(|rel| !src.join(rel).is_file())
        .collect();
    assert!(
        gone.is_empty(),
        "{}: listed as holding code but not there any more (take them off the list): {gone:?}",
        tree.src
    );
    let mut bad = Vec::new();
    let mut listed_but_declaring = Vec::new();
    let mut checked = 0;
    for path in sources_of(tree).into_iter().filter(|p| is_folder_module(p)) {
        checked += 1;
        let rel = path.strip_prefix(&src).unwrap().display().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let found = first_non_declaration(non_test(&text));
        match (found, tree.holding_code.contains(&rel.as_str())) {
            (Some((line, item)), false) => bad.push(format!(
                "{}/{rel}:{line}: `{item}`: a folder's module file only declares \
                 (mod, use, doc comments, attributes); move this into a file named by its concept",
                tree.src
            )),
            (None, true) => listed_but_declaring.push(rel),
            _ => {}
        }
    }
    assert!(
        checked > tree.min_folder_modules,
        "{}: only {checked} folder module files found: is the scan broken?",
        tree.src
    );
    assert!(
        bad.is_empty(),
        "module files holding code:\n{}",
        bad.join("\n")
    );
    assert!(
        listed_but_declaring.is_empty(),
        "listed in HOLDING_CODE but only declaring now (take them off the list): {listed_but_declaring:?}"
    );
}

#[test]
fn the_declaration_check_sees_an_item() {
    // The checker itself: a function seeded among declarations is found,
    // with its line; declarations, attributes and a re-export over
    // several lines are not.
    let seeded = "//! A folder.\n\npub mod a;\n#[cfg(any(\n    test,\n    feature = \"testkit\"\n))]\npub(crate) mod fakes;\npub use a::{\n    One,\n    Two,\n};\n\n/// Helps.\npub fn helper() -> u32 {\n    1\n}\n";
    assert_eq!(
        first_non_declaration(seeded),
        Some((15, "pub fn helper() -> u32 {".to_string()))
    );
    let declaring = &seeded[..seeded.find("/// Helps.").unwrap()];
    assert_eq!(first_non_declaration(declaring), None);
    for item in [
        "const N: u32 = 1;",
        "pub static S: &str = \"\";",
        "pub struct S;",
        "enum E {}",
        "impl S {}",
        "pub type T = u32;",
        "trait T {}",
        "macro_rules! m { () => {} }",
        "mod inline {}",
    ] {
        assert_eq!(
            first_non_declaration(&format!("pub mod a;\n{item}\n")),
            Some((2, item.to_string())),
            "{item}"
        );
    }
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
    // In suites/src, the framework is below the suites, and a path into
    // the harness crate is another crate's.
    assert!(rank_in(SUITE_LAYERS, "suite").unwrap() < rank_in(SUITE_LAYERS, "runner").unwrap());
    assert_eq!(
        references_by(
            "use crate::suite::kind;\nuse harness::bench::thor;\n",
            SUITES.prefixes
        ),
        [(1, "suite".to_string())]
    );
    // A path a comment names is no import.
    assert_eq!(
        references(&without_comments(
            "//! Runs first (`crate::runner`).\n    /// See crate::bench.\nuse crate::poll;"
        )),
        [(3, "poll".to_string())]
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
fn module_graph(tree: &Tree) -> BTreeMap<String, BTreeSet<String>> {
    let src = common::repo_root().join(tree.src);
    let files = sources_of(tree);
    let is_bin = tree.is_bin;
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
        for path in crate_paths(&without_comments(non_test(&text))) {
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
    for tree in TREES {
        no_cycles(tree);
    }
}

fn no_cycles(tree: &Tree) {
    let g = module_graph(tree);
    assert!(
        g.len() > tree.min_modules,
        "{}: only {} modules: is the scan broken?",
        tree.src,
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
    assert!(
        found.is_empty(),
        "{}: import cycles:\n{}",
        tree.src,
        text.join("\n")
    );
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

/// Layers that never name a provider: they ask the `Cluster` trait for
/// what they need or take plain data (`lifecycle`, above them, composes
/// providers and installs).
const PROVIDER_FREE: &[&str] = &["install", "metrics", "workload", "bench"];

/// The providers under `cluster::`.
const PROVIDERS: &[&str] = &["kind", "local", "existing"];

/// Each provider module `code` names (`crate::cluster::kind::…`, or a
/// provider in a `crate::cluster::{…}` group), with its line.
fn providers_named(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let prefix = "crate::cluster::";
    let mut at = 0;
    while let Some(i) = code[at..].find(prefix) {
        let start = at + i;
        at = start + prefix.len();
        let before = code[..start].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at..];
        // `crate::cluster::kind…` or `crate::cluster::{Cluster, kind::…}`.
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .map(|n| n.trim().split("::").next().unwrap_or(""))
                .collect(),
            None => vec![
                rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or(""),
            ],
        };
        let line = code[..start].matches('\n').count() + 1;
        for n in names.into_iter().filter(|n| PROVIDERS.contains(n)) {
            out.push((line, format!("cluster::{n}")));
        }
    }
    out
}

#[test]
fn install_metrics_workloads_and_benchmarks_name_no_provider() {
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
            .to_string_lossy();
        if !PROVIDER_FREE.contains(&top.as_ref()) {
            continue;
        }
        checked += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let named = providers_named(&without_comments(non_test(&text)));
        for (line, provider) in named {
            bad.push(format!(
                "harness/src/{}:{line}: {top} names the provider {provider}; ask the Cluster trait (cluster/provider.rs) or take plain data",
                rel.display()
            ));
        }
    }
    assert!(
        checked > 40,
        "only {checked} files checked: is the scan broken?"
    );
    assert!(bad.is_empty(), "providers named:\n{}", bad.join("\n"));
}

#[test]
fn the_provider_scan_sees_a_provider() {
    let code = "use crate::cluster::kind::KindCluster;\nuse crate::cluster::{Cluster,\n    local::WebhookEndpoint};\nlet f = crate::cluster::existing::apf::ApfFlows::default();\nuse crate::cluster::kindness;\nuse crate::cluster::provider::Cluster;\n";
    assert_eq!(
        providers_named(code),
        [
            (1, "cluster::kind".to_string()),
            (2, "cluster::local".to_string()),
            (4, "cluster::existing".to_string()),
        ]
    );
}
