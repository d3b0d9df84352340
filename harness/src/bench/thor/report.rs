//! Renderings of a Thor benchmark Result: JSON (the contract), Markdown
//! (side by side, with jobset/baseline ratios), JUnit XML and an HTML page
//! with SVG charts. Renderers never recompute: they only format.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bench::thor::charts::{self, fmt_num};
use crate::bench::thor::compare::Verdict;
use crate::bench::thor::cost;
use crate::bench::thor::result::{ModeResult, ThorResult};
use crate::output::{JunitCase, JunitSuite, junit_xml, markdown_table_head, xml_escape};

mod compare;
mod repeats;
pub use compare::{compare_junit, compare_markdown};
use repeats::repeats_markdown;

pub use crate::bench::thor::cost::write_timelines;

/// Each followed identity's requests as APF and the audit log counted
/// them in the same window, when both were there.
fn apf_agreement(s: &mut String, r: &ThorResult) {
    let rows: Vec<(&String, &String, &crate::metrics::apf::Agreement)> = r
        .modes
        .iter()
        .flat_map(|(mode, m)| {
            m.result
                .window
                .apf_agreement
                .iter()
                .filter(|(_, a)| a.apf + a.audit > 0)
                .map(move |(who, a)| (mode, who, a))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Requests per identity, APF FlowSchema counts against the audit log (same window):\n\n| mode | identity | APF | audit log | off |\n|---|---|---:|---:|---:|"
    );
    for (mode, who, a) in rows {
        let _ = writeln!(
            s,
            "| {mode} | {who} | {} | {} | {:.1} % |",
            a.apf,
            a.audit,
            a.off_pct()
        );
    }
    s.push('\n');
}

/// Write result.json, report.md, junit.xml and report.html into `out`
/// (and the timelines, when the run has them).
pub fn write_all(r: &ThorResult, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let files = [
        ("result.json", serde_json::to_string_pretty(r)? + "\n"),
        ("report.md", markdown(r, None)),
        ("junit.xml", junit(r)),
        ("report.html", html(std::slice::from_ref(r))),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let p = out.join(name);
        crate::output::write_atomic(&p, text)?;
        written.push(p);
    }
    write_timelines(r, out)?;
    if !r.timelines.is_empty() {
        written.extend([out.join("timeline.json"), out.join("timeline.csv")]);
    }
    Ok(written)
}

/// A row of a table: its label and how to read it off a mode.
type Row = (&'static str, fn(&ModeResult) -> f64);
type TextRow = (&'static str, fn(&ModeResult) -> String);

/// Words of the headline rows that only Thor runs have.
const THOR_ONLY: &[&str] = &[
    "Thor identity",
    "of which writes",
    "instance",
    "worker pods",
];

/// Rows of the headline table: label and a value from a mode.
fn rows() -> Vec<Row> {
    vec![
        ("API requests (all clients but the harness)", |m| {
            m.window.api_requests_total as f64
        }),
        ("… by the Thor identity", |m| m.thor_agent_requests as f64),
        ("… of which writes", |m| m.thor_agent_writes as f64),
        ("etcd writes (puts + deletes)", |m| {
            m.window.etcd_writes_total as f64
        }),
        ("objects created", |m| {
            m.window.objects_created.values().sum::<u64>() as f64
        }),
        ("pods created", |m| m.pods_created as f64),
        ("containers created", |m| m.containers_created as f64),
        ("pod start-up p50 (ms)", |m| m.pod_startup_ms.p50),
        ("pod start-up p99 (ms)", |m| m.pod_startup_ms.p99),
        (
            "instance start p99 (ms, first pod created → last Running)",
            |m| m.instance_start_ms.p99,
        ),
        ("worker pods created / s (per instance)", |m| {
            m.worker_pod_rates.created_per_s.round()
        }),
        ("worker pods bound / s", |m| {
            m.worker_pod_rates.bound_per_s.round()
        }),
        ("worker pods Running / s", |m| {
            m.worker_pod_rates.running_per_s.round()
        }),
        ("instance wall p50 (s)", |m| m.instance_wall_s.p50),
        ("mode wall time (s)", |m| m.wall_s),
        ("kube-apiserver + etcd CPU (s)", |m| {
            m.window.apiserver_etcd_cpu_s
        }),
        ("… per instance", cost::cpu_per_instance),
        ("peak kube-apiserver RSS (MiB)", |m| {
            cost::peak_rss(m, "kube-apiserver").round()
        }),
        ("peak etcd RSS (MiB)", |m| cost::peak_rss(m, "etcd").round()),
    ]
}

pub fn markdown(r: &ThorResult, _verdicts: Option<&[Verdict]>) -> String {
    let mut s = String::new();
    let modes: Vec<&String> = r.modes.keys().collect();
    // `harness measure`'s figures have no Thor instances: their heading
    // is the caller's, and Thor's rows and sections are left out.
    let thor = r.is_thor();
    if !thor {
        s.push_str("### Figures\n\n");
    } else {
        let _ = writeln!(
            s,
            "## Thor benchmark: {} — {} workers ({} per pod), {} at a time, graph {} — Kubernetes v{} ({})\n",
            r.scenario,
            r.num_workers,
            r.num_workers_per_pod,
            r.max_graphs,
            r.graph_duration,
            r.k8s_version,
            r.provider
        );
    }
    let _ = writeln!(
        s,
        "Harness peak RSS: {:.0} MiB (the control plane's processes not included).\n",
        r.harness_peak_rss_kib as f64 / 1024.0
    );
    let mut not_measured: Vec<&String> = r
        .modes
        .values()
        .flat_map(|m| &m.result.window.not_measured)
        .collect();
    not_measured.sort();
    not_measured.dedup();
    if !not_measured.is_empty() {
        let list: Vec<&str> = not_measured.iter().map(|s| s.as_str()).collect();
        let _ = writeln!(
            s,
            "Not measured on this cluster: {} (their rows read 0).\n",
            list.join(", ")
        );
    }
    if r.modes
        .values()
        .any(|m| m.result.window.attribution == "apf")
    {
        let _ = writeln!(
            s,
            "Requests per client are the API server's priority-and-fairness counts (one FlowSchema per followed identity); everyone else is listed by the FlowSchema that served them.\n"
        );
    }
    if r.modes
        .values()
        .any(|m| m.result.window.attribution == "client")
    {
        let _ = writeln!(
            s,
            "Requests are HPCC's two identities' only, counted client-side from their kubectl's request log (--attribution client): the rows of everyone else read 0.\n"
        );
    }
    apf_agreement(&mut s, r);
    let reference = r.reference_mode().unwrap_or("baseline");
    let base = r.modes.get(reference).map(|m| &m.result);
    let ratio_cols: Vec<&String> = modes
        .iter()
        .copied()
        .filter(|m| m.as_str() != reference && base.is_some())
        .collect();
    let columns: Vec<String> = modes
        .iter()
        .map(|m| m.to_string())
        .chain(ratio_cols.iter().map(|m| format!("{m} / {reference}")))
        .collect();
    let mut first = match thor {
        true => format!(
            "per run of {} instances",
            r.modes.values().next().map_or(0, |m| m.result.instances)
        ),
        false => "per run".to_string(),
    };
    // With repeats each column is the mean run (bench::thor::typical).
    let repeats = r.modes.values().map(|m| m.repeats.len()).max().unwrap_or(1);
    if repeats > 1 {
        first.push_str(&format!(" (mean of {repeats})"));
    }
    markdown_table_head(&mut s, &first, &columns);
    for (label, f) in rows() {
        if !thor && THOR_ONLY.iter().any(|t| label.contains(t)) {
            continue;
        }
        let _ = write!(s, "| {label} |");
        for m in &modes {
            let _ = write!(s, " {} |", fmt_num(f(&r.modes[*m].result)));
        }
        for m in &ratio_cols {
            let b = base.map(f).unwrap_or(0.0);
            let v = f(&r.modes[*m].result);
            let _ = write!(
                s,
                " {} |",
                if b > 0.0 {
                    format!("{:.2}", v / b)
                } else {
                    "—".into()
                }
            );
        }
        s.push('\n');
    }
    if r.modes.values().any(|m| m.repeats.len() > 1) {
        s.push_str("\nSpread over repeats ((max − min) / mean):\n\n");
        for (m, sum) in &r.modes {
            let parts: Vec<String> = sum
                .spread_pct
                .iter()
                .map(|(k, v)| format!("{k} {v:.1}%"))
                .collect();
            let _ = writeln!(
                s,
                "- {m} ({} runs): {}",
                sum.repeats.len(),
                parts.join(", ")
            );
        }
    }
    s.push_str(&repeats_markdown(r));
    let contended: Vec<_> = r
        .modes
        .iter()
        .filter_map(|(m, sum)| {
            let c = sum.result.contention.as_ref()?;
            let runs = sum
                .repeats
                .iter()
                .filter_map(|r| r.contention.as_ref())
                .collect();
            Some((m.as_str(), c, sum.result.wall_s, runs))
        })
        .collect();
    s.push_str(&crate::bench::thor::contention::markdown(&contended));
    s.push_str("\n### API requests by client\n\n");
    markdown_table_head(&mut s, "client", &modes);
    let mut clients: Vec<&String> = r
        .modes
        .values()
        .flat_map(|m| m.result.window.api_requests_by_client.keys())
        .collect();
    clients.sort();
    clients.dedup();
    for c in clients {
        let _ = write!(s, "| {c} |");
        for m in &modes {
            let _ = write!(
                s,
                " {} |",
                r.modes[*m]
                    .result
                    .window
                    .api_requests_by_client
                    .get(c)
                    .copied()
                    .unwrap_or(0)
            );
        }
        s.push('\n');
    }
    if thor {
        s.push_str("\n### Requests of the Thor identity\n\n");
    }
    for m in modes.iter().filter(|_| thor) {
        let reqs = r.modes[*m]
            .result
            .window
            .api_requests_by_client_request
            .get(&r.modes[*m].result.thor_agent_user);
        let parts: Vec<String> = reqs
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(
            s,
            "- {m}: {}",
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(", ")
            }
        );
    }
    for m in &modes {
        for (client, reqs) in &r.modes[*m].result.window.failed_requests {
            let parts: Vec<String> = reqs.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
            let _ = writeln!(
                s,
                "- {m}: failed requests of {client}: {}",
                parts.join(", ")
            );
        }
    }
    s.push_str("\n### etcd\n\n");
    markdown_table_head(&mut s, "", &modes);
    let etcd_rows: Vec<TextRow> = vec![
        ("puts", |m| m.window.etcd.puts.to_string()),
        ("deletes", |m| m.window.etcd.deletes.to_string()),
        ("txns", |m| m.window.etcd.txns.to_string()),
        ("ranges", |m| m.window.etcd.ranges.to_string()),
        ("db size (MiB)", |m| {
            format!("{:.1}", m.window.etcd.db_size_bytes as f64 / 1048576.0)
        }),
        ("WAL fsync p99 (ms)", |m| {
            m.window
                .etcd
                .wal_fsync_ms
                .map_or("—".into(), |p| format!("{:.1}", p.p99))
        }),
        ("backend commit p99 (ms)", |m| {
            m.window
                .etcd
                .backend_commit_ms
                .map_or("—".into(), |p| format!("{:.1}", p.p99))
        }),
    ];
    for (label, f) in etcd_rows {
        let _ = write!(s, "| {label} |");
        for m in &modes {
            let _ = write!(s, " {} |", f(&r.modes[*m].result));
        }
        s.push('\n');
    }
    s.push_str("\n### API latency (ms, p50 / p90 / p99)\n\n");
    for m in &modes {
        let parts: Vec<String> = r.modes[*m]
            .result
            .window
            .api_latency_ms
            .iter()
            .map(|(k, p)| format!("{k} {:.1} / {:.1} / {:.1}", p.p50, p.p90, p.p99))
            .collect();
        let _ = writeln!(s, "- {m}: {}", parts.join("; "));
    }
    s.push_str(&cost::markdown(r));
    s
}

pub fn junit(r: &ThorResult) -> String {
    let cases = r
        .modes
        .iter()
        .map(|(m, sum)| JunitCase {
            properties: crate::bench::thor::result::headline(&sum.result)
                .into_iter()
                .map(|(k, v)| (k.to_string(), fmt_num(v)))
                .collect(),
            ..JunitCase::new(format!("bench.thor.{}", r.scenario), m).time(sum.result.wall_s)
        })
        .collect();
    junit_xml(&[JunitSuite {
        name: format!("harness bench thor {}", r.scenario),
        time: None,
        cases,
    }])
}

/// One page for one or more results (several scenarios chart against
/// their worker counts).
/// Where the headline part of [`markdown`] ends and its detail tables
/// begin (report.html puts the charts between them).
const DETAIL_START: &str = "\n### API requests by client";

pub fn html(results: &[ThorResult]) -> String {
    let mut s = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Thor benchmark</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}</style></head><body>\n<h1>Thor on Kubernetes: baseline vs JobSet</h1>\n",
    );
    // The answer first: each result's headline table, its repeats with
    // intervals and verdicts (and contention); charts and the detail
    // tables after.
    let mds: Vec<String> = results.iter().map(|r| markdown(r, None)).collect();
    let split = |md: &str| md.find(DETAIL_START).unwrap_or(md.len());
    for md in &mds {
        s.push_str(&md_tables_to_html(&md[..split(md)]));
    }
    s.push_str(&charts::bars_with_ranges(
        "API requests per run, by mode (median, bars: min–max of the rounds)",
        "requests",
        &ranged(results, "api_requests_total", |m| {
            m.window.api_requests_total as f64
        }),
    ));
    s.push_str(&charts::bars_with_ranges(
        "etcd writes per run, by mode (median, bars: min–max of the rounds)",
        "writes",
        &ranged(results, "etcd_writes_total", |m| {
            m.window.etcd_writes_total as f64
        }),
    ));
    for r in results {
        let lat: Vec<(String, Vec<(String, f64)>)> = ["p50", "p90", "p99"]
            .iter()
            .map(|q| {
                (
                    format!("pod start-up {q}"),
                    r.modes
                        .iter()
                        .map(|(m, s)| {
                            let p = &s.result.pod_startup_ms;
                            (
                                m.clone(),
                                match *q {
                                    "p50" => p.p50,
                                    "p90" => p.p90,
                                    _ => p.p99,
                                },
                            )
                        })
                        .collect(),
                )
            })
            .collect();
        s.push_str(&charts::bars(
            &format!("{}: pod start-up latency", r.scenario),
            "ms",
            &lat,
        ));
        let clients: Vec<(String, Vec<(String, f64)>)> = r
            .modes
            .iter()
            .map(|(m, sum)| {
                (
                    m.clone(),
                    sum.result
                        .window
                        .api_requests_by_client
                        .iter()
                        .map(|(c, n)| (c.rsplit(':').next().unwrap_or(c).to_string(), *n as f64))
                        .collect(),
                )
            })
            .collect();
        s.push_str(&charts::stacked(
            &format!("{}: API requests by client", r.scenario),
            "requests",
            &clients,
        ));
        let cpu: Vec<(String, Vec<(String, f64)>)> = r
            .modes
            .iter()
            .map(|(m, sum)| {
                let usage = &sum.result.window.resources;
                let each = usage.iter().map(|(c, u)| (c.clone(), u.cpu_s)).collect();
                (m.clone(), each)
            })
            .collect();
        if cpu.iter().any(|(_, v)| !v.is_empty()) {
            s.push_str(&charts::stacked(
                &format!("{}: CPU seconds by component", r.scenario),
                "CPU s",
                &cpu,
            ));
        }
        s.push_str(&cost::timeline_charts(r));
    }
    // The detail tables, as HTML tables.
    for md in &mds {
        s.push_str(&md_tables_to_html(&md[split(md)..]));
    }
    s.push_str("</body></html>\n");
    s
}

/// Per result a group, per mode its median and min–max over the rounds
/// (a single run: its value, no range).
fn ranged(
    results: &[ThorResult],
    metric: &str,
    f: fn(&ModeResult) -> f64,
) -> Vec<charts::RangedGroup> {
    results
        .iter()
        .map(|r| {
            (
                format!("{} workers", r.num_workers),
                r.modes
                    .iter()
                    .map(|(m, sum)| match sum.stats.get(metric) {
                        Some(x) if x.n > 1 => (m.clone(), x.median, Some((x.min, x.max))),
                        _ => (m.clone(), f(&sum.result), None),
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Minimal Markdown → HTML for the report's own output (headings, tables,
/// list items, paragraphs).
fn md_tables_to_html(md: &str) -> String {
    let mut out = String::new();
    let mut in_table = false;
    for line in md.lines() {
        if line.starts_with('|') {
            if line.contains("---") {
                continue;
            }
            if !in_table {
                out.push_str("<table>\n");
                in_table = true;
            }
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            out.push_str("<tr>");
            for c in cells {
                let _ = write!(out, "<td>{}</td>", xml_escape(c));
            }
            out.push_str("</tr>\n");
            continue;
        }
        if in_table {
            out.push_str("</table>\n");
            in_table = false;
        }
        if let Some(h) = line.strip_prefix("### ") {
            let _ = writeln!(out, "<h3>{}</h3>", xml_escape(h));
        } else if let Some(h) = line.strip_prefix("## ") {
            let _ = writeln!(out, "<h2>{}</h2>", xml_escape(h));
        } else if let Some(li) = line.strip_prefix("- ") {
            let _ = writeln!(out, "<p>• {}</p>", xml_escape(li));
        } else if !line.trim().is_empty() {
            let _ = writeln!(out, "<p>{}</p>", xml_escape(line));
        }
    }
    if in_table {
        out.push_str("</table>\n");
    }
    out
}
