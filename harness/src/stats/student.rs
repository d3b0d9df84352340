//! Student's t distribution: the two-sided p of a t statistic and the
//! quantiles an interval and a detectable effect need, for any positive
//! degrees of freedom (Welch's are fractional).
//!
//! Through the regularized incomplete beta function: for t with ν degrees
//! of freedom, P(|T| ≥ t) = I_x(ν/2, 1/2) with x = ν / (ν + t²). I_x is
//! evaluated by its continued fraction (modified Lentz), ln Γ by
//! Lanczos' approximation (g = 7, 9 coefficients, about 15 digits).

/// ln Γ(x) for x > 0.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let sum = C
        .iter()
        .enumerate()
        .skip(1)
        .fold(C[0], |s, (i, c)| s + c / (x + i as f64));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of I_x(a, b) (converges fast for
/// x < (a + 1) / (a + b + 2)).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..500 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
fn beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(|T| ≥ |t|) for T with `df` degrees of freedom (df > 0).
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    beta_inc(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// The density of T with `df` degrees of freedom at t.
fn density(t: f64, df: f64) -> f64 {
    let ln_c =
        ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0) - 0.5 * (df * std::f64::consts::PI).ln();
    (ln_c - (df + 1.0) / 2.0 * (1.0 + t * t / df).ln()).exp()
}

/// The q-quantile of T (0.5 < q < 1) with `df` degrees of freedom: the
/// t with P(T ≤ t) = q. Each (q, df) is solved once per thread and kept
/// (up to [`KEPT`] of them): the rule asks for the same few again and
/// again — a paired t's df is n − 1, and a Welch df stays the same when
/// a sample is scaled, as the calibration's shifted draws are.
pub fn quantile(q: f64, df: f64) -> f64 {
    thread_local! {
        static SOLVED: std::cell::RefCell<std::collections::HashMap<(u64, u64), f64>> =
            std::cell::RefCell::default();
    }
    let key = (q.to_bits(), df.to_bits());
    if let Some(t) = SOLVED.with(|m| m.borrow().get(&key).copied()) {
        return t;
    }
    let t = solve(q, df);
    SOLVED.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= KEPT {
            m.clear();
        }
        m.insert(key, t);
    });
    t
}

/// How many solved quantiles a thread keeps.
const KEPT: usize = 4096;

/// [`quantile`], solved: Newton's method on the upper tail inside a
/// bracket that bisection keeps when a step would leave it.
fn solve(q: f64, df: f64) -> f64 {
    let tail = 1.0 - q; // P(T > t), wanted
    let upper = |t: f64| two_sided_p(t, df) / 2.0;
    let (mut lo, mut hi) = (0.0, 1.0);
    while upper(hi) > tail && hi < 1e12 {
        lo = hi;
        hi *= 2.0;
    }
    let mut t = 0.5 * (lo + hi);
    for _ in 0..100 {
        let f = upper(t) - tail; // decreasing in t
        if f > 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let step = f / density(t, df);
        let next = t + step;
        let next = if next > lo && next < hi {
            next
        } else {
            0.5 * (lo + hi)
        };
        if (next - t).abs() <= 1e-13 * t.max(1.0) || hi - lo <= 1e-13 * hi {
            return next;
        }
        t = next;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_printed_tables() {
        // t(0.975) and t(0.80) for 1, 2, 4, 9 and 29 degrees of freedom,
        // and the normal limit.
        for (df, want) in [
            (1.0, 12.706_204),
            (2.0, 4.302_653),
            (4.0, 2.776_445),
            (9.0, 2.262_157),
            (29.0, 2.045_230),
            (1e7, 1.959_964),
        ] {
            let got = quantile(0.975, df);
            assert!((got - want).abs() < 2e-5, "df {df}: {got} vs {want}");
        }
        for (df, want) in [(2.0, 1.060_660), (4.0, 0.940_965), (9.0, 0.883_404)] {
            let got = quantile(0.80, df);
            assert!((got - want).abs() < 2e-5, "df {df}: {got} vs {want}");
        }
        // A fractional df (Welch's) lies between its neighbours.
        let mid = quantile(0.975, 2.5);
        assert!(mid < 4.302_653 && mid > 3.182_446, "{mid}");
    }

    #[test]
    fn two_sided_p_matches_known_values() {
        assert!((two_sided_p(2.0, 10.0) - 0.073_388).abs() < 1e-5);
        assert!((two_sided_p(-2.0, 10.0) - 0.073_388).abs() < 1e-5);
        assert!((two_sided_p(1.0, 1.0) - 0.5).abs() < 1e-9);
        assert_eq!(two_sided_p(0.0, 3.0), 1.0);
        assert_eq!(two_sided_p(f64::INFINITY, 3.0), 0.0);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }
}
