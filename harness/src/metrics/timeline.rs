//! Metrics over time, a point per second of a window: each component's
//! CPU (cores) and resident memory from /proc; from the audit log after
//! the window closed (no request of the harness's), the requests per
//! second by verb, the requests in flight (mutating, read-only) and the
//! open watches of every client but the harness; and only when asked
//! (`scrape`), the API server's and etcd's own metrics — their inflight
//! gauges, stored objects, etcd puts and deletes per second and keys —
//! which costs the API server a /metrics render per second (docs/src/benchmarks/thor.md,
//! "Overhead of sampling" has the measured price). Rates come from two
//! consecutive samples, so n samples give n − 1 points.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cluster::audit::AuditEvent;
use crate::metrics::prom::{self, Sample};
use crate::metrics::usage::Point;

/// The metric families a timeline reads (the scrapes are parsed for
/// these only).
pub const APISERVER_FAMILIES: &[&str] = &[
    "apiserver_current_inflight_requests",
    "apiserver_request_total",
    "apiserver_longrunning_requests",
    "apiserver_resource_objects",
];
pub const ETCD_FAMILIES: &[&str] = &[
    "etcd_mvcc_put_total",
    "etcd_mvcc_delete_total",
    "etcd_debugging_mvcc_keys_total",
];

/// Series over time: `t_s[i]` seconds after the window opened, and each
/// named series' value at that time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub t_s: Vec<f64>,
    pub series: BTreeMap<String, Vec<f64>>,
    /// Ticks whose scrape failed (the point is missing, not zero).
    #[serde(default)]
    pub missed: u32,
}

/// One scrape reduced to the cumulative counters and gauges a timeline
/// needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Raw {
    pub t_s: f64,
    pub usage: Point,
    pub values: BTreeMap<String, f64>,
}

fn add(values: &mut BTreeMap<String, f64>, key: String, v: f64) {
    *values.entry(key).or_default() += v;
}

/// Reduce an API server and an etcd scrape (already parsed) to `Raw`.
pub fn reduce(t_s: f64, usage: Point, api: &[Sample], etcd: &[Sample]) -> Raw {
    let mut values = BTreeMap::new();
    let label = |s: &Sample, k: &str| s.labels.get(k).cloned().unwrap_or_default();
    for s in api {
        match s.name.as_str() {
            "apiserver_current_inflight_requests" => add(
                &mut values,
                format!("apiserver.inflight.{}", label(s, "request_kind")),
                s.value,
            ),
            "apiserver_request_total" => add(
                &mut values,
                format!("counter:verb.{}", label(s, "verb")),
                s.value,
            ),
            "apiserver_longrunning_requests" if label(s, "verb") == "WATCH" => {
                add(&mut values, "apiserver.watches".into(), s.value)
            }
            "apiserver_resource_objects" if s.value >= 0.0 => {
                add(&mut values, "apiserver.objects".into(), s.value)
            }
            _ => {}
        }
    }
    for s in etcd {
        match s.name.as_str() {
            "etcd_mvcc_put_total" => add(&mut values, "counter:etcd.puts".into(), s.value),
            "etcd_mvcc_delete_total" => add(&mut values, "counter:etcd.deletes".into(), s.value),
            "etcd_debugging_mvcc_keys_total" => add(&mut values, "etcd.keys".into(), s.value),
            _ => {}
        }
    }
    Raw { t_s, usage, values }
}

/// Parse only the named families of a scrape.
pub fn parse_families(text: &str, families: &[&str]) -> Vec<Sample> {
    let wanted: String = text
        .lines()
        .filter(|l| families.iter().any(|f| l.starts_with(f)))
        .collect::<Vec<_>>()
        .join("\n");
    prom::parse(&wanted)
}

impl Timeline {
    /// Add the point between two consecutive scrapes. `ticks_per_s` turns
    /// CPU ticks into seconds.
    pub fn push(&mut self, prev: &Raw, cur: &Raw, ticks_per_s: f64) {
        let dt = cur.t_s - prev.t_s;
        if dt <= 0.0 {
            return;
        }
        let n = self.t_s.len();
        let mut point: BTreeMap<String, f64> = BTreeMap::new();
        for (name, &(ticks, kib)) in &cur.usage {
            if let Some(&(before, _)) = prev.usage.get(name) {
                let cpu = ticks.saturating_sub(before) as f64 / ticks_per_s / dt;
                point.insert(format!("cpu_cores.{name}"), cpu);
            }
            if name != crate::metrics::usage::OTHERS {
                point.insert(format!("rss_mib.{name}"), kib as f64 / 1024.0);
            }
        }
        for (key, &v) in &cur.values {
            match key.strip_prefix("counter:") {
                Some(counter) => {
                    let before = prev.values.get(key).copied().unwrap_or(v);
                    let name = match counter.strip_prefix("verb.") {
                        Some(verb) => format!("apiserver.requests_per_s.{verb}"),
                        None => format!("{counter}_per_s"),
                    };
                    point.insert(name, ((v - before) / dt).max(0.0));
                }
                None => {
                    point.insert(key.clone(), v);
                }
            }
        }
        for (name, v) in point {
            let s = self.series.entry(name).or_insert_with(|| vec![0.0; n]);
            s.push(v);
        }
        self.t_s.push(cur.t_s);
        for s in self.series.values_mut() {
            s.resize(n + 1, 0.0);
        }
    }

    /// Seconds between points, on average (0 with fewer than two).
    pub fn mean_interval_s(&self) -> f64 {
        match self.t_s.as_slice() {
            [first, .., last] => (last - first) / (self.t_s.len() - 1) as f64,
            _ => 0.0,
        }
    }
}

/// Seconds of an RFC 3339 audit timestamp after `origin`.
fn offset_s(ts: &str, origin: OffsetDateTime) -> Option<f64> {
    let t = OffsetDateTime::parse(ts, &Rfc3339).ok()?;
    Some((t - origin).as_seconds_f64())
}

const MUTATING: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// Add the audit-derived series at the timeline's points: requests
/// completed (watches: started) per second by verb, in the interval
/// before each point,
/// requests in flight at each point (received, not yet complete; WATCH
/// apart) and watches open. `origin` is when the window opened; events of
/// `skip` users (the harness) are left out. Windows stream the log into
/// `AuditSpans` instead; this is its form for events in hand (tests).
#[cfg(test)]
pub fn add_audit_series(
    tl: &mut Timeline,
    events: &[AuditEvent],
    origin: OffsetDateTime,
    skip: &[String],
) {
    let mut spans = AuditSpans::new(origin, skip);
    events.iter().for_each(|e| spans.add(e));
    spans.apply(tl);
}

/// Each request's span (verb, received, completed; in seconds from the
/// window's opening), gathered one audit event at a time for
/// `add_audit_series`: a streamed audit log keeps these, not its events.
#[derive(Debug)]
pub struct AuditSpans {
    origin: OffsetDateTime,
    skip: Vec<String>,
    /// audit ID → (verb, received, completed); watches still open end at
    /// +inf.
    spans: HashMap<String, (String, f64, f64)>,
}

impl AuditSpans {
    pub fn new(origin: OffsetDateTime, skip: &[String]) -> AuditSpans {
        AuditSpans {
            origin,
            skip: skip.to_vec(),
            spans: HashMap::new(),
        }
    }

    pub fn add(&mut self, e: &AuditEvent) {
        if self.skip.contains(&e.user.username) {
            return;
        }
        let Some(received) = offset_s(&e.request_received_timestamp, self.origin) else {
            return;
        };
        let end = match e.stage.as_str() {
            "ResponseComplete" | "Panic" => offset_s(&e.stage_timestamp, self.origin),
            _ => None,
        };
        let span = self
            .spans
            .entry(e.audit_id.clone())
            .or_insert_with(|| (e.verb.clone(), received, f64::INFINITY));
        if let Some(end) = end {
            span.2 = end;
        }
    }

    /// Add the series at `tl`'s points.
    pub fn apply(self, tl: &mut Timeline) {
        let n = tl.t_s.len();
        if n == 0 {
            return;
        }
        let mut add = |name: String, i: usize, v: f64| {
            tl.series.entry(name).or_insert_with(|| vec![0.0; n])[i] += v;
        };
        let mut in_flight: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for (verb, received, completed) in self.spans.values() {
            let watch = verb == "watch";
            if !watch {
                let mutating = MUTATING.contains(&verb.as_str());
                in_flight[usize::from(mutating)].push((*received, *completed));
            }
            for (i, &t) in tl.t_s.iter().enumerate() {
                let prev = if i == 0 { t - 1.0 } else { tl.t_s[i - 1] };
                // A request counts when it completes; a watch when it
                // starts (it may never complete inside the window).
                let at = if watch { *received } else { *completed };
                if at > prev && at <= t {
                    let dt = (t - prev).max(1e-9);
                    add(format!("audit.requests_per_s.{verb}"), i, 1.0 / dt);
                }
                if watch && *received <= t && *completed > t {
                    add("audit.watches".to_string(), i, 1.0);
                }
            }
        }
        for (kind, spans) in ["audit.inflight.readOnly", "audit.inflight.mutating"]
            .into_iter()
            .zip(in_flight)
        {
            for (i, peak) in peak_in_flight(&spans, &tl.t_s).into_iter().enumerate() {
                add(kind.to_string(), i, peak);
            }
        }
        for name in [
            "audit.watches",
            "audit.inflight.mutating",
            "audit.inflight.readOnly",
        ] {
            tl.series
                .entry(name.to_string())
                .or_insert_with(|| vec![0.0; n]);
        }
    }
}

/// The most requests in flight at once during each point's second,
/// (previous point, point]: a request of a few milliseconds counts in the
/// second it ran in, not only when it spans a point's instant.
fn peak_in_flight(spans: &[(f64, f64)], points: &[f64]) -> Vec<f64> {
    // Starts before ends at one instant: a request that took no time was
    // in flight for that instant.
    let mut events: Vec<(f64, i8)> = spans
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut events = events.into_iter().peekable();
    let mut now = 0i64;
    let mut out = Vec::with_capacity(points.len());
    for (i, &t) in points.iter().enumerate() {
        let prev = if i == 0 { t - 1.0 } else { points[i - 1] };
        while let Some(&(at, d)) = events.peek()
            && at <= prev
        {
            now += i64::from(d);
            events.next();
        }
        let mut peak = now;
        while let Some(&(at, d)) = events.peek()
            && at <= t
        {
            now += i64::from(d);
            peak = peak.max(now);
            events.next();
        }
        out.push(peak.max(0) as f64);
    }
    out
}

/// Timelines of several runs as long CSV: `mode,repeat,t_s,series,value`.
pub fn csv(runs: &[(String, usize, &Timeline)]) -> String {
    let mut out = String::from("mode,repeat,t_s,series,value\n");
    for (mode, repeat, tl) in runs {
        for (name, values) in &tl.series {
            for (t, v) in tl.t_s.iter().zip(values) {
                out.push_str(&format!("{mode},{repeat},{t:.3},{name},{v}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::cluster::audit::AuditEvent;
    use crate::metrics::prom::parse;
    use crate::metrics::timeline::{
        APISERVER_FAMILIES, ETCD_FAMILIES, Timeline, add_audit_series, csv, parse_families,
        peak_in_flight, reduce,
    };

    fn ev(id: &str, stage: &str, verb: &str, user: &str, received: &str, at: &str) -> AuditEvent {
        AuditEvent {
            request_received_timestamp: format!("2026-11-23T10:00:{received}Z"),
            stage_timestamp: format!("2026-11-23T10:00:{at}Z"),
            ..AuditEvent::of(id, stage, verb, user)
        }
    }

    #[test]
    fn peak_in_flight_counts_overlaps_inside_each_second() {
        // two overlapping in (0, 1], one after the other in (1, 2], none in
        // (2, 3], one spanning (3, 4] and (4, 5]
        let spans = [(0.1, 0.5), (0.4, 0.6), (1.1, 1.2), (1.3, 1.4), (3.5, 4.5)];
        assert_eq!(
            peak_in_flight(&spans, &[1.0, 2.0, 3.0, 4.0, 5.0]),
            vec![2.0, 1.0, 0.0, 1.0, 1.0]
        );
        assert_eq!(peak_in_flight(&[], &[1.0]), vec![0.0]);
    }

    #[test]
    fn audit_rates_inflight_and_watches_at_each_point() {
        let origin = time::macros::datetime!(2026-11-23 10:00:00 UTC);
        let mut tl = Timeline {
            t_s: vec![1.0, 2.0, 3.0],
            ..Default::default()
        };
        let events = vec![
            ev(
                "a",
                "ResponseComplete",
                "get",
                "kwok",
                "00.100000",
                "00.200000",
            ),
            ev(
                "b",
                "ResponseComplete",
                "get",
                "kwok",
                "01.100000",
                "01.200000",
            ),
            ev(
                "c",
                "ResponseComplete",
                "create",
                "thor",
                "01.500000",
                "02.500000",
            ),
            ev(
                "w",
                "ResponseStarted",
                "watch",
                "thor",
                "00.300000",
                "00.300000",
            ),
            ev(
                "x",
                "ResponseComplete",
                "get",
                "admin",
                "01.100000",
                "01.200000",
            ),
            ev(
                "y",
                "ResponseComplete",
                "list",
                "kwok",
                "02.100000",
                "not a time",
            ),
        ];
        add_audit_series(&mut tl, &events, origin, &["admin".to_string()]);
        assert_eq!(tl.series["audit.requests_per_s.get"], vec![1.0, 1.0, 0.0]);
        assert_eq!(
            tl.series["audit.requests_per_s.create"],
            vec![0.0, 0.0, 1.0]
        );
        // the create ran from 1.5 s to 2.5 s: in flight in both seconds
        assert_eq!(tl.series["audit.inflight.mutating"], vec![0.0, 1.0, 1.0]);
        assert_eq!(tl.series["audit.watches"], vec![1.0, 1.0, 1.0]);
        assert_eq!(tl.series["audit.requests_per_s.watch"], vec![1.0, 0.0, 0.0]);
        // each GET in its second (none spans a point's instant); the LIST
        // without an end is in flight from 2.1 s on
        assert_eq!(tl.series["audit.inflight.readOnly"], vec![1.0, 1.0, 1.0]);
    }

    const API_1: &str = "# TYPE apiserver_request_total counter\n\
apiserver_request_total{code=\"200\",resource=\"pods\",verb=\"GET\"} 100\n\
apiserver_request_total{code=\"201\",resource=\"pods\",verb=\"POST\"} 10\n\
apiserver_current_inflight_requests{request_kind=\"mutating\"} 1\n\
apiserver_current_inflight_requests{request_kind=\"readOnly\"} 3\n\
apiserver_longrunning_requests{resource=\"pods\",scope=\"cluster\",verb=\"WATCH\"} 7\n\
apiserver_resource_objects{group=\"\",resource=\"pods\"} 12\n\
apiserver_resource_objects{group=\"batch\",resource=\"jobs\"} -1\n\
go_goroutines 300\n";

    #[test]
    fn rates_gauges_cpu_and_memory_between_two_scrapes() {
        let api2 = API_1
            .replace("verb=\"GET\"} 100", "verb=\"GET\"} 130")
            .replace("verb=\"POST\"} 10", "verb=\"POST\"} 16");
        let etcd1 = parse("etcd_mvcc_put_total 50\netcd_mvcc_delete_total 5\n");
        let etcd2 = parse("etcd_mvcc_put_total 62\netcd_mvcc_delete_total 5\n");
        let u = |t: u64, kib: u64| [("etcd".to_string(), (t, kib))].into();
        let a = reduce(0.0, u(100, 2048), &parse(API_1), &etcd1);
        let b = reduce(2.0, u(300, 4096), &parse(&api2), &etcd2);
        let mut tl = Timeline::default();
        tl.push(&a, &b, 100.0);
        let v = |k: &str| tl.series[k][0];
        assert_eq!(tl.t_s, vec![2.0]);
        assert_eq!(v("apiserver.requests_per_s.GET"), 15.0);
        assert_eq!(v("apiserver.requests_per_s.POST"), 3.0);
        assert_eq!(v("apiserver.inflight.readOnly"), 3.0);
        assert_eq!(v("apiserver.watches"), 7.0);
        assert_eq!(v("apiserver.objects"), 12.0, "unknown counts (-1) left out");
        assert_eq!(v("etcd.puts_per_s"), 6.0);
        assert_eq!(v("etcd.deletes_per_s"), 0.0);
        assert_eq!(v("cpu_cores.etcd"), 1.0);
        assert_eq!(v("rss_mib.etcd"), 4.0);
        assert!(!tl.series.keys().any(|k| k.contains("go_")));
    }

    #[test]
    fn a_series_that_appears_late_is_padded() {
        let mut tl = Timeline::default();
        let r = |t: f64, kib: Option<u64>| {
            let usage = kib.map(|k| ("x".to_string(), (0, k))).into_iter().collect();
            reduce(t, usage, &[], &[])
        };
        tl.push(&r(0.0, None), &r(1.0, None), 100.0);
        tl.push(&r(1.0, None), &r(2.0, Some(1024)), 100.0);
        tl.push(&r(2.0, Some(1024)), &r(3.0, Some(2048)), 100.0);
        assert_eq!(tl.series["rss_mib.x"], vec![0.0, 1.0, 2.0]);
        assert_eq!(tl.series["cpu_cores.x"], vec![0.0, 0.0, 0.0]);
        assert_eq!(tl.mean_interval_s(), 1.0);
        let text = csv(&[("jobset".into(), 0, &tl)]);
        assert!(text.starts_with("mode,repeat,t_s,series,value\n"));
        assert!(text.contains("jobset,0,3.000,rss_mib.x,2\n"), "{text}");
    }

    #[test]
    fn only_the_wanted_families_are_parsed() {
        let s = parse_families(API_1, APISERVER_FAMILIES);
        assert_eq!(s.len(), 7);
        assert!(parse_families(API_1, ETCD_FAMILIES).is_empty());
    }
}
