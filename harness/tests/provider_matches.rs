//! Outside the provider seam (harness/src/cluster and lifecycle), code
//! that branches on a provider names every provider: no `if let`, `let …
//! else` or `matches!` on a `Provider`, `AnyCluster` or `OnCluster`
//! variant, and no catch-all arm (`_`, a bare binding, or an arm naming no
//! variant) in a `match` whose other arms name one. Then a new provider
//! is a compile error at every place that must answer for it
//! (docs/src/architecture.md, "Where a change goes"), not a silent fall
//! into another provider's branch. Test code and comments are not read.
//! Not seen: an arm that names a variant of one enum while a `_` stands
//! in another's slot of a tuple (`(OnCluster::Fresh(_), _)`).

mod common;

/// The enums whose variants are providers.
const PROVIDER_ENUMS: &[&str] = &["Provider::", "AnyCluster::", "OnCluster::"];

/// Where branching on a provider with a catch-all is the seam's own work.
const SEAM: &[&str] = &["cluster", "lifecycle"];

/// The code before a file's `#[cfg(test)]` module, comment lines blanked
/// (line numbers hold).
fn code_of(text: &str) -> String {
    let text = text
        .find("\n#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i]);
    text.lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `text` names a variant of a provider enum (`Provider::Kind`,
/// not `ProviderName::Kind`).
fn names_provider(text: &str) -> bool {
    PROVIDER_ENUMS.iter().any(|e| {
        text.match_indices(e).any(|(i, _)| {
            !text[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

/// The pattern of the `let` whose pattern starts at `at`: up to its `=`
/// (not `==` or `=>`) outside brackets, or its `;`.
fn let_pattern(code: &str, at: usize) -> &str {
    let rest = &code[at..];
    let bytes = rest.as_bytes();
    let mut depth = 0i32;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'=' if depth == 0 => {
                let next = bytes.get(i + 1).copied();
                let prev = i.checked_sub(1).map(|p| bytes[p]);
                if next != Some(b'=') && next != Some(b'>') && prev != Some(b'=') {
                    return &rest[..i];
                }
            }
            b';' => return &rest[..i],
            _ => {}
        }
    }
    rest
}

/// The arms' patterns of the `match` block whose `{` is at `open`, each
/// with its offset in `code`.
fn arms(code: &str, open: usize) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut in_pattern = true;
    let mut start = open + 1;
    // An arm's `{ … }` body is open: its `}` ends the arm.
    let mut body_open = false;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip a string literal (escapes included).
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'{' | b'(' | b'[' => {
                depth += 1;
                if depth == 2 && bytes[i] == b'{' && !in_pattern {
                    body_open = true;
                }
            }
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                if depth == 1 && bytes[i] == b'}' && body_open {
                    body_open = false;
                    in_pattern = true;
                    start = i + 1;
                }
            }
            b'=' if depth == 1 && in_pattern && bytes.get(i + 1) == Some(&b'>') => {
                let pattern = code[start..i].trim().trim_start_matches(',').trim();
                out.push((start, pattern.to_string()));
                in_pattern = false;
                i += 1;
            }
            b',' if depth == 1 && !in_pattern => {
                in_pattern = true;
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Each branch on a provider in `code` that does not name every provider,
/// with its line and why.
fn catch_alls(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("let ") {
        if code[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let pattern = let_pattern(code, at + "let ".len());
        if names_provider(pattern) {
            let before = code[..at].trim_end();
            let what = ["if", "while"]
                .into_iter()
                .find(|k| before.ends_with(k))
                .map_or("let".to_string(), |k| format!("{k} let"));
            out.push((
                line_of(code, at),
                format!("`{what} {}` on a provider", pattern.trim()),
            ));
        }
    }
    for (at, _) in code.match_indices("matches!(") {
        let end = code[at..].find(')').map_or(code.len(), |e| at + e);
        if names_provider(&code[at..end]) {
            out.push((line_of(code, at), "`matches!` on a provider".into()));
        }
    }
    for (at, _) in code.match_indices("match ") {
        if code[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '!')
        {
            continue;
        }
        let Some(open) = code[at..].find('{').map(|o| at + o) else {
            continue;
        };
        let arms = arms(code, open);
        if !arms.iter().any(|(_, p)| names_provider(p)) {
            continue;
        }
        for (start, p) in arms.iter().filter(|(_, p)| !names_provider(p)) {
            out.push((
                line_of(
                    code,
                    *start + (code[*start..].len() - code[*start..].trim_start().len()),
                ),
                format!("the arm `{p}` of a match over providers names none"),
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn outside_the_seam_a_branch_on_a_provider_names_every_provider() {
    let src = common::repo_root().join("harness/src");
    let files = common::rust_sources(&src);
    let (mut bad, mut checked, mut branches) = (Vec::new(), 0, 0);
    for path in files {
        let rel = path.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        if SEAM.contains(&top.as_ref()) {
            continue;
        }
        checked += 1;
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        branches += code.matches("Provider::").count() + code.matches("AnyCluster::").count();
        for (line, why) in catch_alls(&code) {
            bad.push(format!("harness/src/{}:{line}: {why}", rel.display()));
        }
    }
    assert!(
        checked > 100,
        "only {checked} files read: is the walk broken?"
    );
    assert!(
        branches > 10,
        "only {branches} provider variants named outside the seam: is the scan broken?"
    );
    assert!(
        bad.is_empty(),
        "branches on a provider that do not name every provider (name each; a catch-all lets a new provider fall into another's branch):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scan_sees_each_kind_of_catch_all_and_passes_a_full_match() {
    let code = "\
fn f(p: &Provider, c: &AnyCluster) {
    if let Provider::Kind(k) = p {
        go(k);
    }
    let Some(AnyCluster::Local(l)) = c.local() else { return };
    let x = matches!(c, AnyCluster::Kind(_));
    match c {
        AnyCluster::Kind(k) => { k.go() }
        _ => {}
    }
    let y = match (p, 1) {
        (Provider::Existing(t), _) => 1,
        (_, n) if n > 0 => 2,
        other => 3,
    };
    match p {
        Provider::Local { real_node } => { a(\"}\") }
        Provider::Kind(k) if k.kwok => 1,
        Provider::Kind(_) | Provider::Existing(_) => {}
    }
    let ok = x == y;
    match n { 1 => {}, _ => {} }
}
";
    let found: Vec<(usize, String)> = catch_alls(code);
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [2, 5, 6, 9, 13, 14], "{found:#?}");
    assert!(
        found[0].1.starts_with("`if let Provider::Kind(k)"),
        "{found:?}"
    );
    assert!(found[3].1.contains("`_`"), "{found:?}");
    assert!(found[4].1.contains("`(_, n) if n > 0`"), "{found:?}");
    assert!(found[5].1.contains("`other`"), "{found:?}");
}
