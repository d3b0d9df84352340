//! The Prometheus text format, as the API server and etcd expose it:
//! samples with labels, and histograms turned into quantiles.

use std::collections::BTreeMap;

use crate::metrics::percentiles::Percentiles;

/// One sample: metric name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parse exposition text; comment and malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, rest) = match line.find('{') {
        Some(i) => (&line[..i], &line[i..]),
        None => {
            let (n, r) = line.split_once(' ')?;
            (n, r)
        }
    };
    let mut labels = BTreeMap::new();
    let value_part = if let Some(body) = rest.strip_prefix('{') {
        // Labels: key="value" pairs, values may contain escaped quotes and commas.
        let mut chars = body.char_indices().peekable();
        let mut end = None;
        let mut key = String::new();
        while let Some((i, c)) = chars.next() {
            match c {
                '}' => {
                    end = Some(i);
                    break;
                }
                ',' | ' ' => {}
                '=' => {
                    chars.next(); // opening quote
                    let mut val = String::new();
                    while let Some((_, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, e)) = chars.next() {
                                    val.push(match e {
                                        'n' => '\n',
                                        other => other,
                                    });
                                }
                            }
                            '"' => break,
                            other => val.push(other),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), val);
                }
                other => key.push(other),
            }
        }
        &body[end? + 1..]
    } else {
        rest
    };
    let value = value_part.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Quantile `q` of a cumulative histogram given as (upper bound, count)
/// buckets, interpolating linearly inside the bucket (as Prometheus'
/// histogram_quantile does). None when the histogram is empty.
pub fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let mut b: Vec<(f64, f64)> = buckets.to_vec();
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total = b.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut prev_bound = 0.0;
    let mut prev_count = 0.0;
    for (bound, count) in b {
        if count >= rank {
            if bound.is_infinite() {
                return Some(prev_bound);
            }
            let in_bucket = count - prev_count;
            let frac = if in_bucket > 0.0 {
                (rank - prev_count) / in_bucket
            } else {
                1.0
            };
            return Some(prev_bound + (bound - prev_bound) * frac);
        }
        prev_bound = bound;
        prev_count = count;
    }
    Some(prev_bound)
}

pub fn sum_where(samples: &[Sample], name: &str, pred: impl Fn(&Sample) -> bool) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && pred(s))
        .map(|s| s.value)
        .sum()
}

/// after − before of a counter, summed over the series matching `pred`.
pub fn counter_delta(
    before: &[Sample],
    after: &[Sample],
    name: &str,
    pred: impl Fn(&Sample) -> bool + Copy,
) -> f64 {
    (sum_where(after, name, pred) - sum_where(before, name, pred)).max(0.0)
}

/// Quantiles of the observations a histogram gained between two
/// snapshots (in the histogram's unit, seconds for both components).
pub fn histogram_delta(
    before: &[Sample],
    after: &[Sample],
    base: &str,
    pred: impl Fn(&Sample) -> bool + Copy,
) -> Option<Percentiles> {
    let bucket = format!("{base}_bucket");
    let mut les: BTreeMap<String, f64> = BTreeMap::new();
    for (sign, set) in [(-1.0, before), (1.0, after)] {
        for s in set.iter().filter(|s| s.name == bucket && pred(s)) {
            if let Some(le) = s.labels.get("le") {
                *les.entry(le.clone()).or_default() += sign * s.value;
            }
        }
    }
    let buckets: Vec<(f64, f64)> = les
        .into_iter()
        .filter_map(|(le, c)| {
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((bound, c.max(0.0)))
        })
        .collect();
    let q = |p| histogram_quantile(p, &buckets);
    let max = buckets
        .iter()
        .filter(|(b, _)| b.is_finite())
        .fold((0.0, 0.0), |(prev_b, prev_c), &(b, c)| {
            if c > prev_c { (b, c) } else { (prev_b, prev_c) }
        })
        .0;
    Some(Percentiles {
        p50: q(0.5)?,
        p90: q(0.9)?,
        p99: q(0.99)?,
        max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
        }
    }

    #[test]
    fn deltas_and_histograms() {
        let before = vec![
            s("c", &[("verb", "POST")], 10.0),
            s("h_bucket", &[("le", "0.1")], 5.0),
            s("h_bucket", &[("le", "1")], 5.0),
            s("h_bucket", &[("le", "+Inf")], 5.0),
        ];
        let after = vec![
            s("c", &[("verb", "POST")], 25.0),
            s("c", &[("verb", "GET")], 3.0),
            s("h_bucket", &[("le", "0.1")], 95.0),
            s("h_bucket", &[("le", "1")], 105.0),
            s("h_bucket", &[("le", "+Inf")], 105.0),
        ];
        assert_eq!(counter_delta(&before, &after, "c", |_| true), 18.0);
        assert_eq!(
            counter_delta(&before, &after, "c", |x| x.labels["verb"] == "POST"),
            15.0
        );
        let p = histogram_delta(&before, &after, "h", |_| true).unwrap();
        assert!(p.p50 <= 0.1 && p.p99 > 0.1 && p.p99 <= 1.0, "{p:?}");
        assert_eq!(p.max, 1.0);
    }

    #[test]
    fn parses_samples_with_labels() {
        let s = parse(
            "# HELP x y\n# TYPE x counter\napiserver_request_total{code=\"201\",resource=\"pods\",verb=\"POST\"} 12\netcd_mvcc_put_total 7\nweird{a=\"q\\\"uote,comma\"} 1.5e3\nbroken line\n",
        );
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].labels["resource"], "pods");
        assert_eq!(s[0].value, 12.0);
        assert_eq!(s[1].name, "etcd_mvcc_put_total");
        assert_eq!(s[2].labels["a"], "q\"uote,comma");
        assert_eq!(s[2].value, 1500.0);
    }

    #[test]
    fn quantiles_interpolate() {
        let b = [
            (0.1, 50.0),
            (0.2, 90.0),
            (0.5, 100.0),
            (f64::INFINITY, 100.0),
        ];
        let p50 = histogram_quantile(0.5, &b).unwrap();
        assert!((p50 - 0.1).abs() < 1e-9, "{p50}");
        let p90 = histogram_quantile(0.9, &b).unwrap();
        assert!((p90 - 0.2).abs() < 1e-9, "{p90}");
        let p99 = histogram_quantile(0.99, &b).unwrap();
        assert!(p99 > 0.2 && p99 < 0.5, "{p99}");
        assert_eq!(histogram_quantile(0.5, &[(1.0, 0.0)]), None);
    }
}
