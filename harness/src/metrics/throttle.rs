//! Client-side throttling: how long a component's API clients waited on
//! their own rate limiters (client-go's token bucket, sized by the
//! component's `--kube-api-qps`/`--kube-api-burst`) during a window.
//!
//! client-go observes every request's wait in
//! `rest_client_rate_limiter_duration_seconds` (k8s.io/client-go
//! rest/request.go `tryThrottleWithInfo`; the histogram is registered by
//! k8s.io/component-base metrics/prometheus/restclient), so the delta of
//! its `_sum` over a window is the seconds the component's requests were
//! held back, and `_count` the requests that passed through a limiter. A
//! controller manager whose QPS is too low for the workload shows here
//! before anything else: its requests are not more, they are later.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::metrics::prom::{Sample, counter_delta};

/// The histogram client-go observes each request's limiter wait in.
pub const FAMILY: &str = "rest_client_rate_limiter_duration_seconds";

/// One component's client-side throttling in a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throttle {
    /// Requests that went through a rate limiter.
    pub requests: u64,
    /// Seconds they waited in all (summed over concurrent requests, so it
    /// can exceed the window).
    pub waited_s: f64,
    /// Requests that waited longer than 1 s (the histogram's bucket edge).
    pub waited_over_1s: u64,
    /// Seconds waited per HTTP verb (the histogram's only other label
    /// is the host): which kind of call was held back — POST for the Job
    /// controller's pod creations, DELETE for the garbage collector's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub waited_s_by_verb: BTreeMap<String, f64>,
}

/// The samples of [`FAMILY`] only: what a snapshot keeps of a component's
/// metrics.
pub fn keep(samples: Vec<Sample>) -> Vec<Sample> {
    samples
        .into_iter()
        .filter(|s| s.name.starts_with(FAMILY))
        .collect()
}

/// The throttling between two scrapes of one component; None when the
/// component does not expose the histogram (or was not scraped).
pub fn between(before: &[Sample], after: &[Sample]) -> Option<Throttle> {
    let count = format!("{FAMILY}_count");
    if !after.iter().any(|s| s.name == count) {
        return None;
    }
    let all = |_: &Sample| true;
    let le_1s = |s: &Sample| s.labels.get("le").map(String::as_str) == Some("1");
    let requests = counter_delta(before, after, &count, all).round() as u64;
    let under_1s = counter_delta(before, after, &format!("{FAMILY}_bucket"), le_1s).round() as u64;
    let sum = format!("{FAMILY}_sum");
    let verbs: BTreeSet<&String> = after
        .iter()
        .filter(|s| s.name == sum)
        .filter_map(|s| s.labels.get("verb"))
        .collect();
    let waited_s_by_verb = verbs
        .into_iter()
        .map(|verb| {
            let of_verb = |s: &Sample| s.labels.get("verb") == Some(verb);
            (verb.clone(), counter_delta(before, after, &sum, of_verb))
        })
        .filter(|(_, w)| *w > 0.0)
        .collect();
    Some(Throttle {
        requests,
        waited_s: counter_delta(before, after, &sum, all),
        waited_over_1s: requests.saturating_sub(under_1s),
        waited_s_by_verb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::prom::parse;

    fn scrape(count: u64, sum: f64, le1: u64) -> Vec<Sample> {
        keep(parse(&format!(
            "# HELP x y\n\
             rest_client_requests_total{{code=\"200\",host=\"h\",method=\"GET\"}} 99\n\
             {FAMILY}_bucket{{host=\"h\",verb=\"POST\",le=\"0.005\"}} {le1}\n\
             {FAMILY}_bucket{{host=\"h\",verb=\"POST\",le=\"1\"}} {le1}\n\
             {FAMILY}_bucket{{host=\"h\",verb=\"POST\",le=\"+Inf\"}} {count}\n\
             {FAMILY}_sum{{host=\"h\",verb=\"POST\"}} {sum}\n\
             {FAMILY}_count{{host=\"h\",verb=\"POST\"}} {count}\n\
             {FAMILY}_sum{{host=\"h\",verb=\"GET\"}} 1.5\n\
             {FAMILY}_count{{host=\"h\",verb=\"GET\"}} 10\n"
        )))
    }

    #[test]
    fn the_waits_of_a_window_are_the_histograms_deltas() {
        let (b, a) = (scrape(100, 2.0, 100), scrape(700, 32.5, 640));
        assert!(b.iter().all(|s| s.name.starts_with(FAMILY)));
        let t = between(&b, &a).unwrap();
        assert_eq!(t.requests, 600);
        assert!((t.waited_s - 30.5).abs() < 1e-9, "{t:?}");
        assert_eq!(t.waited_over_1s, 60);
        // GET waited 1.5 s in both scrapes: nothing in the window.
        assert_eq!(t.waited_s_by_verb.len(), 1, "{t:?}");
        assert!((t.waited_s_by_verb["POST"] - 30.5).abs() < 1e-9);
    }

    #[test]
    fn a_component_without_the_histogram_is_not_measured() {
        assert_eq!(between(&[], &[]), None);
        let other = parse("rest_client_requests_total{code=\"200\"} 3\n");
        assert_eq!(between(&other, &keep(other.clone())), None);
    }
}
