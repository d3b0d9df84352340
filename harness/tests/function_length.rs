//! One concept per function: no function in harness/src (test modules
//! aside) is longer than 120 lines, unless it is one list or table named
//! in `TABLES` — and none is longer than 150. A long function mixes
//! concepts (setup, a loop, assembling a result); split it by concept
//! (docs/src/architecture.md). A function is counted from its `fn` line
//! to the `}` at its own indentation.

mod common;

/// The longest a function may be.
const MOST: usize = 120;
/// The longest a function that is one list or table may be.
const MOST_TABLE: usize = 150;
/// Functions that are one list or table (file, name), allowed up to
/// `MOST_TABLE`.
const TABLES: &[(&str, &str)] = &[];

/// The name of the function a line declares, if it declares one.
fn declares(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for word in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "async ",
        "const ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(word).unwrap_or(rest);
        rest = rest.trim_start();
    }
    for word in ["async ", "const "] {
        rest = rest.strip_prefix(word).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&name[..end])
}

/// Each function of `code` (before its `#[cfg(test)]` module) with a
/// body: (name, first line, lines).
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let Some(name) = declares(lines[i]) else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - lines[i].trim_start().len();
        // The signature ends at `{` (a body) or `;` (a declaration).
        // A body closed on its own line (`fn f() -> u32 { 1 }`) is that
        // line.
        let mut j = i;
        while j < lines.len() && !lines[j].trim_end().ends_with('{') {
            let end = lines[j].trim_end();
            if end.ends_with(';') || end.ends_with('}') {
                break;
            }
            j += 1;
        }
        if j >= lines.len() || !lines[j].trim_end().ends_with('{') {
            i = j + 1;
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        let mut k = j + 1;
        while k < lines.len() && lines[k].trim_end() != close {
            k += 1;
        }
        out.push((name.to_string(), i + 1, k - i + 1));
        i = k + 1;
    }
    out
}

#[test]
fn no_function_is_longer_than_its_concept() {
    let src = common::repo_root().join("harness/src");
    let files = common::rust_sources(&src);
    let (mut long, mut counted) = (Vec::new(), 0);
    for path in files {
        let rel = path.strip_prefix(&src).unwrap().display().to_string();
        let code = std::fs::read_to_string(&path).unwrap();
        for (name, line, n) in functions(&code) {
            counted += 1;
            let table = TABLES.contains(&(rel.as_str(), name.as_str()));
            let most = if table { MOST_TABLE } else { MOST };
            if n > most {
                long.push(format!(
                    "harness/src/{rel}:{line}: fn {name} is {n} lines (at most {most})"
                ));
            }
        }
    }
    assert!(
        counted > 1000,
        "only {counted} functions counted: is the scan broken?"
    );
    assert!(
        long.is_empty(),
        "functions longer than one concept:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_count_runs_from_fn_to_its_own_closing_brace() {
    let code = "\
pub async fn a(
    x: u32,
) -> u32 {
    if x > 0 {
        1
    }
    2
}
fn declared();
fn one() -> u32 { 1 }
    pub(crate) fn b() {
    }
#[cfg(test)]
mod tests {
    fn c() {}
}
";
    assert_eq!(
        functions(code),
        [("a".to_string(), 1, 8), ("b".to_string(), 11, 2)]
    );
}
