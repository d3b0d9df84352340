//! A metric's runs at a glance: median, quantiles, min–max, mean and
//! coefficient of variation.

use serde::{Deserialize, Serialize};

pub(crate) fn sorted(xs: &[f64]) -> Vec<f64> {
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
}
