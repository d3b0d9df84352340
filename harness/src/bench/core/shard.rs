//! A shard of a run set (`--shard K/N`): which of the seed's rounds one
//! machine runs, so the union of the shards is the run set one run with
//! that seed makes.

use anyhow::Result;
use serde::{Deserialize, Serialize};

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

    /// The rounds (0-based, of `total`) this shard runs; none for a shard
    /// that is not one (k = 0, n = 0 or k > n: a result read back is
    /// checked before, `Statistics::check`).
    pub fn rounds(&self, total: usize) -> std::ops::Range<usize> {
        if self.k == 0 || self.k > self.n {
            return 0..0;
        }
        let (n, k) = (self.n as usize, self.k as usize - 1);
        let (base, extra) = (total / n, total % n);
        let start = k * base + k.min(extra);
        let len = base + usize::from(k < extra);
        start..start + len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
