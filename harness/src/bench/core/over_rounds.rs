//! One metric over the rounds of a benchmark that is not Thor's (`bench
//! gang`, `bench cron`): its value in each round, their spread, and —
//! against a reference run set of the same rounds — the ratio with its
//! 95 % interval and the verdict, by the one rule of `stats` (paired by
//! round: the runs of a round ran back to back on fresh clusters).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::stats::{self, Judged, Rule, Spread};

/// A metric's rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRounds {
    pub metric: String,
    /// One value per round, in round order.
    pub samples: Vec<f64>,
    pub spread: Spread,
    /// Against the reference's samples of the same rounds; None for the
    /// reference itself, or where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_reference: Option<Judged>,
}

/// `samples` of `metric`, judged against `reference` (same rounds) by
/// `rule` when given.
pub fn metric(
    metric: &str,
    samples: Vec<f64>,
    reference: Option<&[f64]>,
    rule: Rule,
) -> MetricRounds {
    MetricRounds {
        metric: metric.to_string(),
        spread: stats::spread(&samples),
        vs_reference: reference.and_then(|r| stats::judge(r, &samples, true, rule)),
        samples,
    }
}

/// The rows' Markdown table: each row's label cells (`head` names them),
/// then median, min–max, CV and, where judged, the ratio to `reference`
/// with its interval and the verdict.
pub fn table(head: &[&str], rows: &[(Vec<String>, &MetricRounds)], reference: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| {} | median | min–max | CV % | ÷ {reference} [95 % CI] | verdict |",
        head.join(" | ")
    );
    let _ = writeln!(s, "|{}---:|---:|---:|---:|---|", "---|".repeat(head.len()));
    for (labels, m) in rows {
        let sp = &m.spread;
        let (ratio, verdict) = match &m.vs_reference {
            Some(j) => (
                format!(
                    "{} [{}–{}]",
                    stats::fmt_ratio(j.ratio.ratio),
                    stats::fmt_ratio(j.ratio.ci_low),
                    stats::fmt_ratio(j.ratio.ci_high)
                ),
                j.marked(),
            ),
            None => ("—".into(), "—".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}–{} | {:.1} | {ratio} | {verdict} |",
            labels.join(" | "),
            num(sp.median),
            num(sp.min),
            num(sp.max),
            sp.cv_pct
        );
    }
    s
}

fn num(v: f64) -> String {
    match v.abs() >= 100.0 {
        true => format!("{v:.0}"),
        false => format!("{v:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Direction;

    #[test]
    fn a_shift_beyond_the_noise_is_called_and_noise_is_not() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        let b = [120.0, 121.0, 119.0, 122.0, 118.0];
        let m = metric("requests", b.to_vec(), Some(&a), Rule::COUNT);
        assert_eq!(m.spread.n, 5);
        assert_eq!(m.spread.median, 120.0);
        let j = m.vs_reference.unwrap();
        assert_eq!(j.verdict, Direction::Higher);
        assert!(j.ratio.ci_low > 1.1, "{j:?}");
        // Noise is not: another five rounds of the same ±2 % around 100.
        let again = [99.0, 101.5, 100.5, 98.5, 102.0];
        let same = metric("requests", again.to_vec(), Some(&a), Rule::COUNT);
        let j = same.vs_reference.unwrap();
        assert_eq!(j.verdict, Direction::Same, "{j:?}");
        assert!(j.ratio.ci_low < 1.0 && j.ratio.ci_high > 1.0, "{j:?}");
        let alone = metric("requests", a.to_vec(), None, Rule::COUNT);
        assert!(alone.vs_reference.is_none());
        let t = table(
            &["version", "metric"],
            &[
                (vec!["1.36".into(), "requests".into()], &alone),
                (vec!["1.37".into(), "requests".into()], &m),
            ],
            "1.36",
        );
        assert!(t.contains("| 1.36 | requests | 100 | 98.00–102 |"), "{t}");
        assert!(t.contains("↑ +20.0 % (p<0.001 n=5)"), "{t}");
        assert!(t.contains("÷ 1.36 [95 % CI]"), "{t}");
        assert_eq!(t.lines().nth(1), Some("|---|---|---:|---:|---:|---:|---|"));
    }
}
