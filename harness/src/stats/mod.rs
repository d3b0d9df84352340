//! How sure an answer is: the one rule every benchmark and `--compare`
//! use (the book: docs/src/baselines.md). A metric's runs are
//! summarised by their spread (`describe`); two sets of runs are compared
//! by the ratio B/A with a Student t interval, a p-value, the smallest
//! change the comparison could see and a verdict (`judge`, where the
//! method and its assumptions are named); runs are ordered by seeded
//! shuffles (`order`); a history's level shifts are found by `change`;
//! many metrics judged at once answer "did anything change?" by Holm's
//! rule (`family`); a machine not seen yet is predicted from the machines
//! a baseline holds (`machines`, with `chi2`'s bounds).

mod change;
pub mod chi2;
mod describe;
mod family;
mod judge;
pub mod machines;
mod order;
mod student;

pub use change::{
    CHANGE_POINT_ALPHA, CHANGE_POINT_METHOD, CHANGE_POINT_PERMUTATIONS, ChangePoint, SEED,
    change_points,
};
pub use describe::{Spread, median, quantile_sorted, spread};
pub use family::{FAMILY_ALPHA, Family, holm};
pub use judge::{
    CONFIDENCE, Direction, Judged, Method, POWER, Ratio, Rule, fmt_ratio, judge, pct, verdict,
};
#[cfg(test)]
pub use order::synthetic;
pub use order::{Prng, clock_seed, interleaved};
