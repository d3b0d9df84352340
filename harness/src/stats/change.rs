//! Where a series of results shifts level: change points over history.

use serde::{Deserialize, Serialize};

use crate::stats::describe::median;
use crate::stats::judge::{Rule, ratio_of};
use crate::stats::order::Prng;

/// The seed of every change point's permutations (the series decides the
/// rest).
pub const SEED: u64 = 0x7468_6f72_2d73_7461; // "thor-sta"

/// How change points are found ([`change_points`]), as reports name it.
pub const CHANGE_POINT_METHOD: &str = "binary segmentation by CUSUM: the split that maximises |Σ(x − mean)| over a segment, kept when a seeded permutation test (999 permutations) gives p < 0.05 and the medians either side differ by more than the metric's minimum effect and noise floor; then each side is searched again. Assumes the points of a segment without a change are exchangeable (independent, alike) and that a change is a shift in level; each point is one result's median; at least 2 points either side of a change";
/// Permutations of each change point's test.
pub const CHANGE_POINT_PERMUTATIONS: usize = 999;
/// The test's level.
pub const CHANGE_POINT_ALPHA: f64 = 0.05;
/// Points either side of a change, at least.
const MIN_SEGMENT: usize = 2;

/// Where a series' level shifts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// The first point of the new level.
    pub index: usize,
    /// Medians of the segment's points before and from `index`.
    pub before: f64,
    pub after: f64,
    /// The permutation test's p-value.
    pub p_value: f64,
}

/// The split of `x` with the largest |CUSUM| (k points before it) and
/// that largest value, with at least MIN_SEGMENT points either side.
fn cusum_split(x: &[f64]) -> Option<(usize, f64)> {
    let n = x.len();
    if n < 2 * MIN_SEGMENT {
        return None;
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let mut s = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for (k, v) in x.iter().enumerate().take(n - MIN_SEGMENT) {
        s += v - mean;
        let at = k + 1;
        if at >= MIN_SEGMENT && best.is_none_or(|(_, b)| s.abs() > b) {
            best = Some((at, s.abs()));
        }
    }
    best
}

/// Change points of `x` in order ([`CHANGE_POINT_METHOD`]).
pub fn change_points(x: &[f64], rule: Rule) -> Vec<ChangePoint> {
    let mut out = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((lo, hi)) = todo.pop() {
        let seg = &x[lo..hi];
        let Some((k, stat)) = cusum_split(seg) else {
            continue;
        };
        if stat == 0.0 {
            continue;
        }
        let mut rng = Prng::new(SEED ^ ((lo as u64) << 32) ^ hi as u64);
        let mut perm = seg.to_vec();
        let mut as_large = 0;
        for _ in 0..CHANGE_POINT_PERMUTATIONS {
            rng.shuffle(&mut perm);
            if cusum_split(&perm).is_some_and(|(_, s)| s >= stat - 1e-9 * stat.abs()) {
                as_large += 1;
            }
        }
        let p_value = (1 + as_large) as f64 / (1 + CHANGE_POINT_PERMUTATIONS) as f64;
        let (before, after) = (median(&seg[..k]), median(&seg[k..]));
        let effect = (ratio_of(after, before) - 1.0).abs();
        if p_value < CHANGE_POINT_ALPHA
            && effect > rule.min_effect
            && (after - before).abs() > rule.floor
        {
            out.push(ChangePoint {
                index: lo + k,
                before,
                after,
                p_value,
            });
            todo.push((lo, lo + k));
            todo.push((lo + k, hi));
        }
    }
    out.sort_by_key(|c| c.index);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::order::synthetic;

    #[test]
    fn a_step_is_found_where_it_is_and_a_flat_noisy_series_has_none() {
        // 6 points at 1000, then 6 at 1150 (+15 %), ±3 % noise.
        let mut x = synthetic(1000.0, 0.03, 6, 31);
        x.extend(synthetic(1150.0, 0.03, 6, 32));
        let cps = change_points(&x, Rule::COUNT);
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 6);
        assert!(cps[0].p_value < 0.01, "{cps:?}");
        assert!(
            (cps[0].after / cps[0].before - 1.15).abs() < 0.05,
            "{cps:?}"
        );
        // Two steps up: both found. (An excursion that returns to its level
        // is CUSUM binary segmentation's blind spot: its whole-series split is
        // not extreme among permutations.)
        let mut y = synthetic(500.0, 0.02, 5, 41);
        y.extend(synthetic(600.0, 0.02, 5, 42));
        y.extend(synthetic(720.0, 0.02, 5, 43));
        let idx: Vec<usize> = change_points(&y, Rule::COUNT)
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(idx, [5, 10]);
        // Flat series with ±10 % noise: in 40 of them, at most a few false
        // change points (the test's level is 5 %).
        let flagged = (0..40)
            .filter(|t| !change_points(&synthetic(800.0, 0.1, 12, 900 + t), Rule::COUNT).is_empty())
            .count();
        assert!(
            flagged <= 4,
            "{flagged} of 40 flat series had a change point"
        );
        // A real step below the minimum effect is not a change point.
        let mut z = synthetic(1000.0, 0.001, 6, 51);
        z.extend(synthetic(1010.0, 0.001, 6, 52));
        assert!(change_points(&z, Rule::COUNT).is_empty());
        // Constant series, and series too short to split.
        assert!(change_points(&[5.0; 10], Rule::COUNT).is_empty());
        assert!(change_points(&[1.0, 9.0, 9.0], Rule::COUNT).is_empty());
    }
}
