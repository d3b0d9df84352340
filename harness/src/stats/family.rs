//! Many metrics judged at once. Each metric's verdict holds its false
//! alarms to about 5 % (the calibration table measures how close), so a
//! comparison that judges 50 metrics of unchanged code calls one of them
//! different now and then. The family-wise answer — "did anything
//! change?" — is Holm's step-down rule over the metrics' p-values: the
//! k-th smallest p (of m) is kept while p ≤ α ÷ (m − k + 1); a metric
//! differs family-wise when Holm keeps it **and** its own verdict is a
//! difference (past the minimum effect and floor). Holm holds the chance
//! of any false verdict in the family to α whatever the metrics'
//! dependence (Holm 1979, "A simple sequentially rejective multiple test
//! procedure"), at the cost of power on each: a count that moved
//! deterministically (p = 0) is always kept.

use crate::stats::judge::{CONFIDENCE, Direction, Judged};

/// The family-wise error rate Holm's rule holds to: the same 5 % each
/// interval leaves out.
pub const FAMILY_ALPHA: f64 = 1.0 - CONFIDENCE;

/// What a family of verdicts says as a whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Family {
    /// Metrics with a p-value (the family's size m).
    pub judged: usize,
    /// Metrics that differ family-wise, smallest p first.
    pub differ: Vec<String>,
    /// Metrics whose own verdict is a difference that Holm does not
    /// keep: a real change, or one of the false alarms a family of this
    /// size brings — at few rounds the comparison cannot tell.
    pub not_kept: Vec<String>,
}

/// Holm's rule over `(metric, judged)` pairs.
pub fn holm<'a>(judged: impl IntoIterator<Item = (&'a str, &'a Judged)>) -> Family {
    let mut with_p: Vec<(&str, &Judged, f64)> = judged
        .into_iter()
        .filter_map(|(m, j)| j.p_value.filter(|p| p.is_finite()).map(|p| (m, j, p)))
        .collect();
    with_p.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(b.0)));
    let m = with_p.len();
    let mut family = Family {
        judged: m,
        ..Family::default()
    };
    let mut stepping = true;
    for (k, (metric, j, p)) in with_p.into_iter().enumerate() {
        stepping = stepping && p <= FAMILY_ALPHA / (m - k) as f64;
        let differs = j.verdict != Direction::Same;
        match (stepping, differs) {
            (true, true) => family.differ.push(metric.to_string()),
            (false, true) => family.not_kept.push(metric.to_string()),
            _ => {}
        }
    }
    family
}

impl Family {
    /// One sentence for a report.
    pub fn sentence(&self) -> String {
        let list = |v: &[String]| {
            v.iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!(
            "Family-wise (Holm over the {} metrics with a p-value, {:.0} %): ",
            self.judged,
            FAMILY_ALPHA * 100.0
        );
        if self.differ.is_empty() {
            s.push_str("no metric differs");
        } else {
            s.push_str(&format!(
                "{} differ: {}",
                self.differ.len(),
                list(&self.differ)
            ));
        }
        if !self.not_kept.is_empty() {
            s.push_str(&format!(
                "; different on their own but not kept family-wise (their p is above Holm's threshold for a family this size: a real change or one of the false alarms many metrics judged at once bring — this comparison cannot tell which): {}",
                list(&self.not_kept)
            ));
        }
        s.push('.');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::judge::{Method, Ratio};

    fn j(p: f64, verdict: Direction) -> Judged {
        Judged {
            ratio: Ratio {
                ratio: 1.1,
                ci_low: 1.01,
                ci_high: 1.2,
                n: 3,
                paired: true,
            },
            verdict,
            p_value: Some(p),
            method: Some(Method::PairedTLog),
            detectable: None,
        }
    }

    #[test]
    fn holm_steps_down_and_stops_at_the_first_p_it_does_not_keep() {
        use Direction::{Higher, Same};
        // m = 5: thresholds 0.01, 0.0125, 0.0167, 0.025, 0.05.
        let js = [
            ("moved", j(0.0, Higher)),
            ("second", j(0.011, Higher)),
            ("third", j(0.03, Higher)),
            ("quiet", j(0.3, Same)),
            ("last", j(0.001, Higher)),
        ];
        let f = holm(js.iter().map(|(m, j)| (*m, j)));
        assert_eq!(f.judged, 5);
        assert_eq!(f.differ, ["moved", "last", "second"]);
        // Fourth smallest: 0.03 > 0.05 / 2, not kept, nor anything after it.
        assert_eq!(f.not_kept, ["third"]);
        // A p Holm keeps whose own verdict is "same" (below the minimum
        // effect) is no difference.
        let f = holm([("tiny", &j(0.0, Same))]);
        assert!(f.differ.is_empty() && f.not_kept.is_empty());
        assert!(
            f.sentence().contains("Holm over the 1 metrics"),
            "{}",
            f.sentence()
        );
        assert!(f.sentence().contains("no metric differs"));
    }

    #[test]
    fn one_false_alarm_in_fifty_is_not_kept() {
        // 49 quiet metrics and one at p = 0.03: alone a difference, in a
        // family of 50 a false alarm Holm does not keep (0.03 > 0.001).
        let quiet = j(0.5, Direction::Same);
        let alarm = j(0.03, Direction::Higher);
        let names: Vec<String> = (0..49).map(|i| format!("m{i}")).collect();
        let f = holm(
            names
                .iter()
                .map(|n| (n.as_str(), &quiet))
                .chain([("alarm", &alarm)]),
        );
        assert_eq!(f.judged, 50);
        assert!(f.differ.is_empty());
        assert_eq!(f.not_kept, ["alarm"]);
        assert!(f.sentence().contains("not kept family-wise"));
    }

    #[test]
    fn metrics_without_a_p_value_are_not_in_the_family() {
        let mut none = j(0.0, Direction::Higher);
        none.p_value = None;
        let f = holm([
            ("no-interval", &none),
            ("moved", &j(0.0, Direction::Higher)),
        ]);
        assert_eq!((f.judged, f.differ.len()), (1, 1));
    }
}
