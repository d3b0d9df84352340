//! Running the measured command: its own process group (so Ctrl-C, a
//! timeout or an error stops it and everything it started), KUBECONFIG
//! and HARNESS_RUN_ID set, stdout and stderr kept in files. A command
//! that exits non-zero is a result, not an error.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::error::bad_input;

/// What the command came to.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Its exit code; a signal's death reads 128 + the signal.
    pub exit_code: i32,
    pub wall_s: f64,
    /// It ran past the timeout and was stopped.
    pub timed_out: bool,
}

/// Kills a process group when dropped (the command's future dropped by
/// Ctrl-C, or by an error beside it): TERM, a moment, then KILL.
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            stop_group(pgid);
        }
    }
}

fn stop_group(pgid: i32) {
    // SAFETY: killpg only sends a signal to the group we created.
    unsafe {
        libc::killpg(pgid, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline && group_alive(pgid) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// Check before any cluster starts that `argv[0]` can be run.
pub fn check(argv: &[String], path: &std::ffi::OsStr) -> Result<()> {
    let Some(program) = argv.first() else {
        return Err(bad_input(
            "nothing to measure: give a command after `--`, --apply DIR, or two --variant",
        ));
    };
    if program.contains('/') {
        if !Path::new(program).is_file() {
            return Err(bad_input(format!("{program}: no such file")));
        }
    } else if which::which_in(program, Some(path), std::env::current_dir()?).is_err() {
        return Err(bad_input(format!("{program}: not found on PATH")));
    }
    Ok(())
}

/// Run `argv` with `env` added, stdout to `out/stdout.log` and stderr to
/// `out/stderr.log`, for at most `timeout`. Whatever the command left
/// running in its process group when it exits is stopped too.
pub async fn run(
    argv: &[String],
    env: &[(String, String)],
    out: &Path,
    timeout: Duration,
) -> Result<Finished> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let file = |name: &str| -> Result<std::fs::File> {
        let p: PathBuf = out.join(name);
        std::fs::File::create(&p).with_context(|| format!("creating {}", p.display()))
    };
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(file("stdout.log")?)
        .stderr(file("stderr.log")?)
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", argv[0]))?;
    let pgid = child.id().map(|p| p as i32);
    let mut guard = GroupGuard(pgid);
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    let wall_s = started.elapsed().as_secs_f64();
    let (exit_code, timed_out) = match waited {
        Ok(status) => {
            let status = status.with_context(|| format!("waiting for {}", argv[0]))?;
            use std::os::unix::process::ExitStatusExt;
            let code = status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1);
            (code, false)
        }
        Err(_) => (124, true),
    };
    // Leftovers of the group (a backgrounded child) go with it.
    if let Some(pgid) = guard.0.take() {
        tokio::task::spawn_blocking(move || stop_group(pgid))
            .await
            .context("stopping the command's process group")?;
    }
    let _ = child.wait().await;
    Ok(Finished {
        exit_code,
        wall_s,
        timed_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exit_codes_output_and_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let sh = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
        let env = vec![("MEASURE_TEST".to_string(), "x1".to_string())];
        let f = run(
            &sh("echo $MEASURE_TEST; echo err >&2; exit 3"),
            &env,
            dir.path(),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
        assert_eq!((f.exit_code, f.timed_out), (3, false));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("stdout.log")).unwrap(),
            "x1\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("stderr.log")).unwrap(),
            "err\n"
        );
        // A background child left by the command is stopped with it.
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 300 & echo $! > {}; exit 0", pidfile.display());
        let f = run(&sh(&script), &[], dir.path(), Duration::from_secs(20))
            .await
            .unwrap();
        assert_eq!(f.exit_code, 0);
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: signal 0 probes only.
        let alive = unsafe { libc::kill(pid, 0) == 0 }
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "the command's leftover sleep {pid} still runs");
        // Past the timeout: stopped, 124 as timeout(1) says.
        let f = run(&sh("sleep 30"), &[], dir.path(), Duration::from_millis(300))
            .await
            .unwrap();
        assert_eq!((f.exit_code, f.timed_out), (124, true));
        let path = std::env::var_os("PATH").unwrap();
        assert!(check(&["no-such-program-xyz".into()], &path).is_err());
        assert!(check(&[], &path).is_err());
        assert!(check(&["sh".into()], &path).is_ok());
    }
}
