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

use crate::bench::core::report::files::save_progress;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::bench::core::shard::Shard;
use crate::metrics::timeline::Timeline;

/// The run order of `modes`: `repeat` rounds (at least one), each every
/// mode once, shuffled from `seed` (stats::interleaved).
pub fn schedule<T: Clone>(modes: &[T], repeat: u32, seed: u64) -> Vec<Vec<T>> {
    crate::stats::interleaved(modes, repeat, seed)
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

/// `--repeat N`: at least one round, and no more than a result may hold
/// ([`MAX_SET_ROUNDS`](crate::bench::core::result::MAX_SET_ROUNDS)) —
/// every benchmark checks it before anything starts.
pub fn check_repeat(n: u32) -> Result<()> {
    let max = crate::bench::core::result::MAX_SET_ROUNDS;
    if n == 0 {
        return Err(crate::error::bad_input(
            "--repeat 0: must be at least 1 (rounds, each every mode once)",
        ));
    }
    if n as usize > max {
        return Err(crate::error::bad_input(format!(
            "--repeat {n}: at most {max} rounds (a result holds no more)"
        )));
    }
    Ok(())
}

/// Print the order and the seed that replays it.
pub fn announce(rounds: &[Vec<String>], seed: u64) {
    let order: Vec<String> = rounds.iter().map(|r| r.join(", ")).collect();
    eprintln!(
        "run order (seed {seed}; replay with --seed {seed}): {}",
        order.join(" | ")
    );
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
    fn repeat_is_bounded_on_both_sides() {
        check_repeat(1).unwrap();
        check_repeat(100_000).unwrap();
        for bad in [0, 100_001, u32::MAX] {
            let e = check_repeat(bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{e}");
        }
    }

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
}
