//! The answer in one table: each JobSet mode ÷ baseline, per recorded
//! baseline file (`harness report headline FILE...`). The README's
//! headline table is this function's output for the files it names, so
//! its figures come from the recorded runs, never typed by hand (a test in
//! harness/tests/docs.rs checks the committed text).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::bench::core::baseline::{Baseline, Metric};
use crate::bench::core::figures::API_REQUESTS;
use crate::bench::core::metric::{Spec, Views};
use crate::bench::core::verdict::judge::own_band;
use crate::bench::thor::answer;
use crate::error::bad_input;
use crate::stats;
use crate::workload::thor::Mode;

/// The rows: the metrics that show in the answer (`Views::ANSWER`), in
/// declaration order, by their short label.
fn rows(specs: &[Spec]) -> impl Iterator<Item = &Spec> {
    specs.iter().filter(|s| s.views.has(Views::ANSWER))
}

/// How a cell reads: a time in milliseconds shows both values in
/// seconds and the ratio; everything else mode ÷ baseline.
#[derive(Clone, Copy)]
enum Cell {
    /// mode ÷ baseline, "×1.05"
    Ratio,
    /// both values, "1.4 → 0.7 s" (ms in the file)
    Seconds,
}

fn cell_of(s: &Spec) -> Cell {
    match s.unit {
        "ms" => Cell::Seconds,
        _ => Cell::Ratio,
    }
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
                baseline: crate::bench::recorded::load(p)?,
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

/// The Markdown table: one row per (file, mode other than baseline), one
/// column per headline metric; "—" where a file lacks the metric. A row
/// names its run set: the file's name, provider, Kubernetes minor and
/// number of rounds.
pub fn markdown(files: &[Recorded], specs: &[Spec]) -> String {
    let mut out = String::from("| run set | ÷ baseline |");
    for spec in rows(specs) {
        let _ = write!(out, " {} |", spec.short);
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---:|".repeat(rows(specs).count()));
    out.push('\n');
    for f in files {
        let Some(base) = f.baseline.modes.get(Mode::Baseline.name()) else {
            continue;
        };
        for (mode, metrics) in &f.baseline.modes {
            if mode == Mode::Baseline.name() {
                continue;
            }
            let n = metrics
                .get(API_REQUESTS.key)
                .map(|m| runs(m).len())
                .unwrap_or(0)
                .min(
                    base.get(API_REQUESTS.key)
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
                "| {} ({} {}, {runs_word}) | {mode} |",
                f.name, f.baseline.provider, f.baseline.k8s_minor
            );
            for spec in rows(specs) {
                let text = match (base.get(spec.key), metrics.get(spec.key)) {
                    (Some(a), Some(b)) => render(spec, a, b),
                    _ => "—".to_string(),
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
    }
    out
}

/// The matrix's answer: the table of the sets recorded so far (in the
/// matrix's order), then each set not recorded yet with the command that
/// records it.
pub fn matrix_markdown(
    root: &Path,
    matrix: &answer::Matrix,
    specs_of: impl Fn(&Baseline) -> Vec<Spec>,
) -> Result<String> {
    let mut recorded = Vec::new();
    let mut missing = Vec::new();
    for set in matrix.sets() {
        let path = set.baseline_path(root)?;
        if set.recorded(root)? {
            recorded.extend(load(&[path.as_path()])?);
        } else {
            missing.push((set.name(root), set.repeat, path));
        }
    }
    let specs = recorded
        .first()
        .map(|r| specs_of(&r.baseline))
        .unwrap_or_default();
    let mut out = match recorded.is_empty() {
        true => String::new(),
        false => markdown(&recorded, &specs),
    };
    if !missing.is_empty() {
        out.push_str("\nNot recorded yet:");
        for (name, repeat, path) in &missing {
            let _ = write!(
                out,
                " {name}, {repeat} rounds (`{}`: `harness bench answer --only \"{name}\"`);",
                path.strip_prefix(root).unwrap_or(path).display()
            );
        }
        out.pop();
        out.push_str(".\n");
    }
    Ok(out)
}

/// One cell. Where both sides have repeated runs: the rule's ratio
/// (stats::judge: the median of per-round ratios when paired by round,
/// else the ratio of medians), its 95 % interval and verdict mark;
/// otherwise the ratio of the recorded values alone.
fn render(spec: &Spec, a: &Metric, b: &Metric) -> String {
    let (ra, rb) = (runs(a), runs(b));
    let judged = (ra.len() > 1 && rb.len() > 1)
        .then(|| stats::judge(&ra, &rb, ra.len() == rb.len(), spec.rule()))
        .flatten();
    let interval = |j: &stats::Judged| {
        format!(
            "[{:.2}–{:.2}] {}",
            j.ratio.ci_low,
            j.ratio.ci_high,
            j.verdict.mark()
        )
    };
    match (cell_of(spec), judged) {
        (Cell::Ratio, Some(j)) => format!("×{:.2} {}", j.ratio.ratio, interval(&j)),
        (Cell::Ratio, None) if a.value > 0.0 => format!("×{:.2}", b.value / a.value),
        (Cell::Ratio, None) => "—".to_string(),
        (Cell::Seconds, j) => {
            let medians = format!(
                "{} → {} s",
                seconds(a.value / 1000.0),
                seconds(b.value / 1000.0)
            );
            match j {
                Some(j) => format!("{medians}, ×{:.2} {}", j.ratio.ratio, interval(&j)),
                None => medians,
            }
        }
    }
}

/// The spread behind the headline and behind every compare band: per
/// recorded file and mode, each headline metric's median [min–max] over
/// its recorded runs, the coefficient of variation (sd ÷ mean) and the
/// band `--compare` derives from them (highest run ÷ median).
pub fn spread_markdown(files: &[Recorded], specs: &[Spec]) -> String {
    let cols: Vec<(&Recorded, &str, &BTreeMap<String, Metric>)> = files
        .iter()
        .flat_map(|f| {
            f.baseline
                .modes
                .iter()
                .map(move |(mode, ms)| (f, mode.as_str(), ms))
        })
        .collect();
    let mut out = String::from("| run-to-run spread |");
    for (f, mode, ms) in &cols {
        let n = ms.get(API_REQUESTS.key).map_or(0, |m| runs(m).len());
        let _ = write!(out, " {} {mode} ({n} runs) |", f.name);
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(cols.len()));
    out.push('\n');
    for spec in rows(specs) {
        let _ = write!(out, "| {} |", spec.short);
        for (_, _, ms) in &cols {
            let text = match ms.get(spec.key).map(runs) {
                Some(r) if r.len() > 1 => {
                    let s = stats::spread(&r);
                    let band = own_band(&r) * 100.0;
                    let (unit, f) = amount(spec);
                    format!(
                        "{} [{}–{}]{unit} cv {:.1} %, band +{band:.1} %",
                        f(s.median),
                        f(s.min),
                        f(s.max),
                        s.cv_pct
                    )
                }
                Some(r) => {
                    let (unit, f) = amount(spec);
                    format!("{}{unit} (1 value)", f(r[0]))
                }
                None => "—".to_string(),
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out
}

/// How the tables show a headline metric: its unit and its values
/// (counts whole, bytes in KiB, milliseconds as seconds, seconds to one
/// decimal).
fn amount(spec: &Spec) -> (&'static str, fn(f64) -> String) {
    match spec.unit {
        "bytes" => (" KiB", |v| format!("{:.0}", v / 1024.0)),
        "ms" => (" s", |v| seconds(v / 1000.0)),
        "s" | "cpu-s" => (" s", |v| format!("{v:.1}")),
        _ => ("", |v| format!("{v:.0}")),
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
    use crate::bench::core::baseline::Tolerance;
    use crate::bench::core::metric::MetricKind;
    use std::collections::BTreeMap;

    fn markdown_t(files: &[Recorded]) -> String {
        markdown(
            files,
            &crate::bench::core::result::specs::<crate::bench::thor::result::ModeResult>(),
        )
    }

    fn spread_markdown_t(files: &[Recorded]) -> String {
        spread_markdown(
            files,
            &crate::bench::core::result::specs::<crate::bench::thor::result::ModeResult>(),
        )
    }

    fn metric(samples: &[f64]) -> Metric {
        Metric {
            across: Vec::new(),
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
                across: Vec::new(),
                schema: "harness.baseline/v2".into(),
                provider: "local".into(),
                k8s_minor: "1.37".into(),
                scenario: "suites/thor/smoke.yaml".into(),
                recorded: "2026-11-26T00:00:00Z".into(),
                harness_version: "0".into(),
                modes,
                capabilities: None,
                machine: None,
                disk: None,
                speed: None,
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
        let md = markdown_t(&[f]);
        let lines: Vec<&str> = md.lines().collect();
        assert!(
            lines[0].starts_with("| run set | ÷ baseline | API requests | etcd writes |"),
            "{md}"
        );
        assert_eq!(lines.len(), 3, "{md}");
        // Paired by round: the rounds' ratios are 1.500, 1.505, 1.505;
        // 0.7 s faster is inside the 1 s start-up floor: no verdict.
        assert!(
            lines[2].starts_with(
                "| smoke (local 1.37, 3 runs) | jobset | ×1.50 [1.50–1.51] ↑ | — | — | — | 1.4 → 0.7 s, ×0.50 [0.42–0.60] ~ |"
            ),
            "{md}"
        );
    }

    #[test]
    fn spread_gives_median_range_cv_and_band() {
        let f = file(&[(
            "baseline",
            &[
                ("api_requests_total", &[100.0, 110.0, 90.0]),
                ("wall_s", &[30.0]),
            ],
        )]);
        let md = spread_markdown_t(&[f]);
        assert!(md.contains("| smoke baseline (3 runs) |"), "{md}");
        // sd 10 of mean 100; highest 110 over the median 100.
        assert!(
            md.contains("| API requests | 100 [90–110] cv 10.0 %, band +10.0 % |"),
            "{md}"
        );
        assert!(md.contains("| wall time | 30.0 s (1 value) |"), "{md}");
        assert!(md.contains("| etcd writes | — |"), "{md}");
    }

    #[test]
    fn no_files_is_bad_input() {
        let e = load(&[]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    }
}
