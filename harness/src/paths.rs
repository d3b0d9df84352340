//! Where the harness keeps its cache (binaries, Go build trees) and its
//! per-cluster state. Both can be moved with environment variables.

use std::path::PathBuf;

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn non_empty_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$HARNESS_CACHE_DIR`, else `$XDG_CACHE_HOME/harness`, else `~/.cache/harness`.
pub fn cache_dir() -> PathBuf {
    non_empty_env("HARNESS_CACHE_DIR").unwrap_or_else(|| {
        non_empty_env("XDG_CACHE_HOME")
            .unwrap_or_else(|| home().join(".cache"))
            .join("harness")
    })
}

/// `$HARNESS_STATE_DIR`, else `$XDG_STATE_HOME/harness/clusters`,
/// else `~/.local/state/harness/clusters`. One sub-directory per cluster.
pub fn clusters_dir() -> PathBuf {
    let dir = non_empty_env("HARNESS_STATE_DIR").unwrap_or_else(|| {
        non_empty_env("XDG_STATE_HOME")
            .unwrap_or_else(|| home().join(".local/state"))
            .join("harness/clusters")
    });
    // A relative directory would resolve differently for every component
    // started in its own working directory.
    if dir.is_relative() {
        std::env::current_dir()
            .map(|cwd| cwd.join(&dir))
            .unwrap_or(dir)
    } else {
        dir
    }
}

/// The repository root: the nearest ancestor of `start` with Cargo.toml
/// and manifests/ (where `validate`, baselines and the kind configs live).
pub fn repo_root(start: &std::path::Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("Cargo.toml").is_file() && d.join("manifests").is_dir())
        .map(std::path::Path::to_path_buf)
}
