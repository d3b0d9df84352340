//! The runs of any benchmark: their order — rounds, each every mode once
//! on fresh clusters, shuffled from a printed seed so the same seed
//! replays the same order — the shard of them one machine runs
//! (`--shard K/N`: rounds split by the seed's order, so the union of the
//! shards is the run set one run with that seed makes), and the Result
//! they fill as each finishes (every mode's summary and ratios
//! recomputed), copied into the out dir after every run so a later
//! failure loses nothing.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::bench::core::report::files::save_progress;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::metrics::timeline::Timeline;

/// The run order of `modes`: `repeat` rounds (at least one), each every
/// mode once, shuffled from `seed` (stats::interleaved).
pub fn schedule<T: Clone>(modes: &[T], repeat: u32, seed: u64) -> Vec<Vec<T>> {
    crate::stats::interleaved(modes, repeat, seed)
}

/// `--shard K/N`: the K-th of N contiguous slices of a run set's rounds,
/// in the seed's order (their sizes differ by one at most, the larger
/// first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based.
    pub k: u32,
    pub n: u32,
}

impl Shard {
    /// "K/N", 1 ≤ K ≤ N; bad input naming the flag otherwise. "index/N"
    /// takes K from an Indexed Job's pod (`JOB_COMPLETION_INDEX` + 1).
    pub fn parse(s: &str) -> Result<Shard> {
        let bad = || {
            crate::error::bad_input(format!(
                "--shard {s:?}: expected K/N, 1 ≤ K ≤ N (the K-th of N slices of the rounds)"
            ))
        };
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let from_index;
        let k = match k.trim() {
            "index" => {
                let i: u32 = std::env::var("JOB_COMPLETION_INDEX")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| {
                        crate::error::bad_input(
                            "--shard index/N: JOB_COMPLETION_INDEX is not set (an Indexed Job's pod has it)",
                        )
                    })?;
                from_index = (i + 1).to_string();
                from_index.as_str()
            }
            k => k,
        };
        let (k, n): (u32, u32) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }

    /// Checked against the run set: every shard gets a round, and the
    /// order comes from a seed every shard is given.
    pub fn check(&self, repeat: u32, seed: Option<u64>) -> Result<()> {
        if self.n > repeat {
            return Err(crate::error::bad_input(format!(
                "--shard {}/{}: {} shards of {repeat} rounds (--repeat) leave some empty",
                self.k, self.n, self.n
            )));
        }
        if seed.is_none() {
            return Err(crate::error::bad_input(
                "--shard needs --seed: every shard orders the rounds from the same seed",
            ));
        }
        Ok(())
    }

    /// The rounds (0-based, of `total`) this shard runs.
    pub fn rounds(&self, total: usize) -> std::ops::Range<usize> {
        let (n, k) = (self.n as usize, self.k as usize - 1);
        let (base, extra) = (total / n, total % n);
        let start = k * base + k.min(extra);
        let len = base + usize::from(k < extra);
        start..start + len
    }
}

/// The rounds a run set (or one shard of it) runs: the whole order from
/// `seed`, and of it the rounds `shard` takes (all without one), with
/// their 0-based index in the whole.
pub fn plan<T: Clone>(
    modes: &[T],
    repeat: u32,
    seed: u64,
    shard: Option<Shard>,
) -> Vec<(usize, Vec<T>)> {
    let all = schedule(modes, repeat, seed);
    let take = shard.map_or(0..all.len(), |s| s.rounds(all.len()));
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| take.contains(i))
        .collect()
}

/// Print the order and the seed that replays it.
pub fn announce(rounds: &[Vec<String>], seed: u64) {
    let order: Vec<String> = rounds.iter().map(|r| r.join(", ")).collect();
    eprintln!(
        "run order (seed {seed}; replay with --seed {seed}): {}",
        order.join(" | ")
    );
}

/// The time a Result starts at: now, RFC 3339.
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The Result being filled, run by run.
pub struct Progress<R: Run> {
    pub result: Results<R>,
    out: Option<PathBuf>,
}

impl<R: Run> Progress<R> {
    /// No run yet; the Result is saved into `out` (when given) after each.
    pub fn new(result: Results<R>, out: Option<&Path>) -> Progress<R> {
        Progress {
            result,
            out: out.map(Path::to_path_buf),
        }
    }

    /// A finished run of `mode` in round `round`: its figures into its
    /// mode's summary (every ratio recomputed), its timeline beside them,
    /// and the Result so far saved.
    pub fn add(&mut self, mode: &str, round: usize, r: R, timeline: Timeline) -> Result<()> {
        self.result
            .timelines
            .push((mode.to_string(), round, timeline));
        self.result.add_run(mode, r);
        if let Some(out) = &self.out {
            save_progress(&self.result, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_of_a_run_set_make_exactly_its_order() {
        let modes = ["baseline", "jobset", "jobset-gang"];
        let whole = plan(&modes, 4, 42, None);
        let one = plan(&modes, 4, 42, Some(Shard::parse("1/2").unwrap()));
        let two = plan(&modes, 4, 42, Some(Shard::parse("2/2").unwrap()));
        assert_eq!(one.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(two.iter().map(|r| r.0).collect::<Vec<_>>(), [2, 3]);
        let joined: Vec<_> = one.into_iter().chain(two).collect();
        assert_eq!(joined, whole);
        // Uneven: 7 rounds in 3 shards are 3, 2, 2, and together all 7.
        let sizes: Vec<usize> = (1..=3).map(|k| Shard { k, n: 3 }.rounds(7).len()).collect();
        assert_eq!(sizes, [3, 2, 2]);
        let covered: Vec<usize> = (1..=3).flat_map(|k| Shard { k, n: 3 }.rounds(7)).collect();
        assert_eq!(covered, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn a_shard_is_checked_before_anything_runs() {
        for bad in ["0/2", "3/2", "1", "a/b", "1/0", ""] {
            let e = Shard::parse(bad).unwrap_err();
            assert_eq!(
                crate::error::exit_code(&e),
                crate::error::EXIT_USAGE,
                "{bad}"
            );
        }
        let s = Shard::parse("2/4").unwrap();
        assert!(s.check(3, Some(1)).is_err(), "4 shards of 3 rounds");
        assert!(s.check(4, None).is_err(), "no seed");
        assert!(s.check(4, Some(1)).is_ok());
    }
}
