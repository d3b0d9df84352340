//! The answer in one table: each JobSet mode ÷ baseline, per recorded
//! baseline file (`harness report headline FILE...`). The README's
//! headline table is this function's output for the files it names, so
//! its figures come from the recorded runs, never typed by hand (a test in
//! harness/tests/docs.rs checks the committed text).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::bench::thor::baseline::{self, Baseline, Metric};
use crate::bench::thor::result::rule_of;
use crate::error::bad_input;
use crate::stats;

/// The rows: (metric name in baselines, label, how a cell reads).
const ROWS: &[(&str, &str, Cell)] = &[
    ("api_requests_total", "API requests", Cell::Ratio),
    ("etcd_writes_total", "etcd writes", Cell::Ratio),
    ("etcd.put_bytes", "etcd bytes written", Cell::Ratio),
    (
        "apiserver_etcd_cpu_s",
        "kube-apiserver + etcd CPU seconds",
        Cell::Ratio,
    ),
    ("instance_start_ms.p99", "instance start p99", Cell::Seconds),
    ("wall_s", "wall time", Cell::Ratio),
];

#[derive(Clone, Copy)]
enum Cell {
    /// mode ÷ baseline, "×1.05"
    Ratio,
    /// both values, "1.4 → 0.7 s" (ms in the file)
    Seconds,
}

/// One recorded file and the name its column gives it.
#[derive(Debug)]
pub struct Recorded {
    /// e.g. "smoke" or "large.tuned": the file name without `.json`.
    pub name: String,
    pub baseline: Baseline,
}

/// Load each file (a `harness.baseline/*` file); bad input names it.
pub fn load(paths: &[&Path]) -> Result<Vec<Recorded>> {
    if paths.is_empty() {
        return Err(bad_input(
            "report headline: name at least one recorded baseline file (baselines/<provider>/<minor>/<scenario>.json)",
        ));
    }
    paths
        .iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Recorded {
                name,
                baseline: baseline::load(p)?,
            })
        })
        .collect()
}

/// Every recorded run of a metric: v2's samples, or v1's one value.
fn runs(m: &Metric) -> Vec<f64> {
    if m.samples.is_empty() {
        vec![m.value]
    } else {
        m.samples.clone()
    }
}

/// The Markdown table: one column per (file, mode other than baseline),
/// one row per headline metric; "—" where a file lacks the metric.
pub fn markdown(files: &[Recorded]) -> String {
    let mut cols = Vec::new();
    for f in files {
        let Some(base) = f.baseline.modes.get("baseline") else {
            continue;
        };
        for (mode, metrics) in &f.baseline.modes {
            if mode != "baseline" {
                cols.push((f, mode.as_str(), base, metrics));
            }
        }
    }
    let mut out = String::from("| ÷ baseline |");
    for (f, mode, base, metrics) in &cols {
        let n = metrics
            .get("api_requests_total")
            .map(|m| runs(m).len())
            .unwrap_or(0)
            .min(
                base.get("api_requests_total")
                    .map(|m| runs(m).len())
                    .unwrap_or(0),
            );
        let runs_word = match (n, f.baseline.schema.ends_with("/v1")) {
            (_, true) => "mean of its runs".to_string(),
            (1, false) => "1 run".to_string(),
            (n, false) => format!("{n} runs"),
        };
        let _ = write!(
            out,
            " {} {mode} (k8s {}, {runs_word}) |",
            f.name, f.baseline.k8s_minor
        );
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(cols.len()));
    out.push('\n');
    for (name, label, cell) in ROWS {
        let mut line = format!("| {label} |");
        for (_, _, base, metrics) in &cols {
            let text = match (base.get(*name), metrics.get(*name)) {
                (Some(a), Some(b)) => render(name, *cell, a, b),
                _ => "—".to_string(),
            };
            let _ = write!(line, " {text} |");
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// One cell: the ratio of medians, and the rule's verdict mark where
/// both sides have repeated runs (stats::judge, paired by round when
/// they have as many).
fn render(name: &str, cell: Cell, a: &Metric, b: &Metric) -> String {
    let (ra, rb) = (runs(a), runs(b));
    let mark = match (ra.len() > 1 && rb.len() > 1)
        .then(|| stats::judge(&ra, &rb, ra.len() == rb.len(), rule_of(name)))
        .flatten()
    {
        Some(j) => format!(" {}", j.verdict.mark()),
        None => String::new(),
    };
    match cell {
        Cell::Ratio if a.value > 0.0 => format!("×{:.2}{mark}", b.value / a.value),
        Cell::Ratio => "—".to_string(),
        Cell::Seconds => format!(
            "{} → {} s{mark}",
            seconds(a.value / 1000.0),
            seconds(b.value / 1000.0)
        ),
    }
}

fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::thor::baseline::{MetricKind, Tolerance};
    use std::collections::BTreeMap;

    fn metric(samples: &[f64]) -> Metric {
        Metric {
            value: stats::median(samples),
            unit: "requests".into(),
            kind: MetricKind::Count,
            tolerance: Tolerance::default(),
            samples: samples.to_vec(),
        }
    }

    /// (metric name, its runs)
    type Runs<'a> = &'a [(&'a str, &'a [f64])];

    fn file(modes: &[(&str, Runs<'_>)]) -> Recorded {
        let modes = modes
            .iter()
            .map(|(m, ms)| {
                let ms = ms
                    .iter()
                    .map(|(n, s)| (n.to_string(), metric(s)))
                    .collect::<BTreeMap<_, _>>();
                (m.to_string(), ms)
            })
            .collect();
        Recorded {
            name: "smoke".into(),
            baseline: Baseline {
                schema: "harness.baseline/v2".into(),
                provider: "local".into(),
                k8s_minor: "1.37".into(),
                scenario: "suites/thor/smoke.yaml".into(),
                recorded: "2026-11-26T00:00:00Z".into(),
                harness_version: "0".into(),
                modes,
                capabilities: None,
            },
        }
    }

    #[test]
    fn ratios_verdicts_and_missing_metrics() {
        let f = file(&[
            (
                "baseline",
                &[
                    ("api_requests_total", &[100.0, 101.0, 99.0]),
                    ("instance_start_ms.p99", &[1400.0, 1500.0, 1300.0]),
                ],
            ),
            (
                "jobset",
                &[
                    ("api_requests_total", &[150.0, 152.0, 149.0]),
                    ("instance_start_ms.p99", &[700.0, 800.0, 600.0]),
                ],
            ),
        ]);
        let md = markdown(&[f]);
        assert!(md.contains("| smoke jobset (k8s 1.37, 3 runs) |"), "{md}");
        assert!(md.contains("| API requests | ×1.50 ↑ |"), "{md}");
        // 0.7 s faster is inside the 1 s start-up floor: no verdict.
        assert!(
            md.contains("| instance start p99 | 1.4 → 0.7 s ~ |"),
            "{md}"
        );
        assert!(md.contains("| etcd writes | — |"), "{md}");
    }

    #[test]
    fn no_files_is_bad_input() {
        let e = load(&[]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    }
}
