//! The disk a run's etcd wrote to, as etcd timed it: the WAL fsync
//! latency of each run's window (`etcd_disk_wal_fsync_duration_seconds`,
//! metrics::figures `etcd_figures`). Every mutating request waits for
//! one, so a slower disk makes slower writes on the same code and the
//! same CPU — what the CPU facts of `crate::machine::Machine` cannot see.
//! A baseline keeps its runs' disk; latencies are judged only on a run
//! whose disk is alike (`gate::machine_gate`). It was added after the CI
//! of 6d0ae74 called the mutating-request p99 ×1.9 higher (confirmed ×1.7)
//! on a machine alike and quiet; the disk is not what explains that: the
//! CI of e68676f had it again (×2.2, confirmed ×2.2) on a disk alike
//! (WAL fsync p99 8.7 ms against 7.3 ms recorded).

use serde::{Deserialize, Serialize};

use crate::bench::core::result::Results;
use crate::bench::core::result::Run;

/// etcd's WAL fsync latency over a set of runs: the median, over the
/// runs, of each run's p50 and p99.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    pub wal_fsync_p50_ms: f64,
    pub wal_fsync_p99_ms: f64,
    /// How many runs measured it.
    pub runs: usize,
}

/// How far apart two disks' figures may be and still be alike: one
/// bucket of etcd's WAL fsync histogram, whose bounds double (1 ms, 2 ms,
/// 4 ms, …; etcd server/storage/wal/metrics.go), so closer than that the
/// histogram cannot tell two disks apart. Thirty recorded smoke runs
/// here (2026-11-27) spread 0.6–0.7 ms at p50 and 5.8–14.0 ms at p99
/// around a median of 7.3 ms: inside one bucket of it.
pub const SLACK: f64 = 2.0;

fn median(v: Vec<f64>) -> f64 {
    crate::stats::median(&v)
}

/// The disk of every run of every mode of `r`; None when no run measured
/// etcd's WAL fsync (a cluster whose etcd the harness cannot read).
pub fn of<R: Run>(r: &Results<R>) -> Option<Disk> {
    let runs: Vec<&R> = r.modes.values().flat_map(|s| s.runs()).collect();
    let measured: Vec<_> = runs
        .iter()
        .filter_map(|m| m.figures().window.etcd.wal_fsync_ms.as_ref())
        .collect();
    (!measured.is_empty()).then(|| Disk {
        wal_fsync_p50_ms: median(measured.iter().map(|p| p.p50).collect()),
        wal_fsync_p99_ms: median(measured.iter().map(|p| p.p99).collect()),
        runs: measured.len(),
    })
}

impl std::fmt::Display for Disk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "etcd's WAL fsync p50 {:.2} ms, p99 {:.1} ms (median of {} runs)",
            self.wal_fsync_p50_ms, self.wal_fsync_p99_ms, self.runs
        )
    }
}

/// None when `run`'s disk is alike `recorded`'s (each figure within a
/// factor [`SLACK`] of the other); otherwise how they differ.
pub fn differs(run: &Disk, recorded: &Disk) -> Option<String> {
    let off =
        |now: f64, then: f64| now > 0.0 && then > 0.0 && (now / then > SLACK || then / now > SLACK);
    (off(run.wal_fsync_p50_ms, recorded.wal_fsync_p50_ms)
        || off(run.wal_fsync_p99_ms, recorded.wal_fsync_p99_ms))
    .then(|| {
        format!(
            "{run}, against {recorded} when the baseline was recorded: more than ×{SLACK} apart"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(p50: f64, p99: f64) -> Disk {
        Disk {
            wal_fsync_p50_ms: p50,
            wal_fsync_p99_ms: p99,
            runs: 3,
        }
    }

    #[test]
    fn disks_within_one_histogram_bucket_are_alike() {
        let recorded = disk(0.64, 7.3);
        assert_eq!(differs(&disk(0.7, 14.0), &recorded), None);
        assert_eq!(differs(&disk(0.4, 4.0), &recorded), None);
        let slow = differs(&disk(0.65, 30.0), &recorded).unwrap();
        assert!(
            slow.contains("p99 30.0 ms") && slow.contains("p99 7.3 ms"),
            "{slow}"
        );
        assert!(differs(&disk(1.5, 7.0), &recorded).is_some());
        assert!(
            differs(&disk(0.64, 3.0), &recorded).is_some(),
            "a faster disk too"
        );
    }
}
