//! A run set of one round is judged with one round's luck: judged alone
//! against the other nine, one of ten recorded smoke rounds called a
//! mode's mutating p99 higher (×2.0), and in `.ci/run` one run's etcd
//! bytes of a mode came out ×1.037, past a band of +1.3 % (the book:
//! baselines.md). So a one-round gate (the `cargo test` smoke) confirms:
//! the modes with a regression of a metric with a band (every kind but
//! the exact counts and new members: what a second run cannot undo) run
//! once more ([`to_confirm`]), and such a regression stands only when the
//! second run has it too ([`confirmed`]) — on the baseline's machine and
//! off it alike. Both runs' verdicts are kept, typed.

use std::collections::BTreeSet;

use crate::bench::core::metric::MetricKind;
use crate::bench::core::verdict::model::{Confirmation, Reason, Status, Verdict};

/// A regression a second run must confirm: any metric judged by a band.
fn confirmable(v: &Verdict) -> bool {
    !v.pass() && v.kind != MetricKind::Exact && !matches!(v.reason, Reason::NewClass { .. })
}

/// The modes with a regression to confirm: what a confirming run runs
/// again.
pub fn to_confirm(verdicts: &[Verdict]) -> BTreeSet<String> {
    verdicts
        .iter()
        .filter(|v| confirmable(v))
        .map(|v| v.mode.clone())
        .collect()
}

/// `first`'s verdicts, with each regression to confirm kept only when
/// the confirming run (`again`: its modes run once more and compared with
/// the same baseline) regressed on the same mode and metric; one that did
/// not is "ok", and says both. Everything else is `first`'s.
pub fn confirmed(first: Vec<Verdict>, again: &[Verdict]) -> Vec<Verdict> {
    first
        .into_iter()
        .map(|mut v| {
            if !confirmable(&v) {
                return v;
            }
            let second = again
                .iter()
                .find(|a| a.mode == v.mode && a.metric == v.metric);
            let held = second.is_some_and(|a| !a.pass());
            if !held {
                v.status = Status::Ok;
            }
            v.confirmation = Some(Confirmation {
                second: second.map(|a| Box::new(a.clone())),
                confirmed: held,
            });
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::verdict::model::Reason;

    fn verdict(mode: &str, metric: &str, kind: MetricKind, pass: bool) -> Verdict {
        let mut v = Verdict::new(
            mode,
            metric,
            kind,
            if pass { Status::Ok } else { Status::Regressed },
            Reason::Workload(if pass { "same" } else { "higher" }.into()),
        );
        v.baseline = 100.0;
        v.current = Some(if pass { 100.0 } else { 200.0 });
        v
    }

    #[test]
    fn a_regression_with_a_band_stands_only_when_a_second_run_has_it() {
        let p99 = "api_latency_ms.mutating.p99";
        let mut new = verdict(
            "jobset",
            "api_requests_by_client_request.x: list pods",
            MetricKind::Count,
            false,
        );
        new.reason = Reason::NewClass { floor: 5.0 };
        let first = vec![
            verdict("jobset-gang", p99, MetricKind::Latency, false),
            verdict("jobset", p99, MetricKind::Latency, false),
            verdict("jobset-gang", "etcd.put_bytes", MetricKind::Bytes, false),
            verdict("baseline", "api_requests_total", MetricKind::Count, false),
            verdict("baseline", "pods_created", MetricKind::Exact, true),
            verdict("kueue", "objects_created.jobs", MetricKind::Exact, false),
            new,
        ];
        let modes: Vec<String> = to_confirm(&first).into_iter().collect();
        // An exact count and a new member stand at once: their modes are
        // not run again for them.
        assert_eq!(modes, ["baseline", "jobset", "jobset-gang"]);
        let again = vec![
            verdict("jobset-gang", p99, MetricKind::Latency, true),
            verdict("jobset", p99, MetricKind::Latency, false),
            verdict("jobset-gang", "etcd.put_bytes", MetricKind::Bytes, false),
        ];
        let v = confirmed(first, &again);
        let c = |i: usize| {
            v[i].confirmation
                .as_ref()
                .map(|c| (c.confirmed, c.second.is_some()))
        };
        assert!(v[0].pass() && c(0) == Some((false, true)), "{:?}", v[0]);
        assert!(
            v[0].note()
                .starts_with("not confirmed (a second run: same)"),
            "{}",
            v[0].note()
        );
        assert!(!v[1].pass() && c(1) == Some((true, true)));
        assert!(
            v[1].note().contains("confirmed by a second run: higher"),
            "{}",
            v[1].note()
        );
        assert!(!v[2].pass() && c(2) == Some((true, true)));
        assert!(v[3].pass() && c(3) == Some((false, false)), "{:?}", v[3]);
        assert!(v[3].note().contains("not measured"), "{}", v[3].note());
        assert!(v[4].pass() && v[4].confirmation.is_none());
        assert!(
            !v[5].pass() && v[5].confirmation.is_none(),
            "exact counts stand"
        );
        assert!(
            !v[6].pass() && v[6].confirmation.is_none(),
            "new members stand"
        );
    }
}
