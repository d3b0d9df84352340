//! The chi-square distribution's lower quantiles: how small a sample
//! variance with ν degrees of freedom can come out by chance, which
//! bounds the true variance from above (a variance estimated from few
//! machines is itself very uncertain: `stats::machines`).
//!
//! Through the regularized lower incomplete gamma function
//! P(a, x) = γ(a, x) / Γ(a), with χ²_ν's distribution function
//! F(x) = P(ν/2, x/2): its power series below a + 1, its continued
//! fraction (modified Lentz) above.

use crate::stats::student::ln_gamma;

/// P(a, x) for a > 0, x ≥ 0.
fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let front = (a * x.ln() - x - ln_gamma(a)).exp();
    if x < a + 1.0 {
        // Σ x^n / (a (a+1) … (a+n)).
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (front * sum).clamp(0.0, 1.0)
    } else {
        // Q(a, x) by its continued fraction; P = 1 − Q.
        const TINY: f64 = 1e-300;
        let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / guard(b);
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = 1.0 / guard(an * d + b);
            c = guard(b + an / c);
            let step = d * c;
            h *= step;
            if (step - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (1.0 - front * h).clamp(0.0, 1.0)
    }
}

/// P(χ²_ν ≤ x).
pub fn cdf(x: f64, df: f64) -> f64 {
    gamma_p(df / 2.0, x / 2.0)
}

/// The p-quantile of χ²_ν (0 < p < 1): the x with P(χ²_ν ≤ x) = p, by
/// bisection (the distribution function is increasing).
pub fn quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, df.max(1.0));
    while cdf(hi, df) < p {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-14 * hi.max(1e-300) {
            break;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_printed_tables() {
        // χ²(0.05) and χ²(0.95) for 1, 2, 3, 4, 9 and 29 degrees of freedom.
        for (df, lo, hi) in [
            (1.0, 0.003_932, 3.841_459),
            (2.0, 0.102_587, 5.991_465),
            (3.0, 0.351_846, 7.814_728),
            (4.0, 0.710_723, 9.487_729),
            (9.0, 3.325_113, 16.918_978),
            (29.0, 17.708_366, 42.556_968),
        ] {
            let (a, b) = (quantile(0.05, df), quantile(0.95, df));
            assert!((a - lo).abs() < 1e-5 * lo.max(1.0), "df {df}: {a} vs {lo}");
            assert!((b - hi).abs() < 1e-5 * hi, "df {df}: {b} vs {hi}");
        }
        assert!((cdf(2.0, 2.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert_eq!(cdf(0.0, 3.0), 0.0);
    }
}
