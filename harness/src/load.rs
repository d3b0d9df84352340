//! CPU hogs beside a run (`--load N`): N processes that spin until they
//! are dropped, so a run can be measured on a busier machine on demand
//! (the band across machines and loads: `bench::core::across`). While
//! they run their CPU is the rest of the machine's
//! (`metrics::usage::OTHERS`), as another tenant's would be.
//!
//! Each is `sh -c` looping on the `kill -0` builtin against the harness's
//! pid: it spins, and it ends by itself when the harness is gone, however
//! the harness ended (a SIGKILL leaves no hog behind).

use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

use crate::error::bad_input;

/// The most hogs `--load` starts: more than the machine's CPUs measures
/// the scheduler, not a busier machine.
pub fn max_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Err (bad input) unless 1 ≤ `cores` ≤ [`max_cores`]: what a command
/// checks before it builds or starts anything.
pub fn check(cores: u32) -> Result<()> {
    let max = max_cores();
    if cores == 0 || cores > max {
        return Err(bad_input(format!(
            "--load {cores}: between 1 and this machine's {max} CPUs"
        )));
    }
    Ok(())
}

/// Hogs that spin until dropped.
pub struct Load {
    children: Vec<Child>,
}

impl Load {
    /// Start `cores` hogs ([`check`]ed).
    pub fn start(cores: u32) -> Result<Load> {
        check(cores)?;
        let me = std::process::id();
        let mut children = Vec::new();
        for _ in 0..cores {
            let child = Command::new("sh")
                .arg("-c")
                .arg(format!("while kill -0 {me} 2>/dev/null; do :; done"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting a CPU hog (sh) for --load")?;
            children.push(child);
        }
        Ok(Load { children })
    }

    pub fn cores(&self) -> usize {
        self.children.len()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hogs_spin_and_are_gone_when_dropped() {
        assert!(Load::start(0).is_err());
        assert!(Load::start(max_cores() + 1).is_err());
        let l = Load::start(1).unwrap();
        let pid = l.children[0].id();
        // utime (field 14) moves: it spins (on a busy machine it may wait
        // its turn for a core, so it is read until it moves, up to 10 s).
        let utime = move || -> u64 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let field = stat.rsplit_once(") ").unwrap().1.split_whitespace().nth(11);
            field.unwrap().parse().unwrap()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(
            crate::poll::Poll::new("the hog's CPU time", std::time::Duration::from_secs(10))
                .until(|| async { Ok((utime() > 0).then_some(())) }),
        )
        .unwrap();
        drop(l);
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}
