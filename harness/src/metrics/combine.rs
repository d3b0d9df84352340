//! How the figures of several runs combine into one typical run. The
//! reports' tables (requests by client and by request, objects, CPU and
//! memory per component, latency against the SLOs, start-up percentiles)
//! read a mode's one typical run; with repeats it must stand for all of
//! them, not for whichever ran first. Each figure type says how it
//! combines ([`Combine`]): counts are rounded means (a key missing from a
//! run counts 0 there, so per-client rows add up to the mean total),
//! percentiles element-wise means, CPU seconds and memory means per
//! component. A struct of figures combines field by field with
//! [`typical!`], which lists every field: a field added and forgotten there
//! does not compile, so none keeps run 0's value by accident; a field
//! that describes the run rather than measures it says `by first`.

use std::collections::{BTreeMap, BTreeSet};

use crate::metrics::percentiles::Percentiles;
use crate::metrics::slo::SloRow;
use crate::metrics::throttle::Throttle;
use crate::metrics::usage::Usage;

/// How one figure of several runs combines into the typical run's.
pub trait Combine: Sized {
    /// `runs` is never empty.
    fn combine(runs: &[&Self]) -> Self;
}

/// The struct `$T` whose every field is its runs' fields combined: by
/// the field type's [`Combine`], or by the function after `by` (e.g.
/// `by first` for what describes a run). Every field must be listed.
macro_rules! typical {
    ($runs:expr; $T:ident { $($field:ident $(by $how:path)?),* $(,)? }) => {{
        let runs = $runs;
        $T {
            $( $field: crate::metrics::combine::field!(runs, $field $(, $how)?), )*
        }
    }};
}
pub(crate) use typical;

/// One field of [`typical!`].
macro_rules! field {
    ($runs:expr, $field:ident) => {
        crate::metrics::combine::Combine::combine(
            &$runs.iter().map(|r| &r.$field).collect::<Vec<_>>(),
        )
    };
    ($runs:expr, $field:ident, $how:path) => {
        $how(&$runs.iter().map(|r| &r.$field).collect::<Vec<_>>())
    };
}
pub(crate) use field;

/// The first run's (what describes a run rather than measures it: its
/// mode, its identities, its plan).
pub fn first<T: Clone>(runs: &[&T]) -> T {
    runs[0].clone()
}

fn mean(vals: impl Iterator<Item = f64>, n: usize) -> f64 {
    vals.sum::<f64>() / n.max(1) as f64
}

fn mean_u64(vals: impl Iterator<Item = u64>, n: usize) -> u64 {
    mean(vals.map(|v| v as f64), n).round() as u64
}

/// Every key of `maps`, once, in order.
fn keys<'a, V: 'a>(maps: impl Iterator<Item = &'a BTreeMap<String, V>>) -> BTreeSet<&'a String> {
    maps.flat_map(|m| m.keys()).collect()
}

impl Combine for u64 {
    fn combine(runs: &[&u64]) -> u64 {
        mean_u64(runs.iter().map(|v| **v), runs.len())
    }
}

impl Combine for u32 {
    fn combine(runs: &[&u32]) -> u32 {
        mean(runs.iter().map(|v| f64::from(**v)), runs.len()).round() as u32
    }
}

impl Combine for f64 {
    fn combine(runs: &[&f64]) -> f64 {
        mean(runs.iter().map(|v| **v), runs.len())
    }
}

/// Per key: the rounded mean (absent = 0); keys whose mean is 0 are left
/// out.
impl Combine for BTreeMap<String, u64> {
    fn combine(runs: &[&Self]) -> Self {
        let n = runs.len();
        keys(runs.iter().copied())
            .into_iter()
            .map(|k| {
                let v = mean_u64(runs.iter().map(|m| m.get(k).copied().unwrap_or(0)), n);
                (k.clone(), v)
            })
            .filter(|(_, v)| *v > 0)
            .collect()
    }
}

/// Per outer key, the inner maps combined (a run without the key is an
/// empty map: it counts 0).
impl Combine for BTreeMap<String, BTreeMap<String, u64>> {
    fn combine(runs: &[&Self]) -> Self {
        let empty = BTreeMap::new();
        keys(runs.iter().copied())
            .into_iter()
            .map(|k| {
                let inner: Vec<&BTreeMap<String, u64>> =
                    runs.iter().map(|m| m.get(k).unwrap_or(&empty)).collect();
                (k.clone(), Combine::combine(&inner))
            })
            .filter(|(_, c): &(String, BTreeMap<String, u64>)| !c.is_empty())
            .collect()
    }
}

/// Element-wise mean.
impl Combine for Percentiles {
    fn combine(ps: &[&Percentiles]) -> Percentiles {
        let n = ps.len();
        Percentiles {
            p50: mean(ps.iter().map(|p| p.p50), n),
            p90: mean(ps.iter().map(|p| p.p90), n),
            p99: mean(ps.iter().map(|p| p.p99), n),
            max: mean(ps.iter().map(|p| p.max), n),
        }
    }
}

/// Element-wise mean of the runs that have them; None when none has.
impl Combine for Option<Percentiles> {
    fn combine(ps: &[&Self]) -> Self {
        let present: Vec<&Percentiles> = ps.iter().filter_map(|p| p.as_ref()).collect();
        (!present.is_empty()).then(|| Combine::combine(&present))
    }
}

/// Per key, the element-wise mean of the runs that measured it.
impl Combine for BTreeMap<String, Percentiles> {
    fn combine(maps: &[&Self]) -> Self {
        keys(maps.iter().copied())
            .into_iter()
            .map(|k| {
                let present: Vec<&Percentiles> = maps.iter().filter_map(|m| m.get(k)).collect();
                (k.clone(), Combine::combine(&present))
            })
            .collect()
    }
}

/// Per component: mean CPU seconds and memory over the runs (a run that
/// did not see it counts 0), the samples they rest on added up.
impl Combine for BTreeMap<String, Usage> {
    fn combine(maps: &[&Self]) -> Self {
        let n = maps.len();
        keys(maps.iter().copied())
            .into_iter()
            .map(|k| {
                let present = || maps.iter().filter_map(|m| m.get(k));
                let of = |f: fn(&Usage) -> f64| mean(present().map(f), n);
                let u = Usage {
                    cpu_s: of(|u| u.cpu_s),
                    rss_peak_mib: of(|u| u.rss_peak_mib),
                    rss_mean_mib: of(|u| u.rss_mean_mib),
                    samples: present().map(|u| u.samples).sum(),
                };
                (k.clone(), u)
            })
            .collect()
    }
}

/// Per component: the mean throttling of the runs that measured it.
impl Combine for BTreeMap<String, Throttle> {
    fn combine(maps: &[&Self]) -> Self {
        keys(maps.iter().copied())
            .into_iter()
            .map(|k| {
                let of = || maps.iter().filter_map(|m| m.get(k));
                let n = of().count();
                let t = Throttle {
                    requests: mean_u64(of().map(|t| t.requests), n),
                    waited_s: mean(of().map(|t| t.waited_s), n),
                    waited_over_1s: mean_u64(of().map(|t| t.waited_over_1s), n),
                    waited_s_by_verb: keys(of().map(|t| &t.waited_s_by_verb))
                        .into_iter()
                        .map(|v| {
                            let w = mean(
                                of().map(|t| t.waited_s_by_verb.get(v).copied().unwrap_or(0.0)),
                                n,
                            );
                            (v.clone(), w)
                        })
                        .collect(),
                };
                (k.clone(), t)
            })
            .collect()
    }
}

/// Per SLO row: the mean count (over every run) and latency (over the
/// runs that had it), worst (largest share of its bound) first.
impl Combine for Vec<SloRow> {
    fn combine(rows: &[&Self]) -> Self {
        let n = rows.len();
        let mut by_key: BTreeMap<String, Vec<&SloRow>> = BTreeMap::new();
        for r in rows.iter().flat_map(|v| v.iter()) {
            by_key.entry(r.key()).or_default().push(r);
        }
        let mut out: Vec<SloRow> = by_key
            .into_values()
            .map(|rs| SloRow {
                count: mean_u64(rs.iter().map(|r| r.count), n),
                latency_ms: Combine::combine(&rs.iter().map(|r| &r.latency_ms).collect::<Vec<_>>()),
                ..rs[0].clone()
            })
            .collect();
        out.sort_by(|a, b| b.load().total_cmp(&a.load()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Run {
        name: String,
        requests: u64,
        by_client: BTreeMap<String, u64>,
        p: Percentiles,
    }

    #[test]
    fn a_struct_combines_field_by_field_and_names_what_it_keeps_of_the_first() {
        let run = |name: &str, requests: u64, kubectl: u64, p50: f64| Run {
            name: name.into(),
            requests,
            by_client: BTreeMap::from([
                ("kubectl".to_string(), kubectl),
                ("job-controller".to_string(), requests - kubectl),
            ]),
            p: Percentiles {
                p50,
                p90: p50,
                p99: p50,
                max: p50,
            },
        };
        let runs = [
            run("a", 20, 2, 37.0),
            run("b", 16, 1, 18.0),
            run("c", 18, 3, 20.0),
        ];
        let t = typical!(&runs; Run { name by first, requests, by_client, p });
        assert_eq!(t.name, "a");
        assert_eq!(t.requests, 18);
        assert_eq!(t.by_client["kubectl"], 2);
        assert_eq!(t.by_client.values().sum::<u64>(), t.requests);
        assert_eq!(t.p.p50, 25.0);
    }

    #[test]
    fn a_key_absent_from_a_run_counts_zero_there() {
        let a = BTreeMap::from([("pods".to_string(), 4u64)]);
        let b = BTreeMap::new();
        assert_eq!(Combine::combine(&[&a, &b])["pods"], 2);
        let u = |cpu: f64| {
            BTreeMap::from([(
                "etcd".to_string(),
                Usage {
                    cpu_s: cpu,
                    rss_peak_mib: 1.0,
                    rss_mean_mib: 1.0,
                    samples: 3,
                },
            )])
        };
        let c: BTreeMap<String, Usage> = Combine::combine(&[&u(1.0), &u(3.0), &BTreeMap::new()]);
        assert_eq!(c["etcd"].cpu_s, 4.0 / 3.0);
        assert_eq!(c["etcd"].samples, 6);
    }
}
