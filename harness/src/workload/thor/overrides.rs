//! `--set key.path=value` overrides of a scenario document, applied
//! before it is decoded and checked.

use anyhow::Result;
use serde_json::Value;

use crate::error::bad_input;

/// Parse `--set` overrides: `a.b.c=value`, the value read as YAML.
pub fn parse_overrides(items: &[String]) -> Result<Vec<(Vec<String>, Value)>> {
    let mut out = Vec::new();
    for item in items {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| bad_input(format!("--set {item:?}: expected KEY=VALUE")))?;
        let keys: Vec<String> = key.split('.').map(str::to_string).collect();
        if keys.iter().any(|k| k.is_empty()) {
            return Err(bad_input(format!("--set {item:?}: empty key segment")));
        }
        let docs = crate::yaml::parse(value)
            .map_err(|e| bad_input(format!("--set {item:?}: {}", e.message)))?;
        let v = docs
            .first()
            .map(|d| d.root.to_json())
            .unwrap_or(Value::Null);
        if v.is_object() || v.is_array() {
            return Err(bad_input(format!("--set {item:?}: give one scalar value")));
        }
        out.push((keys, v));
    }
    Ok(out)
}

pub fn apply_overrides(v: &Value, overrides: &[(Vec<String>, Value)]) -> Value {
    let mut v = v.clone();
    for (keys, value) in overrides {
        let mut at = &mut v;
        for k in &keys[..keys.len() - 1] {
            if !at.get(k).is_some_and(Value::is_object) {
                at[k.as_str()] = Value::Object(Default::default());
            }
            at = &mut at[k.as_str()];
        }
        at[keys[keys.len() - 1].as_str()] = value.clone();
    }
    v
}
