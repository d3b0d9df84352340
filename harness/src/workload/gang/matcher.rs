//! Field paths, value matchers and `${var}` substitution for gang cases.
//!
//! A path is `a.b[0].c`, `status.conditions[type=PodGroupScheduled].status`
//! (the first list element whose `type` is that value) or
//! `metadata.annotations["scheduling.k8s.io/group-template-name"]`.
//! A matcher is a literal (exact JSON equality after substitution) or a map
//! with one `$` key: `$prefix`, `$contains`, `$regex`, `$exists`, `$min`,
//! `$max`, `$not`, `$any`.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
    /// First element of a list whose field equals the value.
    Select(String, String),
}

/// Parse `a.b[0].c[type=X]["k.with/dots"]`.
pub fn parse_path(path: &str) -> Result<Vec<Seg>> {
    let mut segs = Vec::new();
    let b = path.as_bytes();
    let mut i = 0;
    let mut key = String::new();
    let flush = |key: &mut String, segs: &mut Vec<Seg>| {
        if !key.is_empty() {
            segs.push(Seg::Key(std::mem::take(key)));
        }
    };
    while i < b.len() {
        match b[i] {
            b'.' => {
                let after_bracket = i > 0 && b[i - 1] == b']';
                if (key.is_empty() && !after_bracket) || i + 1 == b.len() {
                    bail!("path {path:?}: empty segment at byte {i}");
                }
                flush(&mut key, &mut segs);
                i += 1;
            }
            b'[' => {
                flush(&mut key, &mut segs);
                let close = path[i..]
                    .find(']')
                    .map(|c| c + i)
                    .ok_or_else(|| anyhow::anyhow!("path {path:?}: '[' without ']'"))?;
                let inner = &path[i + 1..close];
                if let Some(q) = inner.strip_prefix('"') {
                    let Some(k) = q.strip_suffix('"') else {
                        bail!("path {path:?}: unterminated quoted key");
                    };
                    segs.push(Seg::Key(k.to_string()));
                } else if let Some((f, v)) = inner.split_once('=') {
                    if f.is_empty() {
                        bail!("path {path:?}: selector [{inner}] has no field");
                    }
                    segs.push(Seg::Select(f.to_string(), v.to_string()));
                } else {
                    let n = inner.parse::<usize>().map_err(|_| {
                        anyhow::anyhow!(
                            "path {path:?}: [{inner}] is neither an index, a \"key\" nor field=value"
                        )
                    })?;
                    segs.push(Seg::Index(n));
                }
                i = close + 1;
            }
            c => {
                key.push(c as char);
                i += 1;
            }
        }
    }
    flush(&mut key, &mut segs);
    if segs.is_empty() {
        bail!("empty path");
    }
    Ok(segs)
}

/// The value at `path`, or None when any step is missing.
pub fn lookup<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut cur = v;
    for s in path {
        cur = match s {
            Seg::Key(k) => cur.get(k)?,
            Seg::Index(i) => cur.get(*i)?,
            Seg::Select(f, want) => cur
                .as_array()?
                .iter()
                .find(|e| e.get(f).is_some_and(|x| scalar_text(x) == *want))?,
        };
    }
    Some(cur)
}

/// A scalar as text (strings unquoted), anything else as JSON.
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Replace `${name}` in every string of `v` with `vars[name]`. An unknown
/// variable is an error naming it.
pub fn substitute(v: &Value, vars: &BTreeMap<String, String>) -> Result<Value> {
    Ok(match v {
        Value::String(s) => Value::String(subst_str(s, vars)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|e| substitute(e, vars))
                .collect::<Result<_>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, e)| Ok((subst_str(k, vars)?, substitute(e, vars)?)))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

pub fn subst_str(s: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            bail!("{s:?}: '${{' without '}}'");
        };
        let name = &after[..end];
        match vars.get(name) {
            Some(val) => out.push_str(val),
            None => bail!(
                "{s:?}: unknown variable ${{{name}}} (known: {})",
                vars.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// What `subst_str` will say of a `${` with no closing `}` in `s`, found
/// before the run (by `harness validate` and the case rules).
pub fn unclosed_ref(s: &str) -> Option<String> {
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => rest = &after[end + 1..],
            None => return Some(format!("{s:?}: '${{' without '}}'")),
        }
    }
    None
}

/// Variables a string refers to.
pub fn var_refs(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        out.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

const OPS: &[&str] = &[
    "$prefix",
    "$contains",
    "$regex",
    "$exists",
    "$min",
    "$max",
    "$not",
    "$any",
];

/// Check a matcher's syntax (before substitution).
pub fn check_matcher(m: &Value) -> Result<()> {
    let Some((op, arg)) = operator(m) else {
        if let Value::Object(o) = m
            && let Some(k) = o.keys().find(|k| k.starts_with('$'))
        {
            bail!(
                "unknown matcher {k:?} (or more than one key beside it); one of {}",
                OPS.join(", ")
            );
        }
        return Ok(());
    };
    match op {
        "$prefix" | "$contains" | "$regex" if !arg.is_string() => {
            bail!("{op} takes a string, got {arg}")
        }
        "$regex" => {
            let s = arg.as_str().unwrap_or_default();
            if var_refs(s).is_empty() {
                regex::Regex::new(s).map_err(|e| anyhow::anyhow!("$regex {s:?}: {e}"))?;
            }
        }
        "$exists" if !arg.is_boolean() => bail!("$exists takes true or false, got {arg}"),
        "$min" | "$max" if !arg.is_number() => bail!("{op} takes a number, got {arg}"),
        "$not" => check_matcher(arg)?,
        "$any" => {
            let Some(list) = arg.as_array() else {
                bail!("$any takes a list of matchers, got {arg}");
            };
            for m in list {
                check_matcher(m)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn operator(m: &Value) -> Option<(&str, &Value)> {
    let o = m.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, v) = o.iter().next()?;
    OPS.contains(&k.as_str()).then_some((k.as_str(), v))
}

/// Does `observed` (None = field absent) satisfy `m` (already substituted)?
pub fn matches(m: &Value, observed: Option<&Value>) -> Result<bool> {
    let Some((op, arg)) = operator(m) else {
        return Ok(observed.is_some_and(|o| literal_eq(m, o)));
    };
    let text = || observed.map(scalar_text);
    let num = || observed.and_then(Value::as_f64);
    Ok(match op {
        "$exists" => observed.is_some_and(|o| !o.is_null()) == arg.as_bool().unwrap_or(true),
        "$prefix" => text().is_some_and(|t| t.starts_with(arg.as_str().unwrap_or_default())),
        "$contains" => text().is_some_and(|t| t.contains(arg.as_str().unwrap_or_default())),
        "$regex" => {
            let re = regex::Regex::new(arg.as_str().unwrap_or_default())
                .map_err(|e| anyhow::anyhow!("$regex {arg}: {e}"))?;
            text().is_some_and(|t| re.is_match(&t))
        }
        "$min" => num().is_some_and(|n| n >= arg.as_f64().unwrap_or(f64::NAN)),
        "$max" => num().is_some_and(|n| n <= arg.as_f64().unwrap_or(f64::NAN)),
        "$not" => !matches(arg, observed)?,
        "$any" => {
            let mut any = false;
            for m in arg.as_array().into_iter().flatten() {
                any |= matches(m, observed)?;
            }
            any
        }
        _ => unreachable!("operator() only returns known operators"),
    })
}

/// Equality where numbers compare by value (4 == 4.0).
fn literal_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| literal_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| literal_eq(v, w)))
        }
        _ => a == b,
    }
}

/// How a matcher reads in a diff: `"x"`, `$prefix "x"`.
pub fn describe(m: &Value) -> String {
    match operator(m) {
        Some((op, arg)) => format!("{op} {arg}"),
        None => m.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_parse() {
        assert_eq!(
            parse_path("a.b[2].c").unwrap(),
            vec![
                Seg::Key("a".into()),
                Seg::Key("b".into()),
                Seg::Index(2),
                Seg::Key("c".into())
            ]
        );
        assert_eq!(
            parse_path("status.conditions[type=X].status").unwrap()[2],
            Seg::Select("type".into(), "X".into())
        );
        assert_eq!(
            parse_path(r#"metadata.annotations["a.b/c"]"#).unwrap()[2],
            Seg::Key("a.b/c".into())
        );
        for bad in ["", "a..b", "a.", ".a", "a[", "a[x]", "a[=1]", r#"a["x]"#] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lookup_follows_keys_indexes_and_selectors() {
        let v = json!({"status": {"conditions": [
            {"type": "A", "status": "False"}, {"type": "B", "status": "True"}]},
            "metadata": {"annotations": {"x.io/y": "z"}}, "n": [1, 2]});
        let at = |p: &str| lookup(&v, &parse_path(p).unwrap()).cloned();
        assert_eq!(at("status.conditions[type=B].status"), Some(json!("True")));
        assert_eq!(at("status.conditions[type=C].status"), None);
        assert_eq!(at(r#"metadata.annotations["x.io/y"]"#), Some(json!("z")));
        assert_eq!(at("n[1]"), Some(json!(2)));
        assert_eq!(at("n[5]"), None);
    }

    #[test]
    fn substitution() {
        let vars = BTreeMap::from([("ns".to_string(), "t1".to_string())]);
        assert_eq!(
            substitute(&json!({"a": ["${ns}-x", 3]}), &vars).unwrap(),
            json!({"a": ["t1-x", 3]})
        );
        let e = subst_str("${nope}", &vars).unwrap_err().to_string();
        assert!(
            e.contains("unknown variable ${nope}") && e.contains("ns"),
            "{e}"
        );
        assert_eq!(var_refs("a ${x} b ${y}"), vec!["x", "y"]);
        assert!(unclosed_ref("${wl-${tpl").is_some());
        assert!(subst_str("${wl-${tpl", &vars).is_err());
        assert_eq!(unclosed_ref("${ns}-x"), None);
    }

    #[test]
    fn matchers() {
        let m = |m: Value, o: Option<Value>| matches(&m, o.as_ref()).unwrap();
        assert!(m(json!(4), Some(json!(4.0))));
        assert!(!m(json!(4), Some(json!(5))));
        assert!(!m(json!("x"), None));
        assert!(m(json!({"basic": {}}), Some(json!({"basic": {}}))));
        assert!(!m(
            json!({"basic": {}}),
            Some(json!({"basic": {}, "gang": {}}))
        ));
        assert!(m(json!({"$prefix": "job-"}), Some(json!("job-abc"))));
        assert!(m(
            json!({"$contains": "parallelism"}),
            Some(json!("cannot change parallelism"))
        ));
        assert!(m(json!({"$regex": "^j-[a-f0-9]+$"}), Some(json!("j-5f69"))));
        assert!(m(json!({"$exists": false}), None));
        assert!(m(json!({"$exists": false}), Some(Value::Null)));
        assert!(!m(json!({"$exists": true}), None));
        assert!(m(json!({"$min": 1}), Some(json!(3))));
        assert!(!m(json!({"$max": 1}), Some(json!(3))));
        assert!(m(json!({"$not": "a"}), Some(json!("b"))));
        assert!(m(
            json!({"$any": ["a", {"$prefix": "b"}]}),
            Some(json!("bc"))
        ));
    }

    #[test]
    fn matcher_syntax_errors() {
        assert!(check_matcher(&json!({"$prefx": "a"})).is_err());
        assert!(check_matcher(&json!({"$regex": "("})).is_err());
        assert!(check_matcher(&json!({"$exists": "yes"})).is_err());
        assert!(check_matcher(&json!({"$any": "a"})).is_err());
        assert!(
            check_matcher(&json!({"$regex": "${x}("})).is_ok(),
            "checked after substitution"
        );
        assert!(check_matcher(&json!({"plain": {"$min": 1}})).is_ok());
    }
}
