//! A machine not seen yet, predicted from the machines seen: the
//! random-effects view of a metric that the workload's pace drives.
//!
//! Such a metric moves from one run to the next on one machine (within:
//! σ_w) and its level moves from one machine to the next (between: σ_b).
//! On the log scale, run j on machine i is y_ij = μ + b_i + e_ij with
//! b_i of variance σ_b² and e_ij of variance σ_w², so the mean of n runs
//! on a machine not seen yet lies around the centre of the k machines
//! seen (the mean of their means) with variance about
//! σ_b² (1 + 1/k) + σ_w² / n.
//!
//! σ_w is measured well (tens of runs); σ_b is not: k machines give k − 1
//! degrees of freedom, and a variance from one or two of them comes out
//! 250 or 20 times too small one time in twenty. So σ_b² is taken at its
//! one-sided 95 % upper bound, (k − 1) ÷ χ²_{k−1}(0.05) times what the
//! machines showed ([`machines_factor`]) — a wide allowance from few
//! machines that narrows as machines are added — and shown two ways, the
//! larger kept:
//! - **its own**: the spread of the metric's machine means, less what its
//!   run-to-run spread puts there;
//! - **pooled** ([`Pooled`]): machine-to-machine variance in proportion
//!   to run-to-run variance (both come from how the machine's timing
//!   meets the workload's), the proportion averaged over every paced
//!   metric the baseline holds: a metric whose few machines happened to
//!   agree still gets the allowance its kind showed.
//!
//! A run set regresses when its mean lies more than z standard deviations
//! of that prediction above the centre, z for a one-sided chance α that
//! any one of the M metrics judged this way falls out on unchanged code
//! ([`family_z`]: Bonferroni, α ÷ M each, whatever their dependence).
//!
//! Assumptions, named: machines are drawn alike from the machines users
//! run on (the baseline's are whatever this project was built on); the
//! logs are roughly normal within and between machines; a machine's load
//! is part of its run-to-run spread. How often the rule is wrong on a
//! machine left out of the band is measured, not assumed
//! (`bench::core::calibrate_across`, the book's table).

use crate::stats::chi2;

/// The one-sided confidence of the upper bound on the machine-to-machine
/// variance.
pub const MACHINE_CONFIDENCE: f64 = 0.95;

/// One metric's runs grouped by machine, on the log scale: what the
/// prediction needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Components {
    /// Machines with at least one run.
    pub k: usize,
    /// Runs in all.
    pub runs: usize,
    /// The mean of the machines' means.
    pub centre: f64,
    /// Pooled run-to-run variance within machines (0 with no machine of
    /// two runs).
    pub within: f64,
    /// The variance of the machines' means (0 for one machine).
    pub between: f64,
    /// The mean over machines of 1 / (its runs): how much of
    /// `between` the run-to-run spread puts there (σ_w² × this).
    pub inv_runs: f64,
}

/// The components of `machines` (each machine's values on the log
/// scale); None without a run.
pub fn components(machines: &[Vec<f64>]) -> Option<Components> {
    let groups: Vec<&Vec<f64>> = machines.iter().filter(|g| !g.is_empty()).collect();
    let k = groups.len();
    if k == 0 {
        return None;
    }
    let mean = |g: &[f64]| g.iter().sum::<f64>() / g.len() as f64;
    let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let centre = mean(&means);
    let runs: usize = groups.iter().map(|g| g.len()).sum();
    let ss: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.iter().map(|y| (y - m).powi(2)).sum::<f64>())
        .sum();
    let within = if runs > k {
        ss / (runs - k) as f64
    } else {
        0.0
    };
    let between = if k > 1 {
        means.iter().map(|m| (m - centre).powi(2)).sum::<f64>() / (k - 1) as f64
    } else {
        0.0
    };
    let inv_runs = groups.iter().map(|g| 1.0 / g.len() as f64).sum::<f64>() / k as f64;
    Some(Components {
        k,
        runs,
        centre,
        within,
        between,
        inv_runs,
    })
}

/// (k − 1) ÷ χ²_{k−1}(1 − [`MACHINE_CONFIDENCE`]): what a variance from k
/// machines is multiplied by for its upper bound (∞ for one machine).
pub fn machines_factor(k: usize) -> f64 {
    if k < 2 {
        return f64::INFINITY;
    }
    let df = (k - 1) as f64;
    df / chi2::quantile(1.0 - MACHINE_CONFIDENCE, df)
}

/// Machine-to-machine variance in proportion to run-to-run variance,
/// over many metrics: the median of their `between ÷ within`, each
/// divided by the median of χ²_{k−1} ÷ (k − 1) — what the ratio of a
/// metric of k machines comes out at half the time when the proportion
/// is 1 — so that the pool says what a typical metric shows, and one
/// whose few values happened to line up (a within near 0) does not set
/// every metric's allowance (a metric whose own machines differ more
/// keeps its own: [`predict`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pooled {
    /// The pooled ratio between ÷ within.
    pub ratio: f64,
    /// The metrics it is the median of.
    pub metrics: usize,
}

/// The ratio pooled over `metrics` with two machines or more and some
/// run-to-run spread; None where there is none.
pub fn pooled<'a>(metrics: impl IntoIterator<Item = &'a Components>) -> Option<Pooled> {
    let ratios: Vec<f64> = metrics
        .into_iter()
        .filter(|c| c.k > 1 && c.within > 0.0)
        .map(|c| {
            let df = (c.k - 1) as f64;
            c.between / c.within / (chi2::quantile(0.5, df) / df)
        })
        .collect();
    (!ratios.is_empty()).then(|| Pooled {
        ratio: crate::stats::median(&ratios),
        metrics: ratios.len(),
    })
}

/// Where the mean of n runs on a machine not seen yet is expected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub centre: f64,
    /// Its standard deviation on the log scale.
    pub sd: f64,
    /// The machine-to-machine variance taken (its upper bound), and
    /// whether the pooled one was the larger.
    pub between: f64,
    pub pooled: bool,
    pub machines: usize,
}

/// The prediction for the mean of `n` runs from `c`, with the pooled
/// ratio `pool` where the baseline has one; None with fewer than two
/// machines (nothing says how far machines differ). `runs_var` is the
/// variance of the n runs' own logs, where there are two or more: a run
/// set noisier than the machines' runs were is judged by its own spread
/// (the larger of the two), as Welch's t would.
pub fn predict(
    c: &Components,
    pool: Option<Pooled>,
    n: usize,
    runs_var: Option<f64>,
) -> Option<Prediction> {
    if c.k < 2 || n == 0 {
        return None;
    }
    let f = machines_factor(c.k);
    let own = (c.between * f - c.within * c.inv_runs).max(0.0);
    let from_pool = pool.map_or(0.0, |p| (p.ratio * f - c.inv_runs).max(0.0) * c.within);
    let between = own.max(from_pool);
    let run = runs_var.map_or(c.within, |v| v.max(c.within));
    let var = between * (1.0 + 1.0 / c.k as f64) + run / n as f64;
    Some(Prediction {
        centre: c.centre,
        sd: var.max(0.0).sqrt(),
        between,
        pooled: from_pool > own,
        machines: c.k,
    })
}

/// z of a one-sided chance `alpha` that any of `metrics` judged alike
/// falls out by chance: the (1 − α ÷ M)-quantile of the normal.
pub fn family_z(alpha: f64, metrics: usize) -> f64 {
    normal_quantile(1.0 - alpha / metrics.max(1) as f64)
}

/// P(Z > z) for a standard normal Z (the complementary error function,
/// Numerical Recipes' erfcc: relative error below 1.2e-7).
pub fn upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.5 * a);
    let poly = -a * a - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    0.5 * if x >= 0.0 { erfc } else { 2.0 - erfc }
}

/// The p-quantile of the standard normal (0 < p < 1), by bisection on
/// [`upper_tail`].
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if 1.0 - upper_tail(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_tails_and_quantiles_match_the_tables() {
        assert!((upper_tail(1.959_964) - 0.025).abs() < 1e-6);
        assert!((upper_tail(-1.0) - 0.841_345).abs() < 1e-6);
        assert!((normal_quantile(0.99) - 2.326_348).abs() < 1e-5);
        assert!((family_z(0.01, 100) - 3.719_016).abs() < 1e-4);
    }

    #[test]
    fn few_machines_widen_the_bound_and_more_narrow_it() {
        // One machine: no bound; two: 254 ×; three: 19.5 ×; ten: 2.7 ×.
        assert!(machines_factor(1).is_infinite());
        assert!((machines_factor(2) - 254.3).abs() < 0.1);
        assert!((machines_factor(3) - 19.50).abs() < 0.01);
        assert!((machines_factor(10) - 2.707).abs() < 0.01);
    }

    #[test]
    fn the_components_of_machines_with_their_runs() {
        let c = components(&[vec![1.0, 3.0], vec![5.0, 7.0, 9.0], vec![]]).unwrap();
        assert_eq!((c.k, c.runs), (2, 5));
        assert!((c.centre - 4.5).abs() < 1e-12);
        // Within: (2 + 8) / 3; between: the means 2 and 7.
        assert!((c.within - 10.0 / 3.0).abs() < 1e-12);
        assert!((c.between - 12.5).abs() < 1e-12);
        assert!((c.inv_runs - (0.5 + 1.0 / 3.0) / 2.0).abs() < 1e-12);
        assert_eq!(components(&[vec![]]), None);
    }

    #[test]
    fn machines_that_agree_still_get_what_their_kind_showed() {
        // Three machines whose means agree exactly: their own between is
        // 0, the pooled ratio (1.0: machines differ as much as runs)
        // gives the allowance.
        let agree = components(&vec![vec![0.0, 0.1, -0.1]; 3]).unwrap();
        assert_eq!(agree.between, 0.0);
        let alone = predict(&agree, None, 1, None).unwrap();
        assert!(!alone.pooled);
        assert!((alone.sd - agree.within.sqrt()).abs() < 1e-12, "{alone:?}");
        let pool = Pooled {
            ratio: 1.0,
            metrics: 40,
        };
        let p = predict(&agree, Some(pool), 1, None).unwrap();
        assert!(p.pooled && p.sd > 3.0 * alone.sd, "{p:?}");
        // More machines that agree as well: a narrower allowance.
        let more = components(&vec![vec![0.0, 0.1, -0.1]; 8]).unwrap();
        let q = predict(&more, Some(pool), 1, None).unwrap();
        assert!(q.sd < p.sd / 2.0, "{q:?} against {p:?}");
        // One machine: no prediction.
        assert_eq!(
            predict(&components(&[vec![0.0, 0.1]]).unwrap(), Some(pool), 1, None),
            None
        );
        // A run set noisier than the machines' runs: its own spread.
        let noisy = predict(&more, Some(pool), 3, Some(0.5)).unwrap();
        assert!(noisy.sd > q.sd * 2.0, "{noisy:?}");
    }
}
