//! The state registry every provider shares: cluster names, the state
//! directory of each cluster (`$HARNESS_STATE_DIR/<name>/`), listing them,
//! and reading the `state.json` whose `provider` field says which provider
//! made a cluster.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::bad_input;

/// A cluster name becomes a directory and part of certificate names.
pub fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(bad_input(format!(
            "invalid cluster name {name:?}: use 1–40 lower-case letters, digits and '-', not starting or ending with '-'"
        )))
    }
}

/// The state directory of cluster `name`.
pub fn cluster_dir(name: &str) -> PathBuf {
    crate::paths::clusters_dir().join(name)
}

/// The names of every cluster with a state directory.
pub fn list_clusters() -> Result<Vec<String>> {
    let dir = crate::paths::clusters_dir();
    let mut names = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    for e in entries {
        let e = e?;
        if e.path().join("state.json").is_file() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// The text of a cluster's `state.json`. A missing file is bad input
/// ("no {what} named {name}"), other read errors name the file.
pub fn read_state_file(path: &Path, what: &str, name: &str) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(crate::error::bad_input(format!(
                "no {what} named {name:?} (no {}); `harness status` lists clusters",
                path.display()
            )))
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
    }
}

/// The provider recorded in a cluster's state file.
pub fn provider_of(name: &str) -> Result<String> {
    validate_name(name)?;
    let path = cluster_dir(name).join("state.json");
    let text = read_state_file(&path, "cluster", name)?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a cluster state file", path.display()))?;
    v.get("provider")
        .and_then(|p| p.as_str())
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("{}: no \"provider\" field", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        validate_name("dev").unwrap();
        validate_name("gang-1-37").unwrap();
        for bad in ["", "Dev", "a_b", "-x", "x-", "a/b", &"x".repeat(41)] {
            let e = validate_name(bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad}");
        }
    }
}
