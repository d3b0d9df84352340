//! The speed probe: a fixed piece of CPU work, timed. It is what a run
//! records as its machine's speed at the moment it starts
//! (`harness::machine::speed`), so that machines of one CPU model but
//! different speeds are told apart, and a band measured across machines
//! can be read against speed rather than a model's name.
//!
//! The work is the kind a control plane's Go processes spend their time
//! on: dependent loads through a table larger than a core's first-level
//! caches (a random cycle through 1 MiB, as maps and pointers are
//! walked), integer arithmetic and a data-dependent branch on each step. It is timed in three parts and the median kept, so one
//! preemption does not set the figure; whatever else the machine is
//! doing at that moment slows it, as it slows the run.
//!
//! This crate is built optimised in every profile (the workspace's
//! Cargo.toml), so a `cargo test` (dev) build and a release build score
//! alike; [`VERSION`] changes whenever the work does, and scores of two
//! versions are not compared.

use std::time::Instant;

/// The version of the work; a score says which it measured.
pub const VERSION: u32 = 2;

/// Table entries: 2^18 × 4 bytes = 1 MiB.
const TABLE: usize = 1 << 18;
/// Steps through the table in each timed part.
const STEPS: u32 = 2_000_000;
/// Timed parts; the fastest is the score.
const PARTS: usize = 7;

/// What one probe measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Millions of steps per second (the fastest part's).
    pub msteps_per_s: f64,
    /// Wall time of the whole probe, table included (seconds).
    pub seconds: f64,
}

/// xorshift64*: the probe's own deterministic numbers.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// A single cycle through every entry (Sattolo's shuffle), the same on
/// every machine.
fn table() -> Vec<u32> {
    let mut t: Vec<u32> = (0..TABLE as u32).collect();
    let mut s = 0x9e37_79b9_7f4a_7c15_u64;
    for i in (1..TABLE).rev() {
        let j = (next(&mut s) % i as u64) as usize;
        t.swap(i, j);
    }
    t
}

/// `steps` dependent steps from entry `start`: the entry reached and a
/// checksum the work cannot be optimised away from.
fn walk(t: &[u32], start: u32, steps: u32) -> (u32, u64) {
    let mut at = start;
    let mut sum = 0u64;
    for k in 0..steps {
        at = t[at as usize];
        sum = sum.rotate_left(5) ^ u64::from(at).wrapping_mul(0x9e37_79b9);
        if sum & 1 == 0 {
            sum = sum.wrapping_add(u64::from(k));
        } else {
            sum ^= u64::from(at) << 7;
        }
    }
    (at, sum)
}

/// Run the probe once (about a tenth of a second on a 2026 server core,
/// idle).
pub fn run() -> Score {
    let began = Instant::now();
    let t = table();
    let mut parts = [0.0f64; PARTS];
    let mut at = 0u32;
    let mut check = 0u64;
    for p in &mut parts {
        let t0 = Instant::now();
        let (next_at, sum) = walk(&t, at, std::hint::black_box(STEPS));
        *p = t0.elapsed().as_secs_f64();
        at = next_at;
        check ^= sum;
    }
    std::hint::black_box(check);
    let fastest = parts
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(1e-9);
    Score {
        msteps_per_s: f64::from(STEPS) / fastest / 1e6,
        seconds: began.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_one_cycle_through_every_entry() {
        let t = table();
        let (mut at, mut seen) = (0u32, 0usize);
        loop {
            at = t[at as usize];
            seen += 1;
            if at == 0 {
                break;
            }
            assert!(seen <= TABLE, "not a single cycle");
        }
        assert_eq!(seen, TABLE);
    }

    #[test]
    fn the_work_is_the_same_on_every_machine() {
        // The walk's checksum is a property of the work, not the machine.
        let t = table();
        assert_eq!(walk(&t, 0, 1000), walk(&t, 0, 1000));
        assert_ne!(walk(&t, 0, 1000), walk(&t, 1, 1000));
    }

    #[test]
    fn a_score_is_positive_and_finite() {
        let s = run();
        assert!(s.msteps_per_s.is_finite() && s.msteps_per_s > 0.0, "{s:?}");
        assert!(s.seconds > 0.0, "{s:?}");
    }
}
