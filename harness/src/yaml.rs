//! YAML with positions: every node keeps the line and column it came from,
//! so a finding deep inside a document points at `file:line:column`.
//! Built on the event parser serde-saphyr itself uses; duplicate keys are
//! reported here (serde would silently keep one of them).

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Span};

/// A position in a file, 1-based.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn of(span: &Span) -> Pos {
        Pos {
            line: span.start.line(),
            column: span.start.col() + 1,
        }
    }
}

/// A large mapping's key → entry index, built by `parse` (a small one is
/// searched): locating thousands of findings in a wide mapping stays linear.
#[derive(Debug, Clone, Default)]
pub struct KeyIndex(Option<HashMap<String, usize>>);

impl PartialEq for KeyIndex {
    fn eq(&self, _: &KeyIndex) -> bool {
        true
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null(Pos),
    Bool(bool, Pos),
    Int(i64, Pos),
    Float(f64, Pos),
    Str(String, Pos),
    Seq(Vec<Node>, Pos),
    /// Keys with their own positions, in file order.
    Map(Vec<(String, Pos, Node)>, Pos, KeyIndex),
}

/// A problem found while reading YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub pos: Pos,
    pub message: String,
}

/// One document of a YAML stream.
#[derive(Debug, Clone)]
pub struct Document {
    pub root: Node,
    /// Index of the document in its file (0-based).
    pub index: usize,
    /// Non-fatal problems (duplicate keys).
    pub problems: Vec<YamlError>,
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

pub fn path_string(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    if s.is_empty() { "(document)".into() } else { s }
}

impl Node {
    pub fn pos(&self) -> Pos {
        match self {
            Node::Null(p)
            | Node::Bool(_, p)
            | Node::Int(_, p)
            | Node::Float(_, p)
            | Node::Str(_, p)
            | Node::Seq(_, p)
            | Node::Map(_, p, _) => *p,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, _, v)| v)
    }

    /// A mapping's entry for `key`.
    fn entry(&self, key: &str) -> Option<&(String, Pos, Node)> {
        match self {
            Node::Map(entries, _, KeyIndex(Some(index))) => index.get(key).map(|i| &entries[*i]),
            Node::Map(entries, _, _) => entries.iter().find(|(k, _, _)| k == key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s, _) => Some(s),
            _ => None,
        }
    }

    /// The position of `path`: the key's position for a map entry, the
    /// node's for an element; the deepest existing ancestor when the path
    /// runs out of the document.
    pub fn locate(&self, path: &[Seg]) -> Pos {
        let mut node = self;
        let mut pos = self.pos();
        for seg in path {
            match (seg, node) {
                (Seg::Key(k), Node::Map(..)) => match node.entry(k) {
                    Some((_, kpos, v)) => {
                        pos = *kpos;
                        node = v;
                    }
                    None => return pos,
                },
                (Seg::Index(i), Node::Seq(items, _)) => match items.get(*i) {
                    Some(v) => {
                        pos = v.pos();
                        node = v;
                    }
                    None => return pos,
                },
                _ => return pos,
            }
        }
        pos
    }

    pub fn to_json(&self) -> Value {
        match self {
            Node::Null(_) => Value::Null,
            Node::Bool(b, _) => Value::Bool(*b),
            Node::Int(i, _) => Value::Number((*i).into()),
            Node::Float(f, _) => Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Node::Str(s, _) => Value::String(s.clone()),
            Node::Seq(items, _) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries, _, _) => {
                let mut m = Map::new();
                for (k, _, v) in entries {
                    m.insert(k.clone(), v.to_json());
                }
                Value::Object(m)
            }
        }
    }
}

/// YAML 1.2 core-schema resolution of a plain scalar.
fn plain_scalar(s: &str, pos: Pos) -> Node {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Node::Null(pos),
        "true" | "True" | "TRUE" => return Node::Bool(true, pos),
        "false" | "False" | "FALSE" => return Node::Bool(false, pos),
        _ => {}
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && let Ok(i) = s.parse::<i64>()
    {
        return Node::Int(i, pos);
    }
    if let Some(hex) = s.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return Node::Int(i, pos);
    }
    if let Some(oct) = s.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return Node::Int(i, pos);
    }
    let looks_float = digits
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == '.')
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
        && digits.chars().any(|c| c.is_ascii_digit());
    if looks_float && let Ok(f) = s.parse::<f64>() {
        return Node::Float(f, pos);
    }
    match s {
        ".inf" | ".Inf" | ".INF" | "+.inf" => Node::Float(f64::INFINITY, pos),
        "-.inf" | "-.Inf" | "-.INF" => Node::Float(f64::NEG_INFINITY, pos),
        ".nan" | ".NaN" | ".NAN" => Node::Float(f64::NAN, pos),
        _ => Node::Str(s.to_string(), pos),
    }
}

enum Frame {
    /// items, position, anchor, nodes below
    Seq(Vec<Node>, Pos, usize, u64),
    /// entries, key index (→ entry, written explicitly rather than merged),
    /// pending key, position, anchor, nodes below
    Map(
        Vec<(String, Pos, Node)>,
        HashMap<String, (usize, bool)>,
        Option<(String, Pos)>,
        Pos,
        usize,
        u64,
    ),
}

/// The most nodes aliases may produce in one stream (a string weighs one
/// more per 16 bytes): nested aliases ("billion laughs") or a long string
/// aliased many times would otherwise take gigabytes. 10 per byte of text,
/// within 100 000…1 000 000 (about 100 MB however large the file).
pub fn alias_budget(text_len: usize) -> u64 {
    (text_len as u64)
        .saturating_mul(10)
        .clamp(100_000, 1_000_000)
}

/// A scalar's weight in the alias budget.
fn scalar_weight(node: &Node) -> u64 {
    match node {
        Node::Str(s, _) => 1 + s.len() as u64 / 16,
        _ => 1,
    }
}

/// A number JSON (and so every model) cannot carry: a literal past
/// ±1.8e308, or YAML's .inf and .nan. Read as JSON it would be null — a
/// field silently absent — so it is a problem at its position.
fn non_finite(text: &str, node: &Node) -> Option<YamlError> {
    match node {
        Node::Float(f, pos) if !f.is_finite() => Some(YamlError {
            pos: *pos,
            message: if text.trim_start_matches(['-', '+']).starts_with('.') {
                format!("{text}: JSON and Kubernetes have no infinity or NaN")
            } else {
                format!("{text}: number out of range (beyond ±1.8e308)")
            },
        }),
        _ => None,
    }
}

/// YAML's merge key (`<<: *base` or `<<: [*a, *b]`).
const MERGE_KEY: &str = "<<";

/// Merge `from`'s entries into `entries` where their keys are absent.
fn merge_into(
    entries: &mut Vec<(String, Pos, Node)>,
    index: &mut HashMap<String, (usize, bool)>,
    from: Node,
) -> Result<(), YamlError> {
    let bad = |pos: Pos| YamlError {
        pos,
        message: "a merge key (<<) takes a mapping or a list of mappings".into(),
    };
    let maps = match from {
        Node::Map(m, _, _) => vec![m],
        Node::Seq(items, pos) => items
            .into_iter()
            .map(|n| match n {
                Node::Map(m, _, _) => Ok(m),
                other => Err(bad(other.pos().max(pos))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        other => return Err(bad(other.pos())),
    };
    for m in maps {
        for (k, kp, v) in m {
            if !index.contains_key(&k) {
                index.insert(k.clone(), (entries.len(), false));
                entries.push((k, kp, v));
            }
        }
    }
    Ok(())
}

/// What a node finished by an event is: the node, its anchor id (0 for
/// none) and how many nodes it holds (itself included).
type Finished = (Node, usize, u64);

/// A parse under way: the documents so far, the collections still open,
/// the anchors seen and the alias budget left.
struct Builder {
    docs: Vec<Document>,
    stack: Vec<Frame>,
    /// anchor id → (node, nodes in it)
    anchors: HashMap<usize, (Node, u64)>,
    problems: Vec<YamlError>,
    root: Option<Node>,
    budget: u64,
    expanded: u64,
}

/// Parse every document of a YAML stream. A syntax error stops the parse
/// and is returned with its position; so does alias expansion past
/// `alias_budget`.
pub fn parse(text: &str) -> Result<Vec<Document>, YamlError> {
    let mut b = Builder {
        docs: Vec::new(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        problems: Vec::new(),
        root: None,
        budget: alias_budget(text.len()),
        expanded: 0,
    };
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| YamlError {
            pos: Pos {
                line: e.marker().line(),
                column: e.marker().col() + 1,
            },
            message: e.info().to_string(),
        })?;
        let pos = Pos::of(&span);
        let Some((node, anchor, count)) = b.event(event, pos)? else {
            continue;
        };
        b.place(node, anchor, count)?;
    }
    Ok(b.docs)
}

impl Builder {
    /// Take one parser event: open or close a document or collection, or
    /// return the node it finished.
    fn event(&mut self, event: Event<'_>, pos: Pos) -> Result<Option<Finished>, YamlError> {
        Ok(match event {
            Event::StreamStart | Event::StreamEnd | Event::Anchor(..) => None,
            Event::DocumentStart(..) => {
                self.root = None;
                self.problems = Vec::new();
                None
            }
            Event::DocumentEnd => {
                self.docs.push(Document {
                    root: self.root.take().unwrap_or(Node::Null(pos)),
                    index: self.docs.len(),
                    problems: std::mem::take(&mut self.problems),
                });
                None
            }
            Event::Alias(id) => Some(self.alias(id, pos)?),
            Event::UnresolvedAlias(name) => {
                return Err(YamlError {
                    pos,
                    message: format!("alias *{name} refers to no anchor"),
                });
            }
            Event::Scalar(value, style, anchor, tag) => {
                let is_str_tag = tag.as_ref().is_some_and(|t| t.to_string().ends_with("str"));
                let node = if style == ScalarStyle::Plain && !is_str_tag {
                    let node = plain_scalar(&value, pos);
                    self.problems.extend(non_finite(&value, &node));
                    node
                } else {
                    Node::Str(value.into_owned(), pos)
                };
                let weight = scalar_weight(&node);
                Some((node, anchor, weight))
            }
            Event::SequenceStart(_, anchor, _) => {
                self.stack.push(Frame::Seq(Vec::new(), pos, anchor, 0));
                None
            }
            Event::MappingStart(_, anchor, _) => {
                self.stack
                    .push(Frame::Map(Vec::new(), HashMap::new(), None, pos, anchor, 0));
                None
            }
            Event::SequenceEnd => match self.stack.pop() {
                Some(Frame::Seq(items, p, anchor, below)) => {
                    Some((Node::Seq(items, p), anchor, below + 1))
                }
                _ => unreachable!("the parser balances sequence events"),
            },
            Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Map(entries, index, _, p, anchor, below)) => {
                    let index = (entries.len() > 16)
                        .then(|| index.into_iter().map(|(k, (i, _))| (k, i)).collect());
                    Some((Node::Map(entries, p, KeyIndex(index)), anchor, below + 1))
                }
                _ => unreachable!("the parser balances mapping events"),
            },
            #[allow(unreachable_patterns)]
            _ => None,
        })
    }

    /// The node anchor `id` names, charged to the alias budget; an error
    /// past the budget or for an unknown anchor.
    fn alias(&mut self, id: usize, pos: Pos) -> Result<Finished, YamlError> {
        match self.anchors.get(&id) {
            Some((n, count)) => {
                self.expanded = self.expanded.saturating_add(*count);
                if self.expanded > self.budget {
                    return Err(YamlError {
                        pos,
                        message: format!(
                            "aliases expand to more than {} nodes: refusing (an alias bomb?)",
                            self.budget
                        ),
                    });
                }
                Ok((n.clone(), 0, *count))
            }
            None => Err(YamlError {
                pos,
                message: "alias to an unknown anchor".into(),
            }),
        }
    }

    /// Record a finished node under its anchor and put it where it
    /// belongs: the document's root, or the open collection.
    fn place(&mut self, node: Node, anchor: usize, count: u64) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), count));
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq(items, _, _, below)) => {
                *below += count;
                items.push(node);
            }
            Some(Frame::Map(entries, index, pending, _, _, below)) => {
                *below += count;
                match pending.take() {
                    None => {
                        let key = map_key(&node)?;
                        if let Some(&(at, true)) = index.get(&key)
                            && key != MERGE_KEY
                        {
                            let first = entries[at].1;
                            self.problems.push(YamlError {
                                pos: node.pos(),
                                message: format!(
                                    "duplicate key {key:?} (first at line {}, column {})",
                                    first.line, first.column
                                ),
                            });
                        }
                        *pending = Some((key, node.pos()));
                    }
                    Some((key, _)) if key == MERGE_KEY => merge_into(entries, index, node)?,
                    Some((key, kpos)) => match index.get(&key) {
                        // A duplicate key: the later value wins, as in
                        // Kubernetes (and over a merged value).
                        Some(&(at, _)) => {
                            index.insert(key.clone(), (at, true));
                            entries[at] = (key, kpos, node);
                        }
                        None => {
                            index.insert(key.clone(), (entries.len(), true));
                            entries.push((key, kpos, node));
                        }
                    },
                }
            }
        }
        Ok(())
    }
}

/// A mapping key's text; an error for a key that is not a scalar.
fn map_key(node: &Node) -> Result<String, YamlError> {
    Ok(match node {
        Node::Str(s, _) => s.clone(),
        Node::Int(i, _) => i.to_string(),
        Node::Bool(b, _) => b.to_string(),
        Node::Null(_) => "null".into(),
        Node::Float(f, _) => f.to_string(),
        _ => {
            return Err(YamlError {
                pos: node.pos(),
                message: "a mapping key must be a scalar".into(),
            });
        }
    })
}

/// Parse every document of a YAML stream (empty documents are dropped),
/// with the same limits as `parse`.
pub fn documents(text: &str, origin: &str) -> anyhow::Result<Vec<Value>> {
    let docs = parse(text).map_err(|e| {
        let Pos { line, column } = e.pos;
        anyhow::anyhow!("parsing YAML {origin}:{line}:{column}: {}", e.message)
    })?;
    Ok(docs
        .into_iter()
        .map(|d| d.root.to_json())
        .filter(|d| !d.is_null())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_documents_skip_empty() {
        let docs = documents("---\na: 1\n---\n---\nb: 2\n", "test").unwrap();
        assert_eq!(docs.len(), 2);
        assert!(
            documents("a: [", "bad.yaml")
                .unwrap_err()
                .to_string()
                .contains("bad.yaml")
        );
    }

    #[test]
    fn positions_and_values() {
        let docs = parse("a: 1\nb:\n  - x\n  - {c: true, d: 2.5}\ne: ~\nf: \"007\"\n").unwrap();
        assert_eq!(docs.len(), 1);
        let root = &docs[0].root;
        assert_eq!(
            root.to_json(),
            serde_json::json!({"a": 1, "b": ["x", {"c": true, "d": 2.5}], "e": null, "f": "007"})
        );
        let p = root.locate(&[Seg::Key("b".into()), Seg::Index(1), Seg::Key("d".into())]);
        assert_eq!((p.line, p.column), (4, 15));
        // Past the end of the document: the deepest existing node.
        let p = root.locate(&[Seg::Key("b".into()), Seg::Index(9)]);
        assert_eq!(p.line, 2);
    }

    #[test]
    fn documents_and_duplicates() {
        let docs = parse("---\na: 1\na: 2\n---\nb: 1\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].problems.len(), 1);
        assert_eq!(docs[0].problems[0].pos.line, 3);
        assert!(docs[0].problems[0].message.contains("duplicate key \"a\""));
        assert_eq!(docs[0].root.to_json(), serde_json::json!({"a": 2}));
        assert_eq!(docs[1].index, 1);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.pos.line >= 1, "{e:?}");
        let e = parse("a: *nope\n").unwrap_err();
        assert!(
            e.message.contains("nope") || e.message.contains("anchor"),
            "{e:?}"
        );
    }

    #[test]
    fn anchors_expand() {
        let docs = parse("base: &b {x: 1}\nuse: *b\n").unwrap();
        assert_eq!(docs[0].root.to_json()["use"], serde_json::json!({"x": 1}));
    }

    #[test]
    fn an_alias_bomb_is_refused_quickly_and_merge_keys_merge() {
        // 9 levels × 10 aliases: 10^9 nodes if expanded.
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..=9 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let t = std::time::Instant::now();
        let e = parse(&bomb).unwrap_err();
        assert!(e.message.contains("aliases expand"), "{e:?}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
        let docs = parse("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n").unwrap();
        assert_eq!(
            docs[0].root.to_json()["use"],
            serde_json::json!({"x": 1, "y": 3})
        );
        assert!(docs[0].problems.is_empty(), "{:?}", docs[0].problems);
        // A long string aliased many times weighs its bytes; numbers JSON
        // cannot carry are problems, not nulls.
        let long = format!(
            "s: &s {}\nl: [{}]\n",
            "x".repeat(1 << 20),
            ["*s"; 20].join(",")
        );
        assert!(parse(&long).unwrap_err().message.contains("aliases expand"));
        let docs = parse("a: 1e400\nb: .inf\nc: 1e3\n").unwrap();
        let at: Vec<_> = docs[0].problems.iter().map(|p| p.pos.line).collect();
        assert_eq!(at, [1, 2], "{:?}", docs[0].problems);
    }

    #[test]
    fn duplicate_detection_is_linear() {
        let mut big = String::new();
        for i in 0..80_000 {
            big.push_str(&format!("k{i}: {i}\n"));
        }
        big.push_str("k5: again\n");
        let t = std::time::Instant::now();
        let docs = parse(&big).unwrap();
        assert_eq!(docs[0].problems.len(), 1);
        // Quadratic took 33 s here; linear is well under a second even in
        // a debug build.
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn path_strings() {
        assert_eq!(
            path_string(&[
                Seg::Key("spec".into()),
                Seg::Key("containers".into()),
                Seg::Index(0)
            ]),
            "spec.containers[0]"
        );
        assert_eq!(path_string(&[]), "(document)");
    }
}
