//! ECL suite cases: `<dir>/<case>.ecl` (our own ECL) with
//! `<dir>/<case>.expected.json` beside it:
//!
//! ```json
//! { "description": "…",
//!   "timeout_s": 600,
//!   "results": {
//!     "people":  { "rows": [ {"id": 1, "name": "Ada"} ] },
//!     "groups":  { "rows": [ … ], "ordered": false },
//!     "sorted":  { "count": 100000, "sums": {"key": 4999950000} } } }
//! ```
//!
//! Each expected result is named after an `OUTPUT(…, NAMED('<name>'))` of
//! the ECL and holds either its exact rows (in order unless `ordered` is
//! false) or, for large outputs, its row count and per-field sums.
//! Fetched values are compared as text (ESP may render a number as a JSON
//! number or a string), field names case-insensitively (ECL's are), and
//! strings without trailing blanks (fixed-length STRINGn pads).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::bad_input;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    #[serde(default)]
    pub description: String,
    /// How long the workunit may take (default 900 s).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    pub results: BTreeMap<String, ExpectedResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<serde_json::Map<String, Value>>>,
    #[serde(default = "yes")]
    pub ordered: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sums: BTreeMap<String, i128>,
}

fn yes() -> bool {
    true
}

impl ExpectedResult {
    /// Rows the check needs fetched at most.
    pub fn rows_needed(&self) -> u64 {
        match (&self.rows, self.count) {
            (Some(r), _) => r.len() as u64,
            (None, Some(c)) => c,
            (None, None) => 0,
        }
    }
}

/// One case: its ECL text and what it must produce.
#[derive(Debug, Clone)]
pub struct EclCase {
    pub name: String,
    pub ecl_path: PathBuf,
    pub expected_path: PathBuf,
    pub ecl: String,
    pub expected: Expected,
}

/// Case names in `dir`: every `<name>.ecl`, sorted.
pub fn discover(dir: &Path) -> Result<Vec<String>> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| bad_input(format!("ECL case directory {}: {e}", dir.display())))?;
    let mut names = Vec::new();
    for entry in rd {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "ecl")
            && let Some(stem) = p.file_stem().and_then(|s| s.to_str())
        {
            names.push(stem.to_string());
        }
    }
    names.sort();
    if names.is_empty() {
        return Err(bad_input(format!("no *.ecl cases in {}", dir.display())));
    }
    Ok(names)
}

fn is_ecl_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic())
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// The names given by `NAMED('…')` in ECL text (case-insensitive keyword,
/// single or double quotes), lower-cased.
pub fn named_outputs(ecl: &str) -> Vec<String> {
    let lower = ecl.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut rest = lower.as_str();
    while let Some(i) = rest.find("named") {
        rest = &rest[i + 5..];
        let t = rest.trim_start();
        if let Some(t) = t.strip_prefix('(') {
            let t = t.trim_start();
            if let Some(q) = t.chars().next().filter(|q| *q == '\'' || *q == '"')
                && let Some(end) = t[1..].find(q)
            {
                out.push(t[1..1 + end].to_string());
            }
        }
    }
    out
}

/// Load and check one case: the ECL is there and not blank, the expected
/// file parses, names at least one result, every name is an ECL
/// identifier that the ECL outputs with NAMED(…), and each result is
/// either rows or a count.
pub fn load(dir: &Path, name: &str) -> Result<EclCase> {
    let ecl_path = dir.join(format!("{name}.ecl"));
    let expected_path = dir.join(format!("{name}.expected.json"));
    let ecl = crate::input::read(&ecl_path)?;
    let code: String = ecl
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    if code.trim().is_empty() {
        return Err(bad_input(format!(
            "{}: no ECL in it (blank or only comments)",
            ecl_path.display()
        )));
    }
    let text = crate::input::read(&expected_path)?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let expected: Expected = serde_path_to_error::deserialize(de).map_err(|e| {
        bad_input(format!(
            "{}: at {}: {}",
            expected_path.display(),
            e.path(),
            e.inner()
        ))
    })?;
    let at = |m: String| bad_input(format!("{}: {m}", expected_path.display()));
    if expected.results.is_empty() {
        return Err(at("\"results\" names no result".into()));
    }
    let named = named_outputs(&code);
    for (rname, r) in &expected.results {
        if !is_ecl_identifier(rname) {
            return Err(at(format!(
                "result name {rname:?} is not an ECL identifier"
            )));
        }
        if !named.contains(&rname.to_ascii_lowercase()) {
            return Err(at(format!(
                "result {rname:?} is not output by {} (its NAMED outputs: {named:?})",
                ecl_path.display()
            )));
        }
        match (&r.rows, r.count) {
            (Some(_), Some(_)) => {
                return Err(at(format!(
                    "results.{rname}: give either \"rows\" or \"count\", not both"
                )));
            }
            (None, None) => {
                return Err(at(format!("results.{rname}: needs \"rows\" or \"count\"")));
            }
            (None, Some(_)) if !r.ordered => {
                return Err(at(format!(
                    "results.{rname}: \"ordered\" applies to \"rows\" only"
                )));
            }
            (Some(_), None) if !r.sums.is_empty() => {
                return Err(at(format!(
                    "results.{rname}: \"sums\" applies to \"count\" only"
                )));
            }
            _ => {}
        }
    }
    if expected.timeout_s == Some(0) {
        return Err(at("timeout_s must be positive".into()));
    }
    Ok(EclCase {
        name: name.to_string(),
        ecl_path,
        expected_path,
        ecl,
        expected,
    })
}

/// A value as compared: scalars as text (strings without trailing
/// blanks), object keys lower-cased, recursively.
pub fn normalize(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(s.trim_end().to_string()),
        Value::Number(n) => Value::String(n.to_string()),
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Null => Value::String(String::new()),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), normalize(v)))
                .collect(),
        ),
    }
}

/// The compared form of a value: normalized, object keys in sorted order
/// whatever map type serde_json is built with.
fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(o) => {
                let sorted: BTreeMap<&String, &Value> = o.iter().collect();
                out.push('{');
                for (i, (k, v)) in sorted.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(&normalize(v), &mut s);
    s
}

/// Compare fetched rows of result `name` with what is expected.
pub fn check_result(
    name: &str,
    expected: &ExpectedResult,
    total: i64,
    rows: &[Value],
) -> Result<()> {
    if let Some(want) = &expected.rows {
        let want: Vec<String> = want
            .iter()
            .map(|r| canonical(&Value::Object(r.clone())))
            .collect();
        let mut got: Vec<String> = rows.iter().map(canonical).collect();
        if total >= 0 && total as usize != got.len() {
            bail!(
                "result {name}: ESP says {total} rows but {} were fetched",
                got.len()
            );
        }
        if got.len() != want.len() {
            bail!(
                "result {name}: {} rows, expected {} (first rows: {})",
                got.len(),
                want.len(),
                got.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
            );
        }
        let mut want = want;
        if !expected.ordered {
            got.sort();
            want.sort();
        }
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            bail!(
                "result {name}: row {i}{} is {} — expected {}",
                if expected.ordered { "" } else { " (sorted)" },
                got[i],
                want[i]
            );
        }
    }
    if let Some(count) = expected.count {
        if total != count as i64 || rows.len() as u64 != count {
            bail!(
                "result {name}: {} rows (ESP total {total}), expected {count}",
                rows.len()
            );
        }
        for (field, want) in &expected.sums {
            let key = field.to_ascii_lowercase();
            let mut sum: i128 = 0;
            for (i, r) in rows.iter().enumerate() {
                let n = normalize(r);
                let v = n
                    .get(&key)
                    .and_then(Value::as_str)
                    .with_context(|| format!("result {name}: row {i} has no field {field}: {r}"))?;
                let x: i128 = v.parse().with_context(|| {
                    format!("result {name}: row {i} field {field} = {v:?} is not an integer")
                })?;
                sum += x;
            }
            if sum != *want {
                bail!("result {name}: sum of {field} is {sum}, expected {want}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, name: &str, ecl: &str, expected: &str) {
        std::fs::write(dir.join(format!("{name}.ecl")), ecl).unwrap();
        std::fs::write(dir.join(format!("{name}.expected.json")), expected).unwrap();
    }

    #[test]
    fn named_outputs_are_found() {
        let ecl = "OUTPUT(a, NAMED('First'));\noutput(b,named( \"second\" ));\nOUTPUT(c);";
        assert_eq!(named_outputs(ecl), vec!["first", "second"]);
    }

    #[test]
    fn cases_load_and_bad_ones_say_why() {
        let d = tempfile::tempdir().unwrap();
        let ecl = "x := DATASET([{1}], {UNSIGNED1 n});\nOUTPUT(x, NAMED('x'));\n";
        write(
            d.path(),
            "good",
            ecl,
            r#"{"results": {"x": {"rows": [{"n": 1}]}}}"#,
        );
        let c = load(d.path(), "good").unwrap();
        assert_eq!(c.expected.results["x"].rows_needed(), 1);
        assert_eq!(discover(d.path()).unwrap(), vec!["good"]);

        let cases = [
            (
                "blank",
                "// only a comment\n",
                r#"{"results": {"x": {"count": 1}}}"#,
                "no ECL",
            ),
            ("nores", ecl, r#"{"results": {}}"#, "names no result"),
            (
                "unnamed",
                ecl,
                r#"{"results": {"y": {"count": 1}}}"#,
                "not output by",
            ),
            (
                "both",
                ecl,
                r#"{"results": {"x": {"count": 1, "rows": []}}}"#,
                "not both",
            ),
            ("neither", ecl, r#"{"results": {"x": {}}}"#, "needs"),
            (
                "typo",
                ecl,
                r#"{"results": {"x": {"cout": 1}}}"#,
                "unknown field",
            ),
            ("syntax", ecl, r#"{"results": {"x": {"count": 1}"#, "EOF"),
            (
                "sums",
                ecl,
                r#"{"results": {"x": {"rows": [], "sums": {"n": 1}}}}"#,
                "count\" only",
            ),
        ];
        for (name, ecl, exp, why) in cases {
            write(d.path(), name, ecl, exp);
            let e = load(d.path(), name).unwrap_err();
            let m = format!("{e:#}");
            assert!(m.contains(why), "{name}: {m}");
            assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        }
        let m = format!("{:#}", load(d.path(), "missing").unwrap_err());
        assert!(m.contains("missing.ecl"), "{m}");
    }

    #[test]
    fn rows_compare_as_text_and_in_order() {
        let exp: ExpectedResult = serde_json::from_value(json!({
            "rows": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Alan"}]
        }))
        .unwrap();
        let got = vec![
            json!({"ID": "1", "name": "Ada   "}),
            json!({"id": 2, "name": "Alan"}),
        ];
        check_result("p", &exp, 2, &got).unwrap();
        let swapped = vec![got[1].clone(), got[0].clone()];
        let m = format!("{}", check_result("p", &exp, 2, &swapped).unwrap_err());
        assert!(m.contains("row 0") && m.contains("Alan"), "{m}");
        let unordered = ExpectedResult {
            ordered: false,
            ..exp.clone()
        };
        check_result("p", &unordered, 2, &swapped).unwrap();
        let m = format!("{}", check_result("p", &exp, 1, &got[..1]).unwrap_err());
        assert!(m.contains("1 rows, expected 2"), "{m}");
        let m = format!("{}", check_result("p", &exp, 5, &got).unwrap_err());
        assert!(m.contains("ESP says 5"), "{m}");
    }

    #[test]
    fn counts_and_sums() {
        let exp: ExpectedResult =
            serde_json::from_value(json!({"count": 3, "sums": {"k": 6}})).unwrap();
        let rows = vec![json!({"k": 1}), json!({"k": "2"}), json!({"K": 3})];
        check_result("s", &exp, 3, &rows).unwrap();
        let m = format!("{}", check_result("s", &exp, 3, &rows[..2]).unwrap_err());
        assert!(m.contains("expected 3"), "{m}");
        let bad = vec![json!({"k": 1}), json!({"k": 2}), json!({"k": 4})];
        let m = format!("{}", check_result("s", &exp, 3, &bad).unwrap_err());
        assert!(m.contains("sum of k is 7, expected 6"), "{m}");
        let text = vec![json!({"k": 1}), json!({"k": 2}), json!({"k": "x"})];
        assert!(check_result("s", &exp, 3, &text).is_err());
    }
}
