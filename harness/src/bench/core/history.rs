//! A series of one benchmark's results (one per commit, per Kubernetes patch
//! release, …) and where each headline metric of each mode changes level:
//! `harness report history DIR…`. Each result contributes one point per
//! mode and metric, the median of its runs; change points come from
//! `crate::stats::change_points` (named in the output), with each metric's
//! minimum effect and noise floor (its declaration's rule).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::bench::core::charts::{fmt_num, sequence};
use crate::bench::core::metric::{Views, values_in};
use crate::bench::core::result::Run;
use crate::bench::core::result::{Results, rule_of};
use crate::error::bad_input;
use crate::output::{markdown_table_head, write_atomic, xml_escape};
use crate::stats::{self, ChangePoint};

/// One result of the series.
#[derive(Debug, Clone)]
pub struct Entry<R: Run> {
    /// The directory (or file) it was read from, as given.
    pub label: String,
    pub result: Results<R>,
}

/// One mode's metric over the series: (entry index, median) where the
/// entry has the mode.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub mode: String,
    pub metric: String,
    pub points: Vec<(usize, f64)>,
    pub change_points: Vec<ChangePoint>,
}

#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// The benchmark's name (`Run::TITLE`).
    pub title: String,
    pub method: String,
    /// The entries' labels and start times, in series order.
    pub labels: Vec<String>,
    pub started: Vec<String>,
    pub series: Vec<Series>,
}

/// Read each path's result; in the given order, or by `started` when
/// `by_started`. A missing or broken file is bad input naming it.
pub fn load<R: Run>(paths: &[PathBuf], by_started: bool) -> Result<Vec<Entry<R>>> {
    if paths.len() < 2 {
        return Err(bad_input(format!(
            "report history: {} result given; a series needs at least 2",
            paths.len()
        )));
    }
    let mut out = Vec::new();
    for p in paths {
        let result = Results::<R>::read(p, "report history")?;
        out.push(Entry {
            label: p.display().to_string(),
            result,
        });
    }
    if by_started {
        out.sort_by(|a, b| a.result.started.cmp(&b.result.started));
    }
    Ok(out)
}

/// A mode's runs in one result.
fn runs<'a, R: Run>(r: &'a Results<R>, mode: &str) -> &'a [R] {
    r.modes.get(mode).map_or(&[], |s| s.runs())
}

/// Every mode's headline metrics over the series, change points found.
pub fn history<R: Run>(entries: &[Entry<R>]) -> History {
    let metrics = R::metrics();
    let mut modes: Vec<String> = Vec::new();
    for e in entries {
        for m in e.result.modes.keys() {
            if !modes.contains(m) {
                modes.push(m.clone());
            }
        }
    }
    let names: Vec<String> = values_in(&metrics, &R::default(), Views::HEADLINE)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut series = Vec::new();
    for metric in names {
        for mode in &modes {
            let points: Vec<(usize, f64)> = entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let vals: Vec<f64> = runs(&e.result, mode)
                        .iter()
                        .filter_map(|r| {
                            values_in(&metrics, r, Views::HEADLINE)
                                .into_iter()
                                .find(|(n, _)| *n == metric)
                        })
                        .map(|(_, v)| v)
                        .collect();
                    (!vals.is_empty()).then(|| (i, stats::median(&vals)))
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            let values: Vec<f64> = points.iter().map(|p| p.1).collect();
            // Change points index the mode's own points; map them back to
            // the series' entries.
            let change_points = stats::change_points(&values, rule_of(&metrics, &metric))
                .into_iter()
                .map(|c| ChangePoint {
                    index: points[c.index].0,
                    ..c
                })
                .collect();
            series.push(Series {
                mode: mode.clone(),
                metric: metric.clone(),
                points,
                change_points,
            });
        }
    }
    History {
        title: R::TITLE.into(),
        method: stats::CHANGE_POINT_METHOD.into(),
        labels: entries.iter().map(|e| e.label.clone()).collect(),
        started: entries.iter().map(|e| e.result.started.clone()).collect(),
        series,
    }
}

fn change_text(h: &History, c: &ChangePoint) -> String {
    format!(
        "at {} ({}): {} → {} (×{:.3}, p = {:.3})",
        c.index + 1,
        h.labels.get(c.index).map_or("", String::as_str),
        fmt_num(c.before),
        fmt_num(c.after),
        if c.before > 0.0 {
            c.after / c.before
        } else {
            f64::INFINITY
        },
        c.p_value
    )
}

/// history.md: the method, the series' entries, every change point, and
/// per metric a table of each mode's medians.
pub fn markdown(h: &History) -> String {
    let mut s = format!("# {} history\n\n", h.title);
    let _ = writeln!(s, "Change points: {}.\n", h.method);
    s.push_str("| # | result | started |\n|---:|---|---|\n");
    for (i, (l, t)) in h.labels.iter().zip(&h.started).enumerate() {
        let _ = writeln!(s, "| {} | {l} | {t} |", i + 1);
    }
    s.push_str("\n## Change points\n\n");
    let found: Vec<(&Series, &ChangePoint)> = h
        .series
        .iter()
        .flat_map(|x| x.change_points.iter().map(move |c| (x, c)))
        .collect();
    if found.is_empty() {
        s.push_str("None found in any headline metric.\n");
    }
    for (x, c) in found {
        let _ = writeln!(s, "- {} {}: {}", x.mode, x.metric, change_text(h, c));
    }
    let mut metrics: Vec<&str> = h.series.iter().map(|x| x.metric.as_str()).collect();
    metrics.dedup();
    for metric in metrics {
        let _ = writeln!(s, "\n## {metric}\n");
        let cols: Vec<String> = (1..=h.labels.len()).map(|i| i.to_string()).collect();
        markdown_table_head(&mut s, "mode", &cols);
        for x in h.series.iter().filter(|x| x.metric == metric) {
            let _ = write!(s, "| {} |", x.mode);
            for i in 0..h.labels.len() {
                let cell = x.points.iter().find(|p| p.0 == i).map_or_else(
                    || "–".to_string(),
                    |p| {
                        let mark = match x.change_points.iter().any(|c| c.index == i) {
                            true => " ◆",
                            false => "",
                        };
                        format!("{}{mark}", fmt_num(p.1))
                    },
                );
                let _ = write!(s, " {cell} |");
            }
            s.push('\n');
        }
    }
    s.push_str("\n◆: the first result of a new level.\n");
    s
}

/// history.html: a chart per headline metric, a line per mode, each
/// change point ringed.
pub fn html(h: &History) -> String {
    let title = xml_escape(&h.title);
    let mut s = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title} history</title>\n<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}</style></head><body>\n<h1>{title} history</h1>\n",
    );
    let _ = writeln!(
        s,
        "<p>{} results. Change points (rings): {}.</p>",
        h.labels.len(),
        xml_escape(&h.method)
    );
    let mut metrics: Vec<&str> = h.series.iter().map(|x| x.metric.as_str()).collect();
    metrics.dedup();
    for metric in metrics {
        let rows: Vec<&Series> = h.series.iter().filter(|x| x.metric == metric).collect();
        let lines: Vec<(String, Vec<(usize, f64)>)> = rows
            .iter()
            .map(|x| (x.mode.clone(), x.points.clone()))
            .collect();
        let marks: Vec<(usize, usize, String)> = rows
            .iter()
            .enumerate()
            .flat_map(|(si, x)| {
                x.change_points
                    .iter()
                    .map(move |c| (si, c.index, format!("{}: {}", x.mode, change_text(h, c))))
            })
            .collect();
        let _ = writeln!(s, "<h2>{}</h2>", xml_escape(metric));
        s.push_str(&sequence(metric, "", &h.labels, &lines, &marks));
    }
    s.push_str("</body></html>\n");
    s
}

/// Write history.md, history.html and history.json into `out`.
pub fn write(out: &Path, h: &History) -> Result<Vec<PathBuf>> {
    let files = [
        (out.join("history.md"), markdown(h)),
        (out.join("history.html"), html(h)),
        (
            out.join("history.json"),
            serde_json::to_string_pretty(h)? + "\n",
        ),
    ];
    for (p, text) in &files {
        write_atomic(p, text)?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::result::summarize;
    use crate::bench::thor::result::sample_result;
    use crate::stats::synthetic;

    /// Eight results; from the fifth on, jobset's Thor requests are +20 %.
    fn series() -> Vec<Entry<crate::bench::thor::result::ModeResult>> {
        let base = synthetic(1000.0, 0.02, 8, 7);
        let js = synthetic(1100.0, 0.02, 8, 8);
        (0..8)
            .map(|i| {
                let mut r = sample_result(0, 0.0);
                r.started = format!("2026-11-{:02}T00:00:00Z", 10 + i);
                let one = |mode: &str, v: f64| {
                    let mut m = r.modes["baseline"].result.clone();
                    m.run.mode = mode.into();
                    m.thor_agent_requests = v.round() as u64;
                    summarize(vec![m.clone(), m])
                };
                let step = if i >= 4 { 1.2 } else { 1.0 };
                let (b, j) = (one("baseline", base[i]), one("jobset", js[i] * step));
                r.modes.insert("baseline".into(), b);
                r.modes.insert("jobset".into(), j);
                Entry {
                    label: format!("run-{i}"),
                    result: r,
                }
            })
            .collect()
    }

    #[test]
    fn a_step_in_one_mode_is_marked_there_and_nowhere_else() {
        let h = history(&series());
        let cps: Vec<(&str, &str, usize)> = h
            .series
            .iter()
            .flat_map(|x| {
                x.change_points
                    .iter()
                    .map(move |c| (x.mode.as_str(), x.metric.as_str(), c.index))
            })
            .collect();
        assert_eq!(cps, [("jobset", "thor_agent_requests", 4)]);
        let md = markdown(&h);
        assert!(md.contains("binary segmentation by CUSUM"), "{md}");
        assert!(
            md.contains("- jobset thor_agent_requests: at 5 (run-4)"),
            "{md}"
        );
        assert!(md.contains(" ◆ |"), "{md}");
        let html = html(&h);
        assert_eq!(html.matches("class=\"change\"").count(), 1);
        assert!(html.contains("<h2>thor_agent_requests</h2>"));
    }

    #[test]
    fn results_are_read_in_order_or_by_start_and_bad_input_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (i, e) in series().into_iter().enumerate().take(3) {
            let d = dir.path().join(format!("r{i}"));
            std::fs::create_dir_all(&d).unwrap();
            let mut r = e.result;
            r.started = format!("2026-11-{:02}T00:00:00Z", 20 - i);
            std::fs::write(d.join("result.json"), serde_json::to_string(&r).unwrap()).unwrap();
            paths.push(d);
        }
        let given = load::<crate::bench::thor::result::ModeResult>(&paths, false).unwrap();
        assert!(given[0].label.ends_with("r0"));
        let sorted = load::<crate::bench::thor::result::ModeResult>(&paths, true).unwrap();
        assert!(sorted[0].label.ends_with("r2"), "{:?}", sorted[0].label);
        let err = load::<crate::bench::thor::result::ModeResult>(&paths[..1], false).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_USAGE);
        std::fs::write(paths[1].join("result.json"), "{\"schema\": 3").unwrap();
        let err = format!(
            "{:#}",
            load::<crate::bench::thor::result::ModeResult>(&paths, false).unwrap_err()
        );
        assert!(err.contains("r1/result.json:1:"), "{err}");
        let err = format!(
            "{:#}",
            load::<crate::bench::thor::result::ModeResult>(
                &[paths[0].clone(), dir.path().join("nope")],
                false
            )
            .unwrap_err()
        );
        assert!(
            err.contains("nope/result.json: no such result file"),
            "{err}"
        );
    }
}
