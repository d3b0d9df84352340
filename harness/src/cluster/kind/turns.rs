//! kind clusters are made a few at a time on one machine, across harness
//! processes: one per [`CPUS_PER_CREATE`] CPUs. A `kind create` is
//! `kubeadm init` and `join` bringing a control plane up, CPU-bound for a
//! minute or more; on the 2-core machine three at once beside the
//! contention suite's control planes took twice as long as one at a time
//! each, and two `kubeadm init`s failed (CI of 6d0ae74). The turn is a
//! file lock, so it is given back when the holder ends, however it ends.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::poll::Poll;
use crate::progress::Step;

/// CPUs per `kind create` running at once.
pub const CPUS_PER_CREATE: usize = 4;

/// How long a create waits for its turn: longer than the slowest create
/// of a loaded machine (kubeadm's waits, kind/patches.rs `KUBEADM_WAITS`).
pub const WAIT: Duration = Duration::from_secs(30 * 60);

/// A create's turn, held until dropped.
#[derive(Debug)]
pub struct Turn {
    _lock: File,
}

/// How many creates may run at once with `cpus` CPUs.
pub fn at_once(cpus: usize) -> usize {
    (cpus / CPUS_PER_CREATE).max(1)
}

fn lock_paths(dir: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| dir.join(format!("kind-create-{i}.lock")))
        .collect()
}

/// A free turn now, if there is one.
fn try_take(paths: &[PathBuf]) -> Result<Option<Turn>> {
    for p in paths {
        let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        if f.try_lock().is_ok() {
            return Ok(Some(Turn { _lock: f }));
        }
    }
    Ok(None)
}

/// Wait for a turn to make `cluster`, one of `at_once(cpus)`, its locks
/// under `dir`.
pub async fn take(dir: &Path, cpus: usize, cluster: &str) -> Result<Turn> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let paths = lock_paths(dir, at_once(cpus));
    if let Some(t) = try_take(&paths)? {
        return Ok(t);
    }
    let step = Step::start(format!(
        "waiting to make kind cluster {cluster}: {} kind create(s) at a time on {cpus} CPUs, and as many run",
        paths.len()
    ));
    let turn = Poll::new(format!("a turn to make kind cluster {cluster}"), WAIT)
        .every(Duration::from_secs(1))
        .until(|| async { try_take(&paths) })
        .await?;
    step.done("its turn");
    Ok(turn)
}

/// A turn on this machine: its CPUs, the locks under the harness cache's
/// `locks/` (where the builds' and downloads' are).
pub async fn take_on_this_machine(cluster: &str) -> Result<Turn> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    take(&crate::paths::cache_dir().join("locks"), cpus, cluster).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_create_per_four_cpus_and_at_least_one() {
        assert_eq!(at_once(1), 1);
        assert_eq!(at_once(2), 1);
        assert_eq!(at_once(7), 1);
        assert_eq!(at_once(8), 2);
    }

    #[tokio::test]
    async fn a_second_create_waits_for_the_first_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let first = take(dir.path(), 2, "a").await.unwrap();
        let paths = lock_paths(dir.path(), 1);
        assert!(try_take(&paths).unwrap().is_none(), "two turns at once");
        let second = tokio::spawn({
            let dir = dir.path().to_path_buf();
            async move { take(&dir, 2, "b").await }
        });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!second.is_finished(), "took a turn that was held");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("the turn was not given on")
            .unwrap()
            .unwrap();
    }
}
