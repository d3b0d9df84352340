//! Decoding a positioned YAML document into a typed model, reporting type
//! errors and unknown fields with their field paths and positions.

use serde::de::DeserializeOwned;

use crate::schema::finding::Finding;
use crate::yaml::{Node, Seg, path_string};

/// Where a document came from, to turn paths into findings.
pub struct Ctx<'a> {
    pub file: &'a str,
    pub root: &'a Node,
    /// Prefix of every path (e.g. the template a fragment sits in).
    pub base: Vec<Seg>,
}

impl Ctx<'_> {
    pub fn finding(&self, path: &[Seg], message: impl Into<String>) -> Finding {
        let mut full = self.base.clone();
        full.extend(path.iter().cloned());
        let pos = self.root.locate(&full);
        Finding {
            file: self.file.to_string(),
            line: pos.line,
            column: pos.column,
            path: path_string(&full),
            message: message.into(),
        }
    }
}

fn segs_from_ignored(path: &serde_ignored::Path<'_>, out: &mut Vec<Seg>) {
    use serde_ignored::Path;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            segs_from_ignored(parent, out);
            out.push(Seg::Index(*index));
        }
        Path::Map { parent, key } => {
            segs_from_ignored(parent, out);
            out.push(Seg::Key(key.clone()));
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => segs_from_ignored(parent, out),
    }
}

fn segs_from_tracked(path: &serde_path_to_error::Path) -> Vec<Seg> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(Seg::Index(*index)),
            Segment::Map { key } => Some(Seg::Key(key.clone())),
            Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
            Segment::Unknown => None,
        })
        .collect()
}

/// Decode `value` (the JSON form of the node at `ctx.base`) as `T`. Type
/// errors and unknown fields become findings; `what` names the model
/// ("batch/v1 Job") in messages.
pub fn decode<T: DeserializeOwned>(
    ctx: &Ctx<'_>,
    value: &serde_json::Value,
    what: &str,
) -> (Option<T>, Vec<Finding>) {
    let mut findings = Vec::new();
    let mut unknown: Vec<Vec<Seg>> = Vec::new();
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(value, &mut track);
    let result: Result<T, _> = serde_ignored::deserialize(de, |p| {
        let mut segs = Vec::new();
        segs_from_ignored(&p, &mut segs);
        unknown.push(segs);
    });
    match result {
        Ok(v) => {
            for segs in unknown {
                let field = match segs.last() {
                    Some(Seg::Key(k)) => k.clone(),
                    _ => path_string(&segs),
                };
                findings.push(ctx.finding(&segs, format!("unknown field {field:?} in {what}")));
            }
            (Some(v), findings)
        }
        Err(e) => {
            let segs = segs_from_tracked(&track.path());
            findings.push(ctx.finding(&segs, format!("{what}: {e}")));
            (None, findings)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct M {
        name: String,
        items: Vec<Item>,
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Item {
        n: u32,
    }

    fn run(text: &str) -> (Option<M>, Vec<Finding>) {
        let docs = parse(text).unwrap();
        let root = &docs[0].root;
        let ctx = Ctx {
            file: "f.yaml",
            root,
            base: vec![],
        };
        decode::<M>(&ctx, &root.to_json(), "test model")
    }

    #[test]
    fn unknown_fields_are_reported_with_positions() {
        let (m, f) = run("name: x\nitems:\n  - n: 1\n    extra: 2\n");
        assert!(m.is_some());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].line, f[0].column), (4, 5));
        assert_eq!(f[0].path, "items[0].extra");
        assert!(f[0].message.contains("unknown field \"extra\""));
    }

    #[test]
    fn wrong_types_are_reported_at_the_field() {
        let (m, f) = run("name: x\nitems:\n  - n: 1\n  - n: lots\n");
        assert!(m.is_none());
        assert_eq!(f[0].path, "items[1].n");
        assert_eq!(f[0].line, 4);
        assert!(f[0].message.contains("invalid type"), "{}", f[0].message);
    }

    #[test]
    fn k8s_openapi_types_report_unknown_fields() {
        let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelizm: 3\n  template:\n    spec:\n      containers: [{name: c, image: i}]\n";
        let docs = parse(text).unwrap();
        let root = &docs[0].root;
        let ctx = Ctx {
            file: "job.yaml",
            root,
            base: vec![],
        };
        let (job, f) =
            decode::<k8s_openapi::api::batch::v1::Job>(&ctx, &root.to_json(), "batch/v1 Job");
        assert!(job.is_some());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].path, "spec.parallelizm");
        assert_eq!((f[0].line, f[0].column), (5, 3));
    }
}
