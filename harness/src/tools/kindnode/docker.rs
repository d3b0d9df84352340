//! The `docker` commands the kind node image build runs (blocking: the
//! build runs on a blocking thread), with the engine's environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context, Result, bail};

use crate::error::env_missing;
use crate::tools::engine;

/// The docker client on PATH.
pub fn docker() -> Result<PathBuf> {
    which::which("docker").map_err(|_| {
        env_missing(
            "building kind node images needs the docker client on PATH",
            "install Docker (as root on Debian, `bash ci/ensure-docker.sh` installs docker.io and starts a private engine)",
        )
    })
}

fn command(docker: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(docker);
    c.args(args).envs(engine::env());
    c
}

fn describe(args: &[&str]) -> String {
    let shown: Vec<&str> = args.iter().take(6).copied().collect();
    format!(
        "docker {}{}",
        shown.join(" "),
        if args.len() > 6 { " …" } else { "" }
    )
}

fn check(args: &[&str], out: Output) -> Result<Output> {
    if out.status.success() {
        return Ok(out);
    }
    bail!(
        "`{}` failed ({}):\n{}",
        describe(args),
        out.status,
        crate::tools::exec::last_lines(&out, 25).join("\n")
    )
}

/// Run; Err with the tail of what it printed when it fails.
pub fn run(docker: &Path, args: &[&str]) -> Result<Output> {
    let out = command(docker, args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", describe(args)))?;
    check(args, out)
}

/// Whether the command succeeds (its output thrown away).
pub fn succeeds(docker: &Path, args: &[&str]) -> bool {
    command(docker, args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Trimmed standard output.
pub fn stdout(docker: &Path, args: &[&str]) -> Result<String> {
    Ok(String::from_utf8_lossy(&run(docker, args)?.stdout)
        .trim()
        .to_string())
}

/// The engine answers `docker info`; Err (exit 3) saying which engine was
/// tried and how to get one.
pub fn check_engine(docker: &Path) -> Result<String> {
    let e = engine::engine();
    match stdout(docker, &["info", "--format", "{{.ServerVersion}}"]) {
        Ok(v) => Ok(v),
        Err(err) => Err(env_missing(
            format!(
                "no Docker engine answers ({}{}): {err:#}",
                e.how,
                e.host
                    .as_deref()
                    .map(|h| format!(", {h}"))
                    .unwrap_or_default()
            ),
            "start one: as root on Debian `bash ci/ensure-docker.sh` installs docker.io and starts a private engine the harness finds by itself; elsewhere Docker Engine or Docker Desktop",
        )),
    }
}

/// An image with this reference is in the engine.
pub fn has_image(docker: &Path, reference: &str) -> bool {
    succeeds(
        docker,
        &["image", "inspect", "--format", "{{.Id}}", reference],
    )
}
