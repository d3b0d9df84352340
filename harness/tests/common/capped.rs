//! Running the built binary the way the hostile corpora do: under an
//! address-space cap (setrlimit(RLIMIT_AS) in the child), killed past a
//! hard limit, with its peak RSS from wait4's rusage.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of the binary did.
pub struct Run {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
    pub max_rss_kib: u64,
}

impl Run {
    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// Run `cmd` with its address space capped at `cap` bytes; SIGKILL it at
/// `hard_limit`.
pub fn run(mut cmd: Command, cap: u64, hard_limit: Duration) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: only setrlimit (async-signal-safe) runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: cap,
                rlim_max: cap,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    // Reaped by wait4 below (std's wait would not give its rusage).
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("spawning the harness binary");
    let pid = child.id() as libc::pid_t;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: wait4 on our own child with valid pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
        if !killed && started.elapsed() > hard_limit {
            // SAFETY: signalling our own, not yet reaped, child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let took = started.elapsed();
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else {
        (None, Some(libc::WTERMSIG(status)))
    };
    Run {
        code,
        signal,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        took,
        max_rss_kib: usage.ru_maxrss as u64,
    }
}

/// What went wrong with a run that should have exited `want` within
/// `bound` saying each of `says`: a panic, an abort out of memory, a
/// signal, a hang, another exit code, a missing message. Empty when it
/// did what it should.
pub fn problems(r: &Run, want: i32, says: &[String], bound: Duration) -> Vec<String> {
    let mut p = Vec::new();
    let text = r.text();
    if text.contains("panicked") || r.code == Some(101) {
        p.push("PANIC".to_string());
    }
    if let Some(sig) = r.signal {
        p.push(format!("killed by signal {sig} (out of memory or hang)"));
    }
    if text.contains("memory allocation of") {
        p.push("OOM: allocation failed".into());
    }
    if r.took > bound {
        p.push(format!(
            "HANG: took {:.2} s, bound {:.2} s",
            r.took.as_secs_f64(),
            bound.as_secs_f64()
        ));
    }
    if r.code != Some(want) {
        p.push(format!("exit {:?}, want {}", r.code, want));
    }
    for s in says {
        if !text.contains(s.as_str()) {
            p.push(format!("does not say {s:?}"));
        }
    }
    p
}
