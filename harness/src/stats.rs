//! How sure an answer is: the one rule every benchmark and `--compare` use
//! (DESIGN.md "Repeats, intervals, verdicts").
//!
//! - A metric's runs are summarised by their median, min–max and
//!   coefficient of variation ([`Spread`]).
//! - Two sets of runs are compared by the ratio B/A with a 95 % interval
//!   from a **percentile bootstrap** ([`RESAMPLES`] resamples from a seeded
//!   generator, so the same samples always give the same interval):
//!   paired by round ([`paired_ratio`]: the median of the per-round ratios
//!   B_i/A_i, rounds resampled with replacement) when A and B ran in the
//!   same rounds, otherwise unpaired ([`unpaired_ratio`]: the ratio of the
//!   medians, each side resampled on its own). Assumptions: rounds (or
//!   runs) are exchangeable — independent and alike but for the change
//!   under test; nothing is assumed of the distribution. A percentile
//!   bootstrap over few rounds is narrower than its nominal 95 % (with 3
//!   rounds it spans the per-round range): [`FEW_ROUNDS`] marks that.
//! - The verdict ([`verdict`]) is "higher" or "lower" only when the
//!   interval excludes 1 **and** the effect is above the metric's minimum
//!   ([`Rule`]: a relative minimum, e.g. 2 % for counts, and an absolute
//!   noise floor, e.g. 50 ms for API latency); otherwise "no significant
//!   difference". Identical samples give a point interval: a deterministic
//!   count that moved is a difference, one that did not is not.
//! - [`mann_whitney`] gives benchstat's unpaired p-value beside it
//!   (normal approximation with tie correction), for reading only.

use serde::{Deserialize, Serialize};

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 10_000;
/// The seed of every interval's resampling (the samples decide the rest).
pub const SEED: u64 = 0x7468_6f72_2d73_7461; // "thor-sta"
/// Two-sided confidence of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Below this many rounds a bootstrap interval is narrower than its
/// nominal confidence; reports say so.
pub const FEW_ROUNDS: usize = 5;

/// The run order of repeated, interleaved runs: `repeat` rounds (at least
/// one), each every item once in an order shuffled from `seed` — so slow
/// drift of a shared machine falls on every item alike, and the same seed
/// replays the same order.
pub fn interleaved<T: Clone>(items: &[T], repeat: u32, seed: u64) -> Vec<Vec<T>> {
    let mut rng = Prng::new(seed);
    (0..repeat.max(1))
        .map(|_| {
            let mut order = items.to_vec();
            rng.shuffle(&mut order);
            order
        })
        .collect()
}

/// A run-order seed from the clock, the same for the whole process
/// (printed, and kept in the result, so the order can be replayed).
pub fn clock_seed() -> u64 {
    static CLOCK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *CLOCK.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64 % 1_000_000_000)
    })
}

/// A small deterministic generator (SplitMix64): reproducible intervals
/// and run orders without a dependency.
#[derive(Debug, Clone)]
pub struct Prng(u64);

impl Prng {
    pub fn new(seed: u64) -> Self {
        Prng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), without modulo bias worth speaking of
    /// for the small n used here (Lemire's multiply-shift).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The q-quantile (0 ≤ q ≤ 1) of sorted values, linear between order
/// statistics (Hyndman–Fan type 7, as R and numpy default). NaN if empty.
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    match v.len() {
        0 => f64::NAN,
        1 => v[0],
        n => {
            let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            if v[lo] == v[hi] {
                // Also keeps infinities (x/0 ratios) out of inf − inf.
                return v[lo];
            }
            v[lo] + (h - lo as f64) * (v[hi] - v[lo])
        }
    }
}

/// The median (NaN if empty).
pub fn median(xs: &[f64]) -> f64 {
    quantile_sorted(&sorted(xs), 0.5)
}

/// A metric's runs at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation ÷ mean × 100 (0 for one run or a zero
    /// mean).
    pub cv_pct: f64,
}

pub fn spread(xs: &[f64]) -> Spread {
    let v = sorted(xs);
    let n = v.len();
    if n == 0 {
        return Spread {
            n,
            median: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
            mean: f64::NAN,
            cv_pct: 0.0,
        };
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    Spread {
        n,
        median: quantile_sorted(&v, 0.5),
        min: v[0],
        max: v[n - 1],
        mean,
        cv_pct: if mean.abs() > 0.0 {
            var.sqrt() / mean.abs() * 100.0
        } else {
            0.0
        },
    }
}

/// B/A with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// The point estimate: median of the per-round ratios (paired) or the
    /// ratio of the medians (unpaired).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Rounds (paired) or runs of the smaller side (unpaired).
    pub n: usize,
    pub paired: bool,
}

/// The ratio of two values where 0/0 is "the same" (1) and x/0 is
/// unbounded.
fn ratio_of(b: f64, a: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 { 1.0 } else { f64::INFINITY }
    } else {
        b / a
    }
}

fn percentile_interval(mut boots: Vec<f64>) -> (f64, f64) {
    boots.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    (
        quantile_sorted(&boots, tail),
        quantile_sorted(&boots, 1.0 - tail),
    )
}

/// Median of `xs.len()` values picked from `xs` with replacement,
/// reusing `buf`. Each pick is put in its place as it comes (the order
/// of `sort_by(f64::total_cmp)`, the same median to the bit): a
/// bootstrap takes 10,000 of these per metric, of a few values each. In
/// a debug build the generic sort (and its checks) made one Thor compare
/// take 0.83 s; this, 0.56 s.
fn median_of_pick(xs: &[f64], rng: &mut Prng, buf: &mut Vec<f64>) -> f64 {
    buf.clear();
    for _ in 0..xs.len() {
        let x = xs[rng.below(xs.len())];
        let mut at = buf.len();
        buf.push(x);
        while at > 0 && buf[at - 1].total_cmp(&x).is_gt() {
            buf[at] = buf[at - 1];
            at -= 1;
        }
        buf[at] = x;
    }
    quantile_sorted(buf, 0.5)
}

/// B/A paired by round: `a[i]` and `b[i]` ran in round i. None when
/// there are no rounds or the lengths differ.
pub fn paired_ratio(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> Option<Ratio> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let r: Vec<f64> = a.iter().zip(b).map(|(a, b)| ratio_of(*b, *a)).collect();
    let mut rng = Prng::new(seed);
    let mut buf = Vec::with_capacity(r.len());
    let boots = (0..resamples.max(1))
        .map(|_| median_of_pick(&r, &mut rng, &mut buf))
        .collect();
    let (ci_low, ci_high) = percentile_interval(boots);
    Some(Ratio {
        ratio: median(&r),
        ci_low,
        ci_high,
        n: r.len(),
        paired: true,
    })
}

/// B/A unpaired: the ratio of the medians, each side resampled on its
/// own. None when a side is empty.
pub fn unpaired_ratio(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut rng = Prng::new(seed);
    let (mut ba, mut bb) = (Vec::new(), Vec::new());
    let boots = (0..resamples.max(1))
        .map(|_| {
            let ma = median_of_pick(a, &mut rng, &mut ba);
            let mb = median_of_pick(b, &mut rng, &mut bb);
            ratio_of(mb, ma)
        })
        .collect();
    let (ci_low, ci_high) = percentile_interval(boots);
    Some(Ratio {
        ratio: ratio_of(median(b), median(a)),
        ci_low,
        ci_high,
        n: a.len().min(b.len()),
        paired: false,
    })
}

/// The minimum effect a difference must exceed to count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// |ratio − 1| must be above this (0.02: 2 %).
    pub min_effect: f64,
    /// |median B − median A| must be above this, in the metric's unit
    /// (latency noise floors: 50 ms API, 1000 ms pod start-up).
    pub floor: f64,
}

impl Rule {
    /// Counts of requests, writes, bytes: 2 %.
    pub const COUNT: Rule = Rule {
        min_effect: 0.02,
        floor: 0.0,
    };

    /// Latencies and times: 5 % and the metric's noise floor.
    pub const fn latency(floor: f64) -> Rule {
        Rule {
            min_effect: 0.05,
            floor,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    #[serde(rename = "lower")]
    Lower,
    #[serde(rename = "higher")]
    Higher,
    #[serde(rename = "no significant difference")]
    Same,
}

impl Direction {
    pub fn word(self) -> &'static str {
        match self {
            Direction::Lower => "lower",
            Direction::Higher => "higher",
            Direction::Same => "no significant difference",
        }
    }

    /// benchstat's shorthand: the sign of a significant change, else "~".
    pub fn mark(self) -> &'static str {
        match self {
            Direction::Lower => "↓",
            Direction::Higher => "↑",
            Direction::Same => "~",
        }
    }
}

/// The verdict on B against A: a difference only when the interval
/// excludes 1 and both the relative effect and the absolute change of the
/// medians exceed the rule's minimums.
pub fn verdict(r: &Ratio, a_median: f64, b_median: f64, rule: Rule) -> Direction {
    let delta = b_median - a_median;
    if r.ci_low > 1.0 && r.ratio - 1.0 > rule.min_effect && delta > rule.floor {
        Direction::Higher
    } else if r.ci_high < 1.0 && 1.0 - r.ratio > rule.min_effect && -delta > rule.floor {
        Direction::Lower
    } else {
        Direction::Same
    }
}

/// Everything one comparison of two sets of runs says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    #[serde(flatten)]
    pub ratio: Ratio,
    pub verdict: Direction,
    /// Mann–Whitney two-sided p-value (unpaired, for reading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
}

/// Compare B with A by the one rule: paired when `paired` (same rounds),
/// else unpaired. None when a side has no runs. One round has no
/// interval: its verdict is "no significant difference" whatever the
/// ratio.
pub fn judge(a: &[f64], b: &[f64], paired: bool, rule: Rule) -> Option<Judged> {
    let ratio = if paired {
        paired_ratio(a, b, RESAMPLES, SEED)?
    } else {
        unpaired_ratio(a, b, RESAMPLES, SEED)?
    };
    let one_round = paired && ratio.n < 2;
    Some(Judged {
        verdict: match one_round {
            true => Direction::Same,
            false => verdict(&ratio, median(a), median(b), rule),
        },
        ratio,
        p_value: mann_whitney(a, b).map(|m| m.p_value),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of B (the number of pairs where B's value is above A's, ties
    /// counting a half).
    pub u: f64,
    pub p_value: f64,
}

/// Mann–Whitney U, two-sided, by the normal approximation with tie and
/// continuity corrections. None when a side is empty; p = 1 when every
/// value ties.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut u = 0.0;
    for y in b {
        for x in a {
            u += match y.total_cmp(x) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            };
        }
    }
    let n = (n1 + n2) as f64;
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|v| **v == all[i]).count();
        let t = j as f64;
        ties += t * t * t - t;
        i += j;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let mean = f1 * f2 / 2.0;
    let var = f1 * f2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return Some(MannWhitney { u, p_value: 1.0 });
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some(MannWhitney {
        u,
        p_value: (2.0 * (1.0 - normal_cdf(z))).clamp(0.0, 1.0),
    })
}

/// Φ(z) from erf (Abramowitz–Stegun 7.1.26, error < 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    let erf = if x >= 0.0 { erf } else { -erf };
    0.5 * (1.0 + erf)
}

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

/// Samples around `center` with a relative noise of ±`noise`, from a
/// seeded generator: the synthetic runs of the tests here and of the
/// callers' tests.
#[cfg(test)]
pub fn synthetic(center: f64, noise: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Prng::new(seed);
    (0..n)
        .map(|_| {
            let u = rng.next_u64() as f64 / u64::MAX as f64; // [0, 1]
            center * (1.0 + noise * (2.0 * u - 1.0))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_quantiles_and_spread_of_known_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        let s = spread(&[10.0, 12.0, 14.0]);
        assert_eq!(
            (s.n, s.median, s.min, s.max, s.mean),
            (3, 12.0, 10.0, 14.0, 12.0)
        );
        // sd 2, mean 12
        assert!((s.cv_pct - 2.0 / 12.0 * 100.0).abs() < 1e-9, "{s:?}");
        assert_eq!(spread(&[5.0]).cv_pct, 0.0);
        assert_eq!(quantile_sorted(&[0.0, 10.0], 0.25), 2.5);
    }

    #[test]
    fn a_resampled_median_is_the_sorted_picks_median_to_the_bit() {
        // Ties, ±0, infinities (x/0 ratios) and NaNs of either sign: every
        // order `total_cmp` gives.
        let pool = [
            1.0,
            2.0,
            2.0,
            0.1,
            -0.0,
            0.0,
            -3.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            1e300,
        ];
        let mut draw = Prng::new(7);
        let mut buf = Vec::new();
        for n in 1..30 {
            for seed in 0..20 {
                let xs: Vec<f64> = (0..n).map(|_| pool[draw.below(pool.len())]).collect();
                let (mut a, mut b) = (Prng::new(seed), Prng::new(seed));
                let got = median_of_pick(&xs, &mut a, &mut buf);
                let mut picks: Vec<f64> = (0..n).map(|_| xs[b.below(n)]).collect();
                picks.sort_by(f64::total_cmp);
                let want = quantile_sorted(&picks, 0.5);
                assert_eq!(got.to_bits(), want.to_bits(), "{xs:?} seed {seed}");
            }
        }
    }

    #[test]
    fn identical_samples_give_a_point_interval_and_no_difference() {
        let a = [1120.0; 6];
        let j = judge(&a, &a, true, Rule::COUNT).unwrap();
        assert_eq!(
            (j.ratio.ratio, j.ratio.ci_low, j.ratio.ci_high),
            (1.0, 1.0, 1.0)
        );
        assert_eq!(j.verdict, Direction::Same);
        assert_eq!(j.p_value, Some(1.0));
        let j = judge(&a, &a, false, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Same);
        // Zeros on both sides are the same, not NaN.
        let z = judge(&[0.0; 3], &[0.0; 3], true, Rule::COUNT).unwrap();
        assert_eq!((z.ratio.ratio, z.verdict), (1.0, Direction::Same));
    }

    #[test]
    fn a_deterministic_count_that_moved_is_a_difference_either_way() {
        let a = [12.0; 3];
        let j = judge(&a, &[16.0; 3], true, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Higher);
        assert!((j.ratio.ratio - 16.0 / 12.0).abs() < 1e-12);
        let j = judge(&a, &[8.0; 3], true, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Lower);
        // …but not by less than the minimum effect: 1 % of a count.
        let j = judge(&[1000.0; 3], &[1010.0; 3], true, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Same);
    }

    #[test]
    fn a_ten_percent_shift_with_small_noise_is_found_and_sized() {
        // 10 rounds, ±2 % noise on each side.
        let a = synthetic(1000.0, 0.02, 10, 1);
        let b: Vec<f64> = synthetic(1000.0, 0.02, 10, 2)
            .iter()
            .map(|x| x * 1.10)
            .collect();
        for paired in [true, false] {
            let j = judge(&a, &b, paired, Rule::COUNT).unwrap();
            assert_eq!(j.verdict, Direction::Higher, "{j:?}");
            assert!(j.ratio.ci_low > 1.03 && j.ratio.ci_high < 1.17, "{j:?}");
            assert!((j.ratio.ratio - 1.10).abs() < 0.04, "{j:?}");
            assert!(j.p_value.unwrap() < 0.01, "{j:?}");
            // The mirror image is lower.
            let j = judge(&b, &a, paired, Rule::COUNT).unwrap();
            assert_eq!(j.verdict, Direction::Lower, "{j:?}");
        }
        // The same shift under a 15 % minimum effect is not a difference.
        let rule = Rule {
            min_effect: 0.15,
            floor: 0.0,
        };
        assert_eq!(judge(&a, &b, true, rule).unwrap().verdict, Direction::Same);
        // Nor under a noise floor larger than the change (a latency of
        // ~1000 ms shifting 100 ms against a 1 s floor).
        assert_eq!(
            judge(&a, &b, true, Rule::latency(1000.0)).unwrap().verdict,
            Direction::Same
        );
    }

    #[test]
    fn pure_noise_is_no_difference_in_most_trials() {
        // 200 trials of two sets of 10 runs from the same ±20 % noise:
        // a 95 % interval with a 2 % minimum effect should call few of
        // them a difference (measured: 8 of 200 unpaired, 14 of 200
        // paired — a percentile bootstrap over 10 rounds is somewhat
        // narrower than 95 %).
        let mut differences = 0;
        for t in 0..200u64 {
            let a = synthetic(500.0, 0.2, 10, 1000 + t);
            let b = synthetic(500.0, 0.2, 10, 5000 + t);
            let j = judge(&a, &b, false, Rule::COUNT).unwrap();
            if j.verdict != Direction::Same {
                differences += 1;
            }
        }
        assert!(differences <= 16, "{differences} of 200 false differences");
        // Paired, the same.
        let mut differences = 0;
        for t in 0..200u64 {
            let a = synthetic(500.0, 0.2, 10, 9000 + t);
            let b = synthetic(500.0, 0.2, 10, 13000 + t);
            if judge(&a, &b, true, Rule::COUNT).unwrap().verdict != Direction::Same {
                differences += 1;
            }
        }
        assert!(
            differences <= 16,
            "{differences} of 200 false differences (paired)"
        );
    }

    #[test]
    fn pairing_removes_drift_shared_by_a_round() {
        // Each round's machine speed drifts ±30 %; B is 5 % above A in
        // every round. Unpaired the drift hides it, paired it does not.
        let drift = synthetic(1.0, 0.3, 8, 42);
        let a: Vec<f64> = drift.iter().map(|d| 100.0 * d).collect();
        let b: Vec<f64> = drift.iter().map(|d| 105.0 * d).collect();
        let p = judge(&a, &b, true, Rule::COUNT).unwrap();
        assert_eq!(p.verdict, Direction::Higher, "{p:?}");
        assert!((p.ratio.ci_low - 1.05).abs() < 1e-9 && (p.ratio.ci_high - 1.05).abs() < 1e-9);
        let u = judge(&a, &b, false, Rule::COUNT).unwrap();
        assert_eq!(u.verdict, Direction::Same, "{u:?}");
    }

    #[test]
    fn the_interval_is_reproducible_and_the_order_shuffle_is_seeded() {
        let a = synthetic(10.0, 0.3, 7, 3);
        let b = synthetic(11.0, 0.3, 7, 4);
        assert_eq!(paired_ratio(&a, &b, 2000, 9), paired_ratio(&a, &b, 2000, 9));
        let mut x: Vec<u32> = (0..10).collect();
        let mut y = x.clone();
        Prng::new(5).shuffle(&mut x);
        Prng::new(5).shuffle(&mut y);
        assert_eq!(x, y);
        let mut z: Vec<u32> = (0..10).collect();
        Prng::new(6).shuffle(&mut z);
        assert_ne!(x, z);
        let mut sorted_x = x.clone();
        sorted_x.sort();
        assert_eq!(sorted_x, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn mann_whitney_matches_known_values() {
        // Fully separated 5 vs 5: U = 25, normal-approximation p ≈ 0.012.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let m = mann_whitney(&a, &b).unwrap();
        assert_eq!(m.u, 25.0);
        assert!((m.p_value - 0.0122).abs() < 0.001, "{m:?}");
        // Interleaved: U = 15 of 25, p ≈ 0.68.
        let m = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(m.p_value > 0.6, "{m:?}");
        assert!(mann_whitney(&[], &b).is_none());
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
    }

    #[test]
    fn too_few_or_mismatched_rounds_give_no_interval() {
        assert!(paired_ratio(&[1.0, 2.0], &[1.0], 10, 1).is_none());
        assert!(unpaired_ratio(&[], &[1.0], 10, 1).is_none());
        let r = paired_ratio(&[0.0], &[3.0], 10, 1).unwrap();
        assert!(r.ratio.is_infinite());
        assert_eq!(
            verdict(&r, 0.0, 3.0, Rule::COUNT),
            Direction::Higher,
            "from none to some is higher"
        );
        // …but one round is no interval: no verdict from it.
        let j = judge(&[100.0], &[300.0], true, Rule::COUNT).unwrap();
        assert_eq!((j.ratio.ratio, j.verdict), (3.0, Direction::Same));
        let j = judge(&[100.0; 2], &[300.0; 2], true, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Higher);
    }

    #[test]
    fn a_ten_percent_shift_with_small_noise_is_found_with_three_rounds_too() {
        // Few rounds: the paired interval spans the per-round ratios, all
        // above 1 here, so the shift is still "higher".
        let a = synthetic(1000.0, 0.01, 3, 21);
        let b: Vec<f64> = synthetic(1000.0, 0.01, 3, 22)
            .iter()
            .map(|x| x * 1.10)
            .collect();
        let j = judge(&a, &b, true, Rule::COUNT).unwrap();
        assert_eq!(j.verdict, Direction::Higher, "{j:?}");
        assert!(j.ratio.ci_low > 1.05 && j.ratio.ci_high < 1.15, "{j:?}");
        // Pure latency noise of ±40 % around 40 ms: under the 50 ms floor,
        // never a difference, whatever the interval says.
        for t in 0..50 {
            let a = synthetic(40.0, 0.4, 5, 300 + t);
            let b = synthetic(40.0, 0.4, 5, 700 + t);
            let j = judge(&a, &b, true, Rule::latency(50.0)).unwrap();
            assert_eq!(j.verdict, Direction::Same, "{t}: {j:?}");
        }
    }

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
