//! The runs of any benchmark: their order — rounds, each every mode once
//! on fresh clusters, shuffled from a printed seed so the same seed
//! replays the same order — and the Result they fill as each finishes
//! (every mode's summary and ratios recomputed), copied into the out dir
//! after every run so a later failure loses nothing.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::core::report::files::save_progress;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::metrics::timeline::Timeline;

/// The run order of `modes`: `repeat` rounds (at least one), each every
/// mode once, shuffled from `seed` (stats::interleaved).
pub fn schedule<T: Clone>(modes: &[T], repeat: u32, seed: u64) -> Vec<Vec<T>> {
    crate::stats::interleaved(modes, repeat, seed)
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
