//! The clients behind a total that moved. When a mode's API requests
//! differ from the reference mode's, the report says which clients made
//! the difference: each client whose own requests differ on their own
//! (`figures::BY_CLIENT`, judged past its floor), with its share of the
//! total's change and its own interval, largest first, and what the
//! other clients add up to.
//!
//! The shares are of the mean change a run: a run's total is the sum of
//! its clients' requests (the audit log's users but the harness's), so
//! the clients' mean changes add up to the total's. A client is named by
//! its own verdict, not the family-wise one: Holm keeps the total (one
//! metric of many), and at 3 rounds a client whose few requests vary from
//! round to round (kubectl's discovery: 4–6 requests) can move ×10 with a
//! p of 0.01, above Holm's threshold for a family of 28 — naming it as the
//! one behind a total that is kept is what a reader needs, and its own
//! interval says how sure that is.

use crate::bench::core::figures;
use crate::bench::core::result::{ModeSummary, Run};
use crate::stats::Direction;

/// A total, and the family of its parts (a member's key is the pattern's
/// with the part's name for `{}`).
const TOTALS: &[(&str, &str)] = &[(figures::API_REQUESTS.key, figures::BY_CLIENT.key)];

/// What is behind one total that moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Behind {
    pub total: &'static str,
    /// The total's mean change a run (this mode − the reference mode).
    pub delta: f64,
    /// The parts whose own verdict is a difference, largest change first.
    pub parts: Vec<Part>,
    /// The other parts: how many, and their changes summed.
    pub rest: usize,
    pub rest_delta: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub delta: f64,
    /// Its own judged cell ("×9.659 [3.574–26.103] ↑ +865.9 % (p=0.01 n=3)").
    pub cell: String,
}

/// The totals of `mode` whose own verdict against `reference` is a
/// difference, and the parts behind each.
pub fn behind<R: Run>(mode: &ModeSummary<R>, reference: &ModeSummary<R>) -> Vec<Behind> {
    let mean = |m: &ModeSummary<R>, key: &str| m.stats.get(key).map_or(0.0, |s| s.mean);
    TOTALS
        .iter()
        .filter(|(total, _)| {
            mode.vs_reference
                .get(*total)
                .is_some_and(|j| j.verdict != Direction::Same)
        })
        .map(|&(total, pattern)| {
            let (before, after) = pattern.split_once("{}").unwrap_or((pattern, ""));
            let name_of = |key: &str| {
                key.strip_prefix(before)
                    .and_then(|k| k.strip_suffix(after))
                    .map(str::to_string)
            };
            let mut keys: Vec<&String> = mode
                .stats
                .keys()
                .chain(reference.stats.keys())
                .filter(|k| name_of(k).is_some())
                .collect();
            keys.sort();
            keys.dedup();
            let mut parts = Vec::new();
            let (mut rest, mut rest_delta) = (0, 0.0);
            for key in keys {
                let delta = mean(mode, key) - mean(reference, key);
                match mode.vs_reference.get(key.as_str()) {
                    Some(j) if j.verdict != Direction::Same => parts.push(Part {
                        name: name_of(key).unwrap_or_default(),
                        delta,
                        cell: j.cell(),
                    }),
                    _ => {
                        rest += 1;
                        rest_delta += delta;
                    }
                }
            }
            parts.sort_by(|a, b| b.delta.abs().total_cmp(&a.delta.abs()));
            Behind {
                total,
                delta: mean(mode, total) - mean(reference, total),
                parts,
                rest,
                rest_delta,
            }
        })
        .collect()
}

impl Behind {
    /// One sentence for a report.
    pub fn sentence(&self) -> String {
        let share = |d: f64| match self.delta {
            t if t != 0.0 => format!("{:.0} % of it; ", 100.0 * d / t),
            _ => String::new(),
        };
        let named: Vec<String> = self
            .parts
            .iter()
            .map(|p| {
                format!(
                    "`{}` {:+.1} ({}{})",
                    p.name,
                    p.delta,
                    share(p.delta),
                    p.cell
                )
            })
            .collect();
        let rest = match (self.rest, named.is_empty()) {
            (0, _) => String::new(),
            (n, true) => format!(
                "no client differs on its own; the {n} clients {:+.1} together",
                self.rest_delta
            ),
            (n, false) => format!(
                "; the other {n} clients {:+.1} together, none different on its own",
                self.rest_delta
            ),
        };
        format!(
            "Behind `{}` ({:+.1} a run): {}{rest}.",
            self.total,
            self.delta,
            named.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::bench::core::behind::behind;
    use crate::bench::core::figures::RunFigures;
    use crate::bench::core::result::ModeSummary;
    use crate::stats::spread;
    use crate::stats::{Direction, Judged, Method, Ratio};

    fn judged(ratio: f64, verdict: Direction) -> Judged {
        Judged {
            ratio: Ratio {
                ratio,
                ci_low: ratio * 0.5,
                ci_high: ratio * 2.0,
                n: 3,
                paired: true,
            },
            verdict,
            p_value: Some(0.01),
            method: Some(Method::PairedTLog),
            detectable: None,
        }
    }

    fn mode(values: &[(&str, [f64; 3])], judged_as: &[(&str, Judged)]) -> ModeSummary<RunFigures> {
        ModeSummary {
            result: RunFigures::default(),
            repeats: Vec::new(),
            spread_pct: Default::default(),
            stats: values
                .iter()
                .map(|(k, v)| (k.to_string(), spread(v)))
                .collect(),
            vs_reference: judged_as.iter().map(|(k, j)| (k.to_string(), *j)).collect(),
        }
    }

    #[test]
    fn the_client_that_moved_is_named_with_its_share_and_the_rest_summed() {
        let reference = mode(
            &[
                ("api_requests_total", [37.0, 38.0, 38.0]),
                ("api_requests_by_client.workload (kubectl)", [4.0, 6.0, 5.0]),
                (
                    "api_requests_by_client.kwok-controller (kwok)",
                    [9.0, 9.0, 10.0],
                ),
            ],
            &[],
        );
        let polls = mode(
            &[
                ("api_requests_total", [80.0, 78.0, 80.0]),
                (
                    "api_requests_by_client.workload (kubectl)",
                    [46.0, 45.0, 46.0],
                ),
                (
                    "api_requests_by_client.kwok-controller (kwok)",
                    [9.0, 10.0, 10.0],
                ),
                ("api_requests_by_client.new (controller)", [1.0, 0.0, 1.0]),
            ],
            &[
                ("api_requests_total", judged(2.1, Direction::Higher)),
                (
                    "api_requests_by_client.workload (kubectl)",
                    judged(9.6, Direction::Higher),
                ),
                (
                    "api_requests_by_client.kwok-controller (kwok)",
                    judged(1.03, Direction::Same),
                ),
            ],
        );
        let b = behind(&polls, &reference);
        assert_eq!(b.len(), 1);
        let b = &b[0];
        assert!((b.delta - 41.667).abs() < 0.01, "{b:?}");
        assert_eq!(b.parts.len(), 1);
        assert_eq!(b.parts[0].name, "workload (kubectl)");
        assert!((b.parts[0].delta - 40.667).abs() < 0.01);
        // kwok's +0.33 and the new client's +0.67, not judged different.
        assert_eq!(b.rest, 2);
        assert!((b.rest_delta - 1.0).abs() < 0.01);
        let s = b.sentence();
        assert!(
            s.contains("`workload (kubectl)` +40.7 (98 % of it; ×9.600"),
            "{s}"
        );
        assert!(s.contains("the other 2 clients +1.0 together"), "{s}");
    }

    #[test]
    fn a_total_that_did_not_move_has_nothing_behind_it() {
        let reference = mode(&[("api_requests_total", [37.0, 38.0, 38.0])], &[]);
        let same = mode(
            &[("api_requests_total", [38.0, 38.0, 37.0])],
            &[("api_requests_total", judged(1.0, Direction::Same))],
        );
        assert!(behind(&same, &reference).is_empty());
    }
}
