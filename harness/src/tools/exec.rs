//! Running the programs the resolver deals with: finding the Go
//! toolchain, running a command with a time limit, and asking a binary
//! for its version (by its version command, or from its Go build info).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::k8s::K8sRelease;
use crate::tools::buildinfo::BuildInfo;
use crate::tools::component::Component;

/// Find the Go toolchain: `$HARNESS_GO`, else `go` on PATH.
pub fn find_go() -> Option<PathBuf> {
    if let Some(go) = std::env::var_os("HARNESS_GO").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(go));
    }
    which::which("go").ok()
}

/// Start `cmd`, retrying briefly on ETXTBSY: an executable written a moment
/// ago (a download, a build) can still be open for writing in a child that
/// another thread forked and has not yet exec'd.
fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

/// Run `cmd` and wait at most `timeout`; kill it past that.
/// The last `n` lines a finished command printed: its stderr, or its
/// stdout when stderr is empty (for error messages).
pub fn last_lines(out: &std::process::Output, n: usize) -> Vec<String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if err.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout)
    } else {
        err
    };
    let lines = without_go_stacks(&text);
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

/// `text`'s lines less the frames of Go stack traces: a frame is a
/// function line followed by a tab-indented `file:line` line (what
/// `%+v` of a pkg/errors error prints, as kubeadm and kind do on failure),
/// so an error's last lines are its message, not its stack.
pub fn without_go_stacks(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let location = |l: &str| {
        l.strip_prefix('\t')
            .and_then(|l| l.rsplit_once(':'))
            .is_some_and(|(_, line)| line.starts_with(|c: char| c.is_ascii_digit()))
    };
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| !location(l) && !lines.get(i + 1).is_some_and(|next| location(next)))
        .map(|(_, l)| *l)
        .collect()
}

pub fn output_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<std::process::Output> {
    let mut child = spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )?;
    let deadline = Instant::now() + timeout;
    loop {
        if child.try_wait()?.is_some() {
            return Ok(child.wait_with_output()?);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("did not finish within {} s", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The version a binary reports ("1.37.1"), by its version command or, for
/// binaries without one, from its embedded Go build information. What a
/// file reported is remembered under the cache directory, keyed by the
/// file's path, size, inode and modification and change times, so a binary replaced in
/// place is asked again: each ask starts a Go program (0.05–0.1 s), and
/// a local cluster's start asked seven of them (0.45 s of a 5.7 s `up`,
/// measured 2026-11-29).
pub fn probe_version(c: Component, path: &Path) -> Result<String> {
    if !path.is_file() {
        bail!("no such file");
    }
    let memo = memo_path(c, path);
    if let Some(v) = memo
        .as_ref()
        .and_then(|m| std::fs::read_to_string(m).ok())
        .filter(|v| !v.is_empty())
    {
        return Ok(v);
    }
    let v = ask_version(c, path)?;
    if let Some(m) = memo {
        // Best effort: a cache that cannot be written only costs the ask.
        let _ = crate::output::write_atomic(&m, v.as_bytes());
    }
    Ok(v)
}

/// Bumped when what a version reads as changes (2: a Kubernetes
/// pre-release keeps its "-beta.0", `Component::parse_version`), so no
/// binary is judged by what an older harness read.
const MEMO_REVISION: u32 = 2;

/// Where the version of `path` as it is now is remembered.
fn memo_path(c: Component, path: &Path) -> Option<PathBuf> {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let full = std::fs::canonicalize(path).ok()?;
    let m = std::fs::metadata(&full).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (MEMO_REVISION, c.name(), &full, m.len(), m.ino(), m.dev()).hash(&mut h);
    (m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()).hash(&mut h);
    Some(crate::paths::cache_dir().join("versions").join(format!(
        "{}-{:016x}",
        c.name(),
        h.finish()
    )))
}

fn ask_version(c: Component, path: &Path) -> Result<String> {
    let Some(args) = c.version_args() else {
        let info = BuildInfo::read(path)?;
        let source = c.go_source(K8sRelease::default_release());
        let v = info.module_version(source.module).with_context(|| {
            format!(
                "it was not built from {} (its Go build information does not name it)",
                source.module
            )
        })?;
        return Ok(v.trim_start_matches('v').to_string());
    };
    let out = output_with_timeout(Command::new(path).args(args), Duration::from_secs(20))
        .with_context(|| format!("running {} {}", path.display(), args.join(" ")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        bail!(
            "`{} {}` failed ({}): {}",
            path.display(),
            args.join(" "),
            out.status,
            text.trim()
        );
    }
    c.parse_version(&text).with_context(|| {
        format!(
            "`{} {}` printed no version I recognise: {:?}",
            path.display(),
            args.join(" "),
            text.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::tools::exec::without_go_stacks;

    #[test]
    fn go_stack_frames_are_left_out_of_an_error_tail() {
        let text = "[wait-control-plane] Waiting for the kubelet\n\
                    error execution phase wait-control-plane: could not initialize a Kubernetes cluster\n\
                    k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow.(*Runner).Run\n\
                    \tk8s.io/kubernetes@v1.37.1/cmd/kubeadm/app/cmd/phases/workflow/runner.go:234\n\
                    main.main\n\
                    \tk8s.io/kubernetes@v1.37.1/cmd/kubeadm/kubeadm.go:25\n\
                    runtime.goexit\n\
                    \truntime/asm_amd64.s:1771\n\
                    \tnot a location\n";
        assert_eq!(
            without_go_stacks(text),
            vec![
                "[wait-control-plane] Waiting for the kubelet",
                "error execution phase wait-control-plane: could not initialize a Kubernetes cluster",
                "\tnot a location",
            ]
        );
    }
}
