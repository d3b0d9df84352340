//! Reading upstream files (JobSet CRDs and webhooks, kwok stages) from the
//! Go module cache, so nothing upstream is copied into this repository.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::error::env_missing;
use crate::tools::exec::{find_go, output_with_timeout};

/// The module cache: `$GOMODCACHE`, else `$GOPATH/pkg/mod`, else `~/go/pkg/mod`.
pub fn gomodcache() -> PathBuf {
    if let Some(d) = std::env::var_os("GOMODCACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(gopath) = std::env::var_os("GOPATH").filter(|v| !v.is_empty()) {
        let first = std::env::split_paths(&gopath).next().unwrap_or_default();
        return first.join("pkg/mod");
    }
    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join("go/pkg/mod")
}

/// Module paths are stored with upper-case letters escaped as `!lower`.
pub fn escape_module_path(module: &str) -> String {
    let mut out = String::with_capacity(module.len());
    for ch in module.chars() {
        if ch.is_ascii_uppercase() {
            out.push('!');
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// The extracted source of `module@version` (version with its leading v):
/// from the module cache, downloading it with `go mod download` when absent.
pub fn module_dir(module: &str, version: &str) -> Result<PathBuf> {
    let dir = gomodcache().join(format!("{}@{version}", escape_module_path(module)));
    if dir.join("go.mod").is_file() {
        return Ok(dir);
    }
    let Some(go) = find_go() else {
        return Err(env_missing(
            format!(
                "the source of {module}@{version} is not in the Go module cache ({}) and there is no Go toolchain to download it",
                dir.display()
            ),
            "install Go (its module cache holds the upstream manifests the harness applies), or set GOMODCACHE to a module cache that holds it",
        ));
    };
    let info = go_mod_download(&go, module, version)?;
    let dir = info
        .get("Dir")
        .and_then(|d| d.as_str())
        .map(PathBuf::from)
        .context("go mod download -json printed no Dir")?;
    Ok(dir)
}

/// `go mod download -json module@version` (outside any module): the JSON
/// object it prints, with its Error turned into an exit-3 error.
/// A module that asks for a newer Go than the machine's is downloaded
/// again with the toolchain pinned for that Go (tools/toolchain.rs).
pub fn go_mod_download(go: &Path, module: &str, version: &str) -> Result<serde_json::Value> {
    match download_with(go, module, version, "local") {
        Err(e) => {
            let wanted = crate::tools::toolchain::required_by_refusal(&format!("{e:#}"));
            match wanted.and_then(crate::tools::toolchain::pinned) {
                Some(toolchain) => download_with(go, module, version, toolchain),
                None => Err(e),
            }
        }
        ok => ok,
    }
}

fn download_with(
    go: &Path,
    module: &str,
    version: &str,
    toolchain: &str,
) -> Result<serde_json::Value> {
    let tmp = tempfile::tempdir()?;
    let out = output_with_timeout(
        Command::new(go)
            .current_dir(tmp.path())
            .env("GOTOOLCHAIN", toolchain)
            .env("GOFLAGS", "-mod=mod")
            .args(["mod", "download", "-json", &format!("{module}@{version}")]),
        Duration::from_secs(600),
    )
    .with_context(|| format!("go mod download {module}@{version}"))?;
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "go mod download {module}@{version} printed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(err) = info.get("Error").and_then(|e| e.as_str()) {
        return Err(env_missing(
            format!("go mod download {module}@{version} failed: {err}"),
            "make the Go module proxy reachable (GOPROXY) or pre-fill the module cache (GOMODCACHE)",
        ));
    }
    Ok(info)
}

/// Read a file of a module's source tree, naming both in errors.
pub fn read_module_file(dir: &Path, rel: &str) -> Result<String> {
    let path = dir.join(rel);
    std::fs::read_to_string(&path)
        .with_context(|| format!("reading upstream file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_upper_case() {
        assert_eq!(
            escape_module_path("github.com/Azure/go-x"),
            "github.com/!azure/go-x"
        );
        assert_eq!(
            escape_module_path("sigs.k8s.io/jobset"),
            "sigs.k8s.io/jobset"
        );
    }
}
