//! One way of running an external program to completion: a command line
//! as data (`Cmd`, so tests can check it), run with the engine's
//! environment (tools/engine.rs: DOCKER_HOST), its failure quoting the
//! last lines it printed.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use anyhow::{Context, Result, bail};

use crate::tools::engine;

/// One command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Set for this command, beside the engine's (tools/engine.rs).
    pub env: Vec<(String, String)>,
}

impl Cmd {
    pub fn new(program: &Path, args: &[&str]) -> Cmd {
        Cmd {
            program: program.to_path_buf(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
        }
    }

    /// "kind create cluster --name …", for messages.
    pub fn display(&self) -> String {
        let prog = self
            .program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.program.display().to_string());
        std::iter::once(prog)
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The last `n` lines of a command's stderr (or stdout when stderr is
/// empty), indented, for error messages.
pub fn tail(out: &Output, n: usize) -> String {
    crate::tools::exec::last_lines(out, n)
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The output of a command that exited 0; else an error quoting its
/// last lines.
pub fn check(cmd: &Cmd, out: Output) -> Result<Output> {
    if out.status.success() {
        return Ok(out);
    }
    bail!(
        "`{}` failed ({}):\n{}",
        cmd.display(),
        out.status,
        tail(&out, 20)
    )
}

/// Run to completion (async). The child is killed if the future is
/// dropped, e.g. when Ctrl-C interrupts `up`. Every command gets the
/// engine's environment (tools/engine.rs: DOCKER_HOST).
pub async fn run(cmd: &Cmd) -> Result<Output> {
    let out = output(cmd).await?;
    check(cmd, out)
}

/// Run and return the output whatever the exit status.
pub async fn output(cmd: &Cmd) -> Result<Output> {
    tokio::process::Command::new(&cmd.program)
        .args(&cmd.args)
        .envs(engine::env())
        .envs(cmd.env.iter().cloned())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", cmd.program.display()))
}

/// Run to completion, blocking (for `down`, which is synchronous).
pub fn run_blocking(cmd: &Cmd) -> Result<Output> {
    let out = std::process::Command::new(&cmd.program)
        .args(&cmd.args)
        .envs(engine::env())
        .envs(cmd.env.iter().cloned())
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", cmd.program.display()))?;
    check(cmd, out)
}

/// Output of a command as trimmed text lines.
pub fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}
