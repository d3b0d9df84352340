//! A metric, declared once. Each workload lists its metrics as
//! [`Metric`] values — the key its JSON and baselines use, its labels, its
//! unit, its [`Kind`] (which decides the comparison rule with its floor
//! and how a baseline stores it), where it shows ([`Views`]), whether it
//! follows the machine's timing, and how a run's figures read it — and
//! every list the benchmark core needs is derived from that list, in its
//! order: the headline and its spreads, the per-metric statistics and
//! ratios, the baseline's metrics, the report's rows, the rounds table,
//! the README's answer, the JUnit properties, the history series.
//!
//! How runs combine is not a metric's: a run's figures are combined field
//! by field into the typical run (`bench::core::combine`, each struct's
//! `typical` lists every field, so one forgotten is a compile error), and a
//! metric of the typical run is read from it like from any run.

use serde::{Deserialize, Serialize};

use crate::stats::Rule;

/// How a baseline stores a metric's kind (its `kind` field; the names are
/// the file format's).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// Request, write, object counts: near-deterministic.
    Count,
    /// Latencies, durations, CPU time: noisy.
    Latency,
    /// Sizes.
    Bytes,
    /// Counts the scenario fixes: judged exactly, against the recorded
    /// runs' range.
    Exact,
}

/// What a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A count the scenario fixes (pods, containers, objects, an
    /// identity's writes): every run of unchanged code makes exactly as
    /// many.
    Fixed,
    /// Requests, writes: near-deterministic, a 2 % minimum effect.
    Count,
    /// Sizes in bytes: a 2 % minimum effect.
    Bytes,
    /// Wall time on this machine: 5 % and the metric's floor.
    Time,
    /// CPU time on this machine: 5 % and the metric's floor.
    Cpu,
    /// A latency percentile: 5 % and the metric's floor.
    Latency,
}

impl Kind {
    /// The comparison rule (stats::Rule) of a metric of this kind whose
    /// noise floor is `floor`, in its unit.
    pub fn rule(self, floor: f64) -> Rule {
        match self {
            // A count's floor (0 for most) is the change in requests
            // under which one build's runs differ anyway.
            Kind::Fixed | Kind::Count | Kind::Bytes => Rule {
                floor,
                ..Rule::COUNT
            },
            Kind::Time | Kind::Cpu | Kind::Latency => Rule::latency(floor),
        }
    }

    /// How baselines store it.
    pub fn stored(self) -> MetricKind {
        match self {
            Kind::Fixed => MetricKind::Exact,
            Kind::Count => MetricKind::Count,
            Kind::Bytes => MetricKind::Bytes,
            Kind::Time | Kind::Cpu | Kind::Latency => MetricKind::Latency,
        }
    }

    /// Whether it measures the machine as much as the code (judged
    /// against its recorded runs only on the baseline's own machine:
    /// `bench::core::verdict::place`).
    pub fn machine_bound(self) -> bool {
        matches!(self, Kind::Time | Kind::Cpu | Kind::Latency)
    }
}

/// Where a metric shows; a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Views(u8);

impl Views {
    /// Its mean and spread over the repeats (a mode's `spread_pct`), the
    /// JUnit properties, the history series.
    pub const HEADLINE: Views = Views(1);
    /// Its statistics over the repeats and its ratio to the reference
    /// mode (a mode's `stats` and `vs_reference`).
    pub const JUDGED: Views = Views(2);
    /// Kept in baselines and judged by `--compare`.
    pub const KEPT: Views = Views(4);
    /// A row of report.md's figures table (the typical run).
    pub const ROW: Views = Views(8);
    /// A row of report.md's rounds table (median [min–max], ratio).
    pub const ROUNDS: Views = Views(16);
    /// A row of the README's answer (`report headline`, `report spread`).
    pub const ANSWER: Views = Views(32);
    pub const NONE: Views = Views(0);

    /// Both sets.
    pub const fn and(self, other: Views) -> Views {
        Views(self.0 | other.0)
    }

    /// This set without [`Views::ROW`].
    pub const fn without_row(self) -> Views {
        Views(self.0 & !Views::ROW.0)
    }

    pub const fn has(self, v: Views) -> bool {
        self.0 & v.0 == v.0
    }
}

/// The section of report.md's figures table a row stands in: what the
/// run did, then what it cost the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Work,
    Cost,
}

pub use crate::bench::core::drivers::{Drive, Driver, LEASES, POLLS, WATCHERS};

/// Everything about a metric but how a run reads it: what renderers and
/// the baseline policy need where there is no run (a stored baseline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// Its JSON and baseline name; a family's pattern holds `{}` where each
    /// member's name goes ("objects_created.{}", "api_latency_ms.{}.p99").
    pub key: &'static str,
    /// Its label in report.md's figures table.
    pub label: &'static str,
    /// Its label in the README's answer ("" where it has none).
    pub short: &'static str,
    /// The unit baselines store (one of `bench::core::baseline::units`).
    pub unit: &'static str,
    pub kind: Kind,
    /// The noise floor, in `unit`, of a machine-bound kind (0 otherwise).
    pub floor: f64,
    pub group: Group,
    pub views: Views,
    pub driver: Driver,
    /// A family member the run did not have counts 0 (a call not made, an
    /// object kind not created) rather than "not measured".
    pub missing_is_zero: bool,
    /// A member no stored run of any machine made is new behaviour (a
    /// request class, a client, a kind of call): a regression from
    /// `verdict::judge::NEW_CLASS_FLOOR` a run, anywhere.
    pub new_is_behaviour: bool,
    /// Off the recording machine, a change must also pass this (in
    /// `unit`): what another machine's pace alone moves the metric by in
    /// whole steps (HPCC's polls), where its own runs stood still.
    pub machine_floor: f64,
}

impl Spec {
    /// A metric's defaults: a count, in the Work group, nowhere shown.
    pub const fn new(key: &'static str, label: &'static str, unit: &'static str) -> Spec {
        Spec {
            key,
            label,
            short: "",
            unit,
            kind: Kind::Count,
            floor: 0.0,
            group: Group::Work,
            views: Views::NONE,
            driver: Driver::Undeclared,
            missing_is_zero: false,
            new_is_behaviour: false,
            machine_floor: 0.0,
        }
    }

    pub const fn kind(self, kind: Kind, floor: f64) -> Spec {
        Spec {
            kind,
            floor,
            ..self
        }
    }

    pub const fn views(self, views: Views) -> Spec {
        Spec { views, ..self }
    }

    pub const fn short(self, short: &'static str) -> Spec {
        Spec { short, ..self }
    }

    pub const fn cost(self) -> Spec {
        Spec {
            group: Group::Cost,
            ..self
        }
    }

    pub const fn driver(self, driver: Driver) -> Spec {
        Spec { driver, ..self }
    }

    /// Off the recording machine, a change must also pass `floor`
    /// ([`Spec::machine_floor`]).
    pub const fn machine_floor(self, floor: f64) -> Spec {
        Spec {
            machine_floor: floor,
            ..self
        }
    }

    /// A family whose absent members count 0 and whose member no run
    /// ever made is new behaviour ([`Spec::new_is_behaviour`]).
    pub const fn new_members_are_behaviour(self) -> Spec {
        Spec {
            missing_is_zero: true,
            new_is_behaviour: true,
            ..self
        }
    }

    pub const fn missing_is_zero(self) -> Spec {
        Spec {
            missing_is_zero: true,
            ..self
        }
    }

    /// Whether it is a family (its key a pattern).
    pub fn is_family(&self) -> bool {
        self.key.contains("{}")
    }

    /// Whether `name` is this metric or a member of this family.
    pub fn names(&self, name: &str) -> bool {
        match self.key.split_once("{}") {
            None => self.key == name,
            Some((pre, post)) => {
                name.len() > pre.len() + post.len() && name.starts_with(pre) && name.ends_with(post)
            }
        }
    }

    /// The member `member` of this family ("objects_created.pods").
    pub fn member(&self, member: &str) -> String {
        self.key.replacen("{}", member, 1)
    }

    /// The member of this family that `name` names ("pods" of
    /// "objects_created.pods"); None when it names none.
    pub fn member_of<'a>(&self, name: &'a str) -> Option<&'a str> {
        let (pre, post) = self.key.split_once("{}")?;
        self.names(name)
            .then(|| &name[pre.len()..name.len() - post.len()])
    }

    /// Its label for member `member` (a family's label holds `{}` where
    /// the member goes).
    pub fn label_of(&self, member: &str) -> String {
        self.label.replacen("{}", member, 1)
    }

    pub fn rule(&self) -> Rule {
        self.kind.rule(self.floor)
    }

    /// What drives metric `name` (this one, or a member); None where
    /// nothing was declared.
    pub fn drive_of(&self, name: &str) -> Option<Drive> {
        let (pre, post) = self.key.split_once("{}").unwrap_or((self.key, ""));
        let member = name
            .strip_prefix(pre)
            .and_then(|m| m.strip_suffix(post))
            .unwrap_or(name);
        self.driver.resolve(member)
    }
}

/// How a run gives one value of a metric.
type ReadOne<R> = Box<dyn Fn(&R) -> Option<f64> + Send + Sync>;
/// How a run gives each member of a family.
type ReadEach<R> = Box<dyn Fn(&R) -> Vec<(String, f64)> + Send + Sync>;

/// How a run's figures give a metric.
pub enum Read<R> {
    /// One value; None where the run did not measure it (a provider that
    /// does not serve the component's metrics).
    One(ReadOne<R>),
    /// A family: each member the run has, by its full name.
    Each(ReadEach<R>),
}

/// A metric of runs of type `R`: its [`Spec`] and how a run reads it.
pub struct Metric<R> {
    pub spec: Spec,
    pub read: Read<R>,
}

impl<R: 'static> Metric<R> {
    /// A metric every run has.
    pub fn one(spec: Spec, read: impl Fn(&R) -> f64 + Send + Sync + 'static) -> Metric<R> {
        Metric {
            spec,
            read: Read::One(Box::new(move |r| Some(read(r)))),
        }
    }

    /// A metric some runs lack (None: not measured).
    pub fn maybe(
        spec: Spec,
        read: impl Fn(&R) -> Option<f64> + Send + Sync + 'static,
    ) -> Metric<R> {
        Metric {
            spec,
            read: Read::One(Box::new(read)),
        }
    }

    /// A family: each member's name (filled into the key's `{}`) and value.
    pub fn each(
        spec: Spec,
        read: impl Fn(&R) -> Vec<(String, f64)> + Send + Sync + 'static,
    ) -> Metric<R> {
        debug_assert!(spec.is_family(), "{}: a family's key holds {{}}", spec.key);
        let key = spec;
        Metric {
            spec,
            read: Read::Each(Box::new(move |r| {
                read(r)
                    .into_iter()
                    .map(|(m, v)| (key.member(&m), v))
                    .collect()
            })),
        }
    }

    /// The same metric of a run that holds an `R` (`part` finds it).
    pub fn of<S: 'static>(self, part: fn(&S) -> &R) -> Metric<S> {
        Metric {
            spec: self.spec,
            read: match self.read {
                Read::One(f) => Read::One(Box::new(move |s| f(part(s)))),
                Read::Each(f) => Read::Each(Box::new(move |s| f(part(s)))),
            },
        }
    }

    /// Its values in run `r`, by full name (a family: each member).
    pub fn values(&self, r: &R) -> Vec<(String, f64)> {
        match &self.read {
            Read::One(f) => f(r)
                .map(|v| vec![(self.spec.key.to_string(), v)])
                .unwrap_or_default(),
            Read::Each(f) => f(r),
        }
    }

    /// Its value `name` (itself, or a member) in run `r`; a family member
    /// the run lacks is 0 where `missing_is_zero`, else None.
    pub fn value(&self, r: &R, name: &str) -> Option<f64> {
        match &self.read {
            Read::One(f) => f(r),
            Read::Each(f) => f(r)
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v)
                .or(self.spec.missing_is_zero.then_some(0.0)),
        }
    }
}

/// The declaration that names `name` in `specs`.
pub fn spec_of<'a>(specs: impl IntoIterator<Item = &'a Spec>, name: &str) -> Option<&'a Spec> {
    specs.into_iter().find(|s| s.names(name))
}

/// Every value of run `r` of the metrics that show in `view`, in
/// declaration order (families expanded in their members' order).
pub fn values_in<R: 'static>(metrics: &[Metric<R>], r: &R, view: Views) -> Vec<(String, f64)> {
    metrics
        .iter()
        .filter(|m| m.spec.views.has(view))
        .flat_map(|m| m.values(r))
        .collect()
}

/// The value of metric `name` in run `r` (None: not a metric of these
/// runs, or not measured in this one).
pub fn value_of<R: 'static>(metrics: &[Metric<R>], r: &R, name: &str) -> Option<f64> {
    metrics
        .iter()
        .find(|m| m.spec.names(name))
        .and_then(|m| m.value(r, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct R {
        a: u64,
        calls: Vec<(String, f64)>,
    }

    fn list() -> Vec<Metric<R>> {
        vec![
            Metric::one(
                Spec::new("a_total", "A", "requests").views(Views::HEADLINE.and(Views::KEPT)),
                |r: &R| r.a as f64,
            ),
            Metric::each(
                Spec::new("calls.{}", "calls", "requests")
                    .views(Views::KEPT)
                    .driver(Driver::Calls)
                    .missing_is_zero(),
                |r: &R| r.calls.clone(),
            ),
            Metric::each(
                Spec::new("lat.{}.p99", "p99", "ms")
                    .kind(Kind::Latency, 50.0)
                    .views(Views::KEPT),
                |_: &R| vec![("mutating".into(), 7.0)],
            ),
        ]
    }

    #[test]
    fn watch_events_of_leases_follow_the_clock_and_the_rest_the_pace() {
        let w = Spec::new("watch_events.{}", "w", "events").driver(Driver::Watches);
        assert_eq!(
            w.drive_of("watch_events.leases.coordination.k8s.io"),
            Some(Drive::Clock(LEASES))
        );
        assert_eq!(
            w.drive_of("watch_events.jobs.batch"),
            Some(Drive::Pace(WATCHERS))
        );
    }

    #[test]
    fn a_family_names_its_members_and_only_them() {
        let l = list();
        let specs: Vec<&Spec> = l.iter().map(|m| &m.spec).collect();
        assert_eq!(
            spec_of(specs.iter().copied(), "calls.get-job").unwrap().key,
            "calls.{}"
        );
        assert_eq!(
            spec_of(specs.iter().copied(), "lat.mutating.p99")
                .unwrap()
                .key,
            "lat.{}.p99"
        );
        assert!(spec_of(specs.iter().copied(), "lat.p99").is_none());
        assert!(spec_of(specs.iter().copied(), "calls.").is_none());
        assert!(spec_of(specs.iter().copied(), "a_total_2").is_none());
        let r = R {
            a: 3,
            calls: vec![("get-job".into(), 2.0), ("create".into(), 1.0)],
        };
        assert_eq!(
            values_in(&l, &r, Views::KEPT),
            [
                ("a_total".to_string(), 3.0),
                ("calls.get-job".to_string(), 2.0),
                ("calls.create".to_string(), 1.0),
                ("lat.mutating.p99".to_string(), 7.0)
            ]
        );
        assert_eq!(values_in(&l, &r, Views::HEADLINE).len(), 1);
        // A call the run did not make counts 0; a latency class it did not
        // have is not measured.
        assert_eq!(value_of(&l, &r, "calls.delete"), Some(0.0));
        assert_eq!(value_of(&l, &r, "lat.read-only.p99"), None);
        assert_eq!(value_of(&l, &r, "nothing"), None);
        assert_eq!(
            l[1].spec.drive_of("calls.get-job"),
            Some(Drive::Pace(POLLS))
        );
        assert_eq!(l[1].spec.drive_of("calls.create"), Some(Drive::Workload));
        assert_eq!(l[0].spec.drive_of("a_total"), None, "not declared");
        assert_eq!(l[2].spec.rule(), Rule::latency(50.0));
        assert_eq!(l[0].spec.rule(), Rule::COUNT);
    }
}
