//! Component processes: each runs in its own process group with its output
//! in a log file, so `down` can stop the whole group and Ctrl-C at the
//! terminal reaches only the harness, which then tears down in order.

use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// A started component, as recorded in the cluster's state file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Proc {
    pub name: String,
    pub pid: i32,
    /// Start time in clock ticks since boot (/proc/PID/stat field 22):
    /// guards against acting on a recycled PID.
    pub start_ticks: u64,
    pub log: String,
    pub argv: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    /// Exited (a zombie waiting for its parent counts as exited).
    Exited,
}

/// State, process group and start time from /proc/PID/stat.
fn stat_full(pid: i32) -> Option<(char, i32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm may hold spaces and parentheses: split after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    // Fields 5 (pgrp) and 22 (starttime) overall are indexes 2 and 19 here.
    let pgrp = fields.get(2)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, pgrp, start))
}

fn stat(pid: i32) -> Option<(char, u64)> {
    stat_full(pid).map(|(state, _, start)| (state, start))
}

/// Live (non-zombie) members of process group `pgid`, from /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            matches!(stat_full(pid), Some((state, pgrp, _)) if pgrp == pgid && state != 'Z' && state != 'X')
        })
        .collect()
}

impl Proc {
    pub fn liveness(&self) -> Liveness {
        match stat(self.pid) {
            Some((state, start)) if start == self.start_ticks && state != 'Z' && state != 'X' => {
                Liveness::Running
            }
            _ => Liveness::Exited,
        }
    }

    pub fn is_running(&self) -> bool {
        self.liveness() == Liveness::Running
    }

    /// The leader or any other live member of its process group runs.
    pub fn group_running(&self) -> bool {
        self.is_running() || (self.start_ticks > 0 && !group_members(self.pid).is_empty())
    }

    fn signal_group(&self, sig: i32) {
        if self.group_running() {
            // SAFETY: kill(2) with a negative pid signals the process group
            // this component leads; it has no memory-safety preconditions.
            unsafe {
                libc::kill(-self.pid, sig);
            }
        }
    }
}

/// Start `bin args...` in a new process group, stdout and stderr appended to
/// `log`, stdin closed.
pub fn spawn(
    name: &str,
    bin: &Path,
    args: &[String],
    log: &Path,
    env: &[(&str, String)],
) -> Result<(Proc, Child)> {
    let out: File = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening the log of {name} at {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {name} ({})", bin.display()))?;
    let pid = i32::try_from(child.id()).context("pid out of range")?;
    let start_ticks = stat(pid).map(|(_, s)| s).unwrap_or(0);
    let mut argv = vec![bin.display().to_string()];
    argv.extend(args.iter().cloned());
    Ok((
        Proc {
            name: name.to_string(),
            pid,
            start_ticks,
            log: log.display().to_string(),
            argv,
        },
        child,
    ))
}

/// Stop every process group: SIGTERM to all at once, SIGKILL to what is
/// still running after `grace`. `reap` is called while waiting so that a
/// parent holding `Child` handles can collect its zombies. Returns the names
/// of processes that had to be killed.
pub fn stop_all(procs: &[Proc], grace: Duration, mut reap: impl FnMut()) -> Vec<String> {
    for p in procs.iter().rev() {
        p.signal_group(libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    let mut killed = Vec::new();
    loop {
        reap();
        let running: Vec<&Proc> = procs.iter().filter(|p| p.group_running()).collect();
        if running.is_empty() {
            return killed;
        }
        if Instant::now() > deadline {
            for p in running {
                p.signal_group(libc::SIGKILL);
                killed.push(p.name.clone());
            }
            let hard = Instant::now() + Duration::from_secs(5);
            while procs.iter().any(Proc::group_running) && Instant::now() < hard {
                reap();
                std::thread::sleep(Duration::from_millis(20));
            }
            return killed;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kill every process group at once (SIGKILL) and wait until they are
/// gone (at most 5 s); returns the names of those still running. For a
/// cluster whose state goes with it: nothing of a process's shutdown is
/// kept, while SIGTERM costs the API server and the JobSet controller
/// 1.1 s of graceful shutdown (measured 2026-11-29).
pub fn kill_all(procs: &[Proc], mut reap: impl FnMut()) -> Vec<String> {
    for p in procs {
        p.signal_group(libc::SIGKILL);
    }
    let hard = Instant::now() + Duration::from_secs(5);
    while procs.iter().any(Proc::group_running) && Instant::now() < hard {
        reap();
        std::thread::sleep(Duration::from_millis(5));
    }
    procs
        .iter()
        .filter(|p| p.group_running())
        .map(|p| p.name.clone())
        .collect()
}

pub use crate::logs::tail as log_tail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_track_and_stop_a_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sleep.log");
        // A shell whose child ignores nothing: TERM to the group stops both.
        let (p, mut child) = spawn(
            "sleeper",
            Path::new("/bin/sh"),
            &["-c".into(), "echo started; sleep 300 & wait".into()],
            &log,
            &[],
        )
        .unwrap();
        assert!(p.is_running());
        assert!(p.start_ticks > 0);
        let t = Instant::now();
        while !log_tail(&log, 5).contains("started") && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let killed = stop_all(std::slice::from_ref(&p), Duration::from_secs(5), || {
            let _ = child.try_wait();
        });
        assert!(killed.is_empty(), "TERM was enough");
        assert!(!p.is_running());
        // The group is gone too: no `sleep 300` left with our pgid.
        assert_eq!(
            group_members(p.pid),
            Vec::<i32>::new(),
            "process group still has members"
        );
        assert!(!p.group_running());
        assert!(log_tail(&log, 5).contains("started"));
    }

    /// A shell ignoring SIGTERM (`also` runs in its group first), once its
    /// trap is installed.
    fn ignoring_term(dir: &Path, also: &str) -> (Proc, std::process::Child) {
        let log = dir.join("stubborn.log");
        let (p, child) = spawn(
            "stubborn",
            Path::new("/bin/sh"),
            &[
                "-c".into(),
                format!("trap '' TERM; echo ready; {also} while :; do sleep 0.05; done"),
            ],
            &log,
            &[],
        )
        .unwrap();
        let t = Instant::now();
        while !log_tail(&log, 1).contains("ready") && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        (p, child)
    }

    #[test]
    fn a_process_ignoring_term_is_killed_after_grace() {
        let dir = tempfile::tempdir().unwrap();
        let (p, mut child) = ignoring_term(dir.path(), "");
        let killed = stop_all(std::slice::from_ref(&p), Duration::from_millis(300), || {
            let _ = child.try_wait();
        });
        assert_eq!(killed, vec!["stubborn".to_string()]);
        assert!(!p.is_running());
    }

    #[test]
    fn kill_all_ends_a_group_that_ignores_term_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (p, mut child) = ignoring_term(dir.path(), "sleep 300 &");
        let t = Instant::now();
        let left = kill_all(std::slice::from_ref(&p), || {
            let _ = child.try_wait();
        });
        assert!(left.is_empty(), "still running: {left:?}");
        assert!(!p.group_running(), "the group's `sleep 300` is gone too");
        // No grace period was waited for (a TERM-first stop waits its grace).
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    #[test]
    fn recycled_pid_is_not_ours() {
        let me = std::process::id() as i32;
        let (_, start) = stat(me).unwrap();
        let p = Proc {
            name: "me".into(),
            pid: me,
            start_ticks: start + 1,
            log: String::new(),
            argv: vec![],
        };
        assert_eq!(p.liveness(), Liveness::Exited);
    }
}
