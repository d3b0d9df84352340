//! The one YAML entry of the checks: parse a file's text, report YAML
//! problems as findings, and check every document that is a mapping.

use serde_json::Value;

use crate::schema::finding::Finding;
use crate::schema::typed::Ctx;
use crate::yaml;

/// A YAML problem (syntax, duplicate key) as a finding of the document.
pub fn yaml_finding(file: &str, pos: yaml::Pos, message: &str) -> Finding {
    Finding {
        file: file.to_string(),
        line: pos.line,
        column: pos.column,
        path: "(document)".into(),
        message: format!("YAML: {message}"),
    }
}

/// Parse `text` (named `file`) and check every non-empty document with
/// `check`. YAML errors, duplicate keys and documents that are not a
/// mapping are findings too. Returns the number of documents and every
/// finding. The one entry point for `harness validate` and for commands
/// that read the same kind of file.
pub fn check_yaml(
    file: &str,
    text: &str,
    mut check: impl FnMut(&Ctx<'_>, &Value) -> Vec<Finding>,
) -> (usize, Vec<Finding>) {
    let docs = match yaml::parse(text) {
        Ok(d) => d,
        Err(e) => return (0, vec![yaml_finding(file, e.pos, &e.message)]),
    };
    let mut findings = Vec::new();
    let mut documents = 0;
    for doc in &docs {
        findings.extend(
            doc.problems
                .iter()
                .map(|p| yaml_finding(file, p.pos, &p.message)),
        );
        if matches!(doc.root, yaml::Node::Null(_)) {
            continue;
        }
        documents += 1;
        let ctx = Ctx {
            file,
            root: &doc.root,
            base: vec![],
        };
        let v = doc.root.to_json();
        if !v.is_object() {
            findings.push(ctx.finding(&[], "a document must be a mapping"));
            continue;
        }
        // A number past ±1.8e308 is reported above at its place; as JSON
        // it is null, and the model's "invalid type: null" on that line
        // would only repeat it, wrongly.
        let out_of_range: Vec<usize> = doc
            .problems
            .iter()
            .filter(|p| {
                p.message.contains("number out of range") || p.message.contains("no infinity")
            })
            .map(|p| p.pos.line)
            .collect();
        findings.extend(check(&ctx, &v).into_iter().filter(|f| {
            !(out_of_range.contains(&f.line) && f.message.contains("invalid type: null"))
        }));
    }
    (documents, findings)
}
