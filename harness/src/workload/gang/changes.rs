//! What a case suite's run says changed from one minor to the next: per
//! case, whether the newer minor kept the older one's behaviour (a
//! pre-release held to the release before it passes or names the first
//! difference), declared a different one, or failed; the API requests
//! each case cost in its namespace on both; the gang placement latency
//! rows of both. A part of the book's "what changes in 1.38" page.

use crate::workload::gang::latency::latency_table;
use crate::workload::gang::report::{SuiteReport, latency_rows};
use crate::workload::gang::run::TrialReport;

/// How a case's outcome on `to` relates to its outcome on `from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `to` was held to `from`'s expectations, or declared the same
    /// behaviour, and they held.
    Same,
    /// `to` was held to `from`'s expectations and they did not hold: the
    /// first difference.
    Differs(String),
    /// The case declares a behaviour of its own for `to`, and it held.
    Declared { from: String, to: String },
    /// The case failed on `to` under its own expectations, or on `from`
    /// (then nothing can be said of the change).
    Failed { minor: String, failure: String },
    /// No trial on one of the two.
    NotRun(String),
}

#[derive(Debug, Clone)]
pub struct CaseChange {
    pub case: String,
    pub outcome: Outcome,
    /// API requests in the case's namespace (everyone but the runner).
    pub requests: (Option<u64>, Option<u64>),
}

fn first_lines(s: &str) -> String {
    s.lines().take(4).collect::<Vec<_>>().join(" ")
}

fn outcome(a: Option<&TrialReport>, b: Option<&TrialReport>, from: &str, to: &str) -> Outcome {
    let (Some(a), Some(b)) = (a, b) else {
        let missing = if a.is_none() { from } else { to };
        return Outcome::NotRun(format!("no trial on {missing}"));
    };
    if !a.passed {
        return Outcome::Failed {
            minor: from.to_string(),
            failure: first_lines(a.failure.as_deref().unwrap_or("failed")),
        };
    }
    let held_to_from = b.expected_from.as_deref() == Some(from);
    match (b.passed, held_to_from) {
        (true, true) => Outcome::Same,
        (false, true) => Outcome::Differs(first_lines(b.failure.as_deref().unwrap_or("failed"))),
        (true, false) if a.behaviour == b.behaviour => Outcome::Same,
        (true, false) => Outcome::Declared {
            from: a.behaviour.clone(),
            to: b.behaviour.clone(),
        },
        (false, false) => Outcome::Failed {
            minor: to.to_string(),
            failure: first_lines(b.failure.as_deref().unwrap_or("failed")),
        },
    }
}

/// Every case of the report, in its order, from `from` to `to`.
pub fn between(r: &SuiteReport, from: &str, to: &str) -> Vec<CaseChange> {
    let mut cases: Vec<&str> = r.trials.iter().map(|t| t.case.as_str()).collect();
    cases.dedup();
    let find = |c: &str, m: &str| r.trials.iter().find(|t| t.case == c && t.minor == m);
    cases
        .into_iter()
        .map(|c| {
            let (a, b) = (find(c, from), find(c, to));
            let total =
                |t: Option<&TrialReport>| t.and_then(|t| t.requests.as_ref()).map(|q| q.total);
            CaseChange {
                case: c.to_string(),
                outcome: outcome(a, b, from, to),
                requests: (total(a), total(b)),
            }
        })
        .collect()
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn count(n: Option<u64>) -> String {
    n.map_or("—".into(), |n| n.to_string())
}

/// The suite's section: what changed first, then what held, then the
/// latency rows of both minors.
pub fn markdown(r: &SuiteReport, from: &str, to: &str) -> String {
    let changes = between(r, from, to);
    let version = |m: &str| r.versions.get(m).map_or(m.to_string(), |v| format!("v{v}"));
    let mut out = format!(
        "Recorded by `{}` on {} ({} and {}).\n\n",
        r.command,
        r.cluster,
        version(from),
        version(to)
    );
    let same = changes
        .iter()
        .filter(|c| c.outcome == Outcome::Same)
        .count();
    out.push_str(&format!(
        "{} of {} cases behave on {to} as on {from}.\n\n| case | on {to} against {from} | API requests in its namespace, {from} → {to} |\n|---|---|---|\n",
        same,
        changes.len()
    ));
    let mut rows: Vec<&CaseChange> = changes.iter().collect();
    rows.sort_by_key(|c| matches!(c.outcome, Outcome::Same));
    for c in rows {
        let what = match &c.outcome {
            Outcome::Same => "same behaviour".to_string(),
            Outcome::Differs(d) => format!("**differs**: {d}"),
            Outcome::Declared { from: f, to: t } => {
                format!("**changed** (declared by the case): {f} → {t}")
            }
            Outcome::Failed { minor, failure } => format!("failed on {minor}: {failure}"),
            Outcome::NotRun(why) => format!("not compared: {why}"),
        };
        out.push_str(&format!(
            "| {} | {} | {} → {} |\n",
            c.case,
            cell(&what),
            count(c.requests.0),
            count(c.requests.1)
        ));
    }
    let latency = latency_rows(r, |t| t.minor == from || t.minor == to);
    if !latency.is_empty() {
        out.push_str("\nGang placement latency, one run of the suite's smoke on each:\n\n");
        out.push_str(&latency_table(&latency));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gang::case::Profile;
    use crate::workload::gang::run::RequestCost;

    fn trial(case: &str, minor: &str, passed: bool, behaviour: &str) -> TrialReport {
        TrialReport {
            case: case.into(),
            description: "d".into(),
            minor: minor.into(),
            k8s_version: format!("{minor}.0"),
            profile: Profile::Gang,
            passed,
            failure: (!passed).then(|| {
                "check 1 (PodGroup): not met within 30 s\n  count: expected 1, observed 0".into()
            }),
            behaviour: behaviour.into(),
            expected_from: None,
            observations: vec![],
            wall_s: 1.0,
            bench: None,
            requests: Some(RequestCost {
                total: if minor == "1.38" { 40 } else { 30 },
                ..Default::default()
            }),
        }
    }

    fn held(mut t: TrialReport) -> TrialReport {
        t.expected_from = Some("1.37".into());
        t
    }

    #[test]
    fn each_case_says_how_the_newer_minor_relates_to_the_older() {
        let r = SuiteReport::new(
            "gang",
            vec![
                trial("same", "1.37", true, "b"),
                held(trial("same", "1.38", true, "b")),
                trial("moved", "1.37", true, "b"),
                held(trial("moved", "1.38", false, "b")),
                trial("declared", "1.37", true, "basic"),
                trial("declared", "1.38", true, "gang"),
                trial("broken", "1.37", false, "b"),
                held(trial("broken", "1.38", true, "b")),
                trial("old-only", "1.37", true, "b"),
            ],
        );
        let c = between(&r, "1.37", "1.38");
        let by = |n: &str| c.iter().find(|c| c.case == n).unwrap().outcome.clone();
        assert_eq!(by("same"), Outcome::Same);
        assert!(matches!(by("moved"), Outcome::Differs(d) if d.contains("not met within 30 s")));
        assert_eq!(
            by("declared"),
            Outcome::Declared {
                from: "basic".into(),
                to: "gang".into()
            }
        );
        assert!(matches!(by("broken"), Outcome::Failed { minor, .. } if minor == "1.37"));
        assert!(matches!(by("old-only"), Outcome::NotRun(_)));
        let md = markdown(&r, "1.37", "1.38");
        assert!(
            md.contains("1 of 5 cases behave on 1.38 as on 1.37."),
            "{md}"
        );
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).skip(1).collect();
        // What changed comes first; the cases that held last.
        assert!(
            rows.last()
                .unwrap()
                .starts_with("| same | same behaviour | 30 → 40 |"),
            "{md}"
        );
        assert!(
            md.contains("| moved | **differs**: check 1 (PodGroup)"),
            "{md}"
        );
        assert!(
            md.contains("| old-only | not compared: no trial on 1.38 | 30 → — |"),
            "{md}"
        );
    }
}
