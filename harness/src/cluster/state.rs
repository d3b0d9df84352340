//! The state registry every provider shares: cluster names, the state
//! directory of each cluster (`$HARNESS_STATE_DIR/<name>/`), listing them,
//! and reading the `state.json` whose `provider` field says which provider
//! made a cluster.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::bad_input;

/// A cluster name becomes a directory and part of certificate names.
pub fn validate_name(name: &str) -> Result<()> {
    // (Also keeps `.locks`, the lock directory, from looking like a cluster.)
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

/// The names of every cluster with a state directory and its state file.
pub fn list_clusters() -> Result<Vec<String>> {
    Ok(list_dirs()?
        .into_iter()
        .filter(|n| cluster_dir(n).join("state.json").is_file())
        .collect())
}

/// Every directory in the state dir that could be a cluster's, with or
/// without a state file (a start that died before writing one leaves a
/// half-made directory: `status` shows it, `down` removes it).
pub fn list_dirs() -> Result<Vec<String>> {
    let dir = crate::paths::clusters_dir();
    let mut names = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
        Err(e) => return Err(state_dir_error(&dir, e)),
    };
    for e in entries {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() && validate_name(&name).is_ok() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// A problem with the state directory: exit 3 naming `HARNESS_STATE_DIR`
/// when that variable placed it.
pub fn state_dir_error(dir: &Path, e: std::io::Error) -> anyhow::Error {
    if std::env::var_os("HARNESS_STATE_DIR").is_some_and(|v| !v.is_empty()) {
        crate::error::env_missing(
            format!(
                "HARNESS_STATE_DIR={}: cannot use it for cluster state: {e}",
                dir.display()
            ),
            "point HARNESS_STATE_DIR at a writable directory (or unset it)",
        )
    } else {
        anyhow::Error::new(e).context(format!("using the state directory {}", dir.display()))
    }
}

/// Exclusive ownership of a cluster name while it is started or stopped:
/// a second `up` (or `down`) of the same name fails at once instead of
/// racing the first. Released when dropped (or when the process dies).
#[derive(Debug)]
pub struct NameLock {
    _file: std::fs::File,
}

/// Take the lock of cluster `name` or fail with exit 2 naming it.
pub fn lock(name: &str) -> Result<NameLock> {
    validate_name(name)?;
    let dir = crate::paths::clusters_dir().join(".locks");
    std::fs::create_dir_all(&dir).map_err(|e| state_dir_error(&dir, e))?;
    let path = dir.join(format!("{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| state_dir_error(&dir, e))?;
    match file.try_lock() {
        Ok(()) => Ok(NameLock { _file: file }),
        Err(_) => Err(bad_input(format!(
            "cluster {name:?} is being started or stopped by another harness process right now \
             ({} is locked); wait for it, or use another --name",
            path.display()
        ))),
    }
}

/// The text of a cluster's `state.json`. A missing file is bad input
/// ("no {what} named {name}"), other read errors name the file.
pub fn read_state_file(path: &Path, what: &str, name: &str) -> Result<String> {
    // Through the bounded reader: a FIFO, a device or a huge file in place
    // of state.json is refused at once (damaged state, not a hang).
    match std::fs::symlink_metadata(path) {
        Ok(_) => crate::input::read(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(crate::error::bad_input(format!(
                "no {what} named {name:?} (no {}); `harness status` lists clusters",
                path.display()
            )))
        }
        // Under the state directory (a file where a directory should be,
        // no permission): the environment's problem, naming the variable.
        Err(e) if path.starts_with(crate::paths::clusters_dir()) => {
            Err(state_dir_error(&crate::paths::clusters_dir(), e)
                .context(format!("reading {}", path.display())))
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
