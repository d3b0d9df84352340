//! A metric's runs at a glance: median, quantiles, min–max, mean and
//! coefficient of variation.

use serde::{Deserialize, Serialize};

/// The values without NaNs, sorted. (`total_cmp` orders equal values
/// only when their bits are equal, so an unstable sort gives what a
/// stable one would, with less work: `report calibrate` sorts millions
/// of small samples.)
pub(crate) fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = without_nan(xs);
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// A copy of the values, NaNs left out.
fn without_nan(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.retain(|x| !x.is_nan());
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
            between(v[lo], v[hi], h - lo as f64)
        }
    }
}

/// `lo + frac × (hi − lo)`, the value at an order statistic itself when
/// `frac` is 0 or both are equal: that also keeps infinities (x/0
/// ratios) out of inf − inf and 0 × inf.
fn between(lo: f64, hi: f64, frac: f64) -> f64 {
    if frac == 0.0 || lo == hi {
        return lo;
    }
    lo + frac * (hi - lo)
}

/// The median (NaN if empty): [`quantile_sorted`] at 0.5 of the sorted
/// values, found by selection rather than a sort.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = without_nan(xs);
    let n = v.len();
    if n < 2 {
        return v.first().copied().unwrap_or(f64::NAN);
    }
    let (_, lo, above) = v.select_nth_unstable_by((n - 1) / 2, f64::total_cmp);
    let lo = *lo;
    if n % 2 == 1 {
        return lo;
    }
    let hi = above.iter().copied().min_by(f64::total_cmp).unwrap_or(lo);
    between(lo, hi, 0.5)
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
    fn the_selected_median_is_the_sorted_one() {
        let mut rng = crate::stats::order::Prng::new(7);
        let pool = [0.0, -0.0, 1.0, 2.5, 2.5, -3.0, 1e9, f64::INFINITY, f64::NAN];
        for n in 0..40 {
            let xs: Vec<f64> = (0..n).map(|_| pool[rng.below(pool.len())]).collect();
            let want = quantile_sorted(&sorted(&xs), 0.5);
            let got = median(&xs);
            assert!(
                got == want || (got.is_nan() && want.is_nan()),
                "{xs:?}: {got} against {want}"
            );
        }
        // The middle value of an odd count, whatever lies above it (an
        // infinity beside it once made 0 × inf, NaN).
        assert_eq!(median(&[1.0, 2.0, f64::INFINITY]), 2.0);
        assert_eq!(quantile_sorted(&[1.0, 2.0, f64::INFINITY], 0.5), 2.0);
        assert_eq!(median(&[1.0, f64::INFINITY]), f64::INFINITY);
    }
}
