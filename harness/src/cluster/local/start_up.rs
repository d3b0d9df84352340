//! Waiting for a local component to come up, and starting it once more
//! when it exited during start-up because etcd did not answer in time.
//! A kubelet restarts a static pod's container that exits; the local
//! provider is the components' supervisor, so it does what the kubelet
//! would, but only for this cause and only once. In the CI of 6110da3 the
//! kubectl suite's kube-apiserver, started while eight suites brought
//! their clusters up on the 2-core machine, exited 30 s in: its
//! `scheduling/bootstrap-system-priority-classes` post-start hook got
//! "etcdserver: request timed out" and is fatal by design
//! (k8s.io/apiserver `pkg/server/hooks.go`, `klog.Fatalf` on a failed
//! hook), and the 28 trials sharing that cluster failed. Any other exit
//! (a bad flag, a missing file) fails at once, naming the component and
//! quoting its log, as before.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};

use crate::cluster::local::components::ComponentDef;
use crate::cluster::local::process::log_tail;
use crate::poll::Poll;

/// How many times a component is started at most.
pub const STARTS: u32 = 2;

/// What an exit on a store that did not answer in time leaves in the log.
const SLOW_STORE: [&str; 2] = ["etcdserver: request timed out", "context deadline exceeded"];

const EXITED: &str = "exited during start-up";

/// Whether a failed wait is an exit during start-up on a slow etcd.
pub fn exited_on_a_slow_store(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}");
    text.contains(EXITED) && SLOW_STORE.iter().any(|w| text.contains(w))
}

/// Say, on stderr and in its log, that `name` is started again (the
/// `started`-th time).
pub fn say_started_again(name: &str, log: &Path, started: u32) {
    let said = format!(
        "{name} {EXITED} because etcd did not answer in time; starting it again ({started} of {STARTS}), as a kubelet would"
    );
    eprintln!("harness: {said}");
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(f, "--- harness: {said} ---");
    }
}

/// Poll component `c`'s health check until it answers; fail early,
/// naming it and quoting its `log`, when `running` says it exited.
pub async fn wait_for(
    c: &ComponentDef,
    log: &Path,
    running: impl Fn() -> bool + Sync,
) -> Result<()> {
    let step = crate::progress::Step::start(format!("waiting for {}", c.name));
    Poll::new(format!("{} ready", c.name), c.timeout)
        .alive(|| {
            if running() {
                return Ok(());
            }
            bail!(
                "{} {EXITED}; last lines of {}:\n{}",
                c.name,
                log.display(),
                log_tail(log, 20)
            )
        })
        .until_ok(|| c.health.check())
        .await
        .map_err(|e| {
            if e.to_string().contains("not reached within") {
                anyhow::anyhow!(
                    "{e:#}; last lines of {}:\n{}",
                    log.display(),
                    log_tail(log, 20)
                )
            } else {
                e
            }
        })?;
    step.done("ready");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;

    #[test]
    fn only_an_exit_on_a_slow_etcd_is_started_again() {
        // The kube-apiserver of the CI of 6110da3.
        let slow = anyhow!(
            "kube-apiserver exited during start-up; last lines of kube-apiserver.log:\n    F1128 09:41:19.890121   18483 hooks.go:203] PostStartHook \"scheduling/bootstrap-system-priority-classes\" failed: unable to add default system priority classes: etcdserver: request timed out"
        );
        assert!(exited_on_a_slow_store(&slow));
        let bad_flag = anyhow!(
            "kube-apiserver exited during start-up; last lines of kube-apiserver.log:\n    Error: unknown flag: --no-such-flag"
        );
        assert!(!exited_on_a_slow_store(&bad_flag));
        // Not an exit: a health check that never answered is not restarted.
        let never =
            anyhow!("kube-apiserver ready: not reached within 60s: context deadline exceeded");
        assert!(!exited_on_a_slow_store(&never));
    }
}
