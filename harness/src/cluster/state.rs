//! The state registry every provider shares: cluster names, the state
//! directory of each cluster (`$HARNESS_STATE_DIR/<name>/`), listing them,
//! and reading the `state.json` whose `provider` field says which provider
//! made a cluster.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::bad_input;

/// 1–40 lower-case letters, digits and inner '-': what may name a cluster
/// (a directory, part of certificate names) and what is derived from one.
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// A cluster name becomes a directory and part of certificate names.
pub fn validate_name(name: &str) -> Result<()> {
    // (Also keeps `.locks`, the lock directory, from looking like a cluster.)
    if is_name(name) {
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
/// racing the first. Released when dropped — the lock file is removed
/// then, so finished runs leave no `.locks/<name>.lock` — or when the
/// process dies (its file is stale then: no holder; the next `lock`,
/// `status` or `down` takes and removes it).
#[derive(Debug)]
pub struct NameLock {
    file: std::fs::File,
    path: PathBuf,
}

impl Drop for NameLock {
    fn drop(&mut self) {
        // Removed while still held: whoever opened the old file before
        // this unlink finds, once it has the lock, that the path is no
        // longer that file and opens it afresh (see `try_lock_path`).
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
            // And the lock directory once it is empty (`lock` makes it
            // again when it is gone under it).
            if let Some(dir) = self.path.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// Whether `path` still names the open `file` (same device and inode).
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The lock directory, `$HARNESS_STATE_DIR/.locks`.
fn locks_dir() -> PathBuf {
    crate::paths::clusters_dir().join(".locks")
}

/// Lock the file at `path`: Ok(Some) held, Ok(None) another process holds
/// it.
fn try_lock_path(path: &Path) -> std::io::Result<Option<NameLock>> {
    loop {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        if file.try_lock().is_err() {
            return Ok(None);
        }
        // The holder we waited on may have removed the file between our
        // open and our lock: then this lock is on a file nobody else will
        // open; start again with the path's current file.
        if same_file(&file, path) {
            return Ok(Some(NameLock {
                file,
                path: path.to_path_buf(),
            }));
        }
    }
}

/// Take the lock of cluster `name` or fail with exit 2 naming it.
pub fn lock(name: &str) -> Result<NameLock> {
    validate_name(name)?;
    let dir = locks_dir();
    let path = dir.join(format!("{name}.lock"));
    let mut tries = 0;
    let held = loop {
        std::fs::create_dir_all(&dir).map_err(|e| state_dir_error(&dir, e))?;
        match try_lock_path(&path) {
            // The directory was removed by a holder that finished between
            // our create and our open: make it again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 10 => tries += 1,
            r => break r.map_err(|e| state_dir_error(&dir, e))?,
        }
    };
    match held {
        Some(l) => Ok(l),
        None => Err(bad_input(format!(
            "cluster {name:?} is being started or stopped by another harness process right now \
             ({} is locked); wait for it, or use another --name",
            path.display()
        ))),
    }
}

/// Remove every lock file no process holds (left by a run that was
/// killed); those held are left alone. Returns how many were removed.
pub fn clean_stale_locks() -> usize {
    let Ok(entries) = std::fs::read_dir(locks_dir()) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_some_and(|x| x == "lock")
            && e.file_type().is_ok_and(|t| t.is_file())
            && let Ok(Some(lock)) = try_lock_path(&path)
        {
            drop(lock);
            removed += 1;
        }
    }
    // The directory itself, once empty.
    let _ = std::fs::remove_dir(locks_dir());
    removed
}

/// A damaged cluster: its state directory and state file exist, but the
/// file cannot be read as a cluster's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    pub name: String,
    pub why: String,
}

/// Processes whose command line names a path under `dir` (a cluster's
/// components: their certificates, data and logs are under its state
/// directory) — how `down` finds the processes of a cluster whose state
/// file is damaged.
pub fn processes_under(dir: &Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut needle = dir.as_os_str().as_encoded_bytes().to_vec();
    needle.push(b'/');
    let me = std::process::id() as i32;
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        // Components run as the leaders of their own process groups.
        // SAFETY: getpgid(2) has no memory-safety preconditions.
        .filter(|&pid| unsafe { libc::getpgid(pid) } == pid)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                c.split(|b| *b == 0).any(|arg| {
                    arg.windows(needle.len()).any(|w| w == needle.as_slice())
                        || arg == &needle[..needle.len() - 1]
                })
            })
        })
        .collect()
}

/// Stop `pids` (and their process groups when they lead one): SIGTERM,
/// then SIGKILL to what still runs after `grace`. Returns the pids that
/// needed SIGKILL.
pub fn stop_pids(pids: &[i32], grace: std::time::Duration) -> Vec<i32> {
    let signal = |pid: i32, sig: i32| {
        // SAFETY: kill(2) has no memory-safety preconditions; a negative
        // pid signals the group it leads (ESRCH when it leads none).
        unsafe {
            libc::kill(-pid, sig);
            libc::kill(pid, sig);
        }
    };
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rfind(')')
                .and_then(|i| s[i + 1..].split_whitespace().next())
                .is_some_and(|st| st != "Z" && st != "X")
        })
    };
    for &p in pids {
        signal(p, libc::SIGTERM);
    }
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline && pids.iter().any(|p| alive(*p)) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stubborn: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    for &p in &stubborn {
        signal(p, libc::SIGKILL);
    }
    stubborn
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

    /// Issue 30: a lock file goes with its holder; one whose holder died
    /// (no holder) is taken over and cleaned.
    #[test]
    fn lock_files_go_with_their_holder() {
        let d = tempfile::tempdir().unwrap();
        let locks = d.path().join(".locks");
        let path = locks.join("x.lock");
        std::fs::create_dir_all(&locks).unwrap();
        let held = try_lock_path(&path).unwrap().unwrap();
        assert!(path.is_file());
        assert!(try_lock_path(&path).unwrap().is_none(), "locked twice");
        drop(held);
        assert!(!path.exists(), "the lock file outlived its holder");
        // The lock directory goes with its last file.
        assert!(!locks.exists());
        // A stale file (its holder died: no lock on it) is taken, and
        // goes with its new holder; another's file is left alone.
        std::fs::create_dir_all(&locks).unwrap();
        std::fs::write(&path, "").unwrap();
        std::fs::write(locks.join("y.lock"), "").unwrap();
        let again = try_lock_path(&path).unwrap().unwrap();
        drop(again);
        assert!(!path.exists());
        assert!(locks.join("y.lock").exists());
    }

    #[test]
    fn processes_under_a_dir_are_found_by_their_command_line() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("data");
        std::fs::write(&f, "").unwrap();
        use std::os::unix::process::CommandExt;
        // Like a component: its own process group, a path under the dir.
        let mut child = std::process::Command::new("tail")
            .arg("-f")
            .arg(&f)
            .process_group(0)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let pid = child.id() as i32;
        let found = processes_under(d.path());
        assert_eq!(found, vec![pid]);
        let other = tempfile::tempdir().unwrap();
        assert!(processes_under(other.path()).is_empty());
        let killed = stop_pids(&found, std::time::Duration::from_secs(5));
        assert!(killed.is_empty(), "needed SIGKILL: {killed:?}");
        child.wait().unwrap();
    }

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
