//! report.md, report.html and JUnit of any benchmark's Result: the
//! figures table side by side with each mode ÷ the reference mode (its
//! rows are the workload's metrics that show in a row, `Views::ROW`), the
//! rounds table, requests by client, etcd, latency and the cost sections;
//! report.html leads with the same tables and draws the charts; JUnit
//! carries the headline metrics as properties. Renderers never
//! recompute: they only format.

use std::fmt::Write;

use crate::bench::core::charts::{self, fmt_num};
use crate::bench::core::figures::{self, API_REQUESTS, ETCD_WRITES, RunFigures};
use crate::bench::core::metric::{Kind, Metric, Spec, Views, value_of};
use crate::bench::core::report::cost;
use crate::bench::core::report::repeats::repeats_markdown;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::output::{JunitCase, JunitSuite, junit_xml, markdown_table_head, xml_escape};

/// Each followed identity's requests as APF and the audit log counted
/// them in the same window, when both were there.
fn apf_agreement<R: Run>(s: &mut String, r: &Results<R>) {
    let rows: Vec<(&String, &String, &crate::metrics::apf::Agreement)> = r
        .modes
        .iter()
        .flat_map(|(mode, m)| {
            m.result
                .figures()
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

/// Where a shard stands in its run set, or which shards a merged run set
/// joined and which rounds none brought ("" for a whole run).
fn run_set<R: Run>(r: &Results<R>) -> String {
    let Some(st) = &r.statistics else {
        return String::new();
    };
    let mut s = String::new();
    if let Some(sh) = &st.shard {
        let _ = writeln!(
            s,
            "Shard {}/{} of a run set of {} rounds (seed {}): rounds {}–{}; `harness report merge` joins the shards into the run set's result.\n",
            sh.k,
            sh.n,
            sh.of,
            st.seed,
            sh.first + 1,
            sh.first + st.rounds.len()
        );
    }
    if !st.merged.is_empty() {
        let _ = writeln!(
            s,
            "Merged from {} shards (`harness report merge`); each round ran every mode on one machine:\n",
            st.merged.len()
        );
        for m in &st.merged {
            let _ = writeln!(
                s,
                "- shard {}: rounds {}, started {}, on {} ({})",
                m.k,
                m.rounds
                    .iter()
                    .map(|r| (r + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                m.started,
                m.machine
                    .as_ref()
                    .map_or("a machine it did not record".to_string(), |m| m.to_string()),
                m.from
            );
        }
        s.push('\n');
    }
    if !st.lost_rounds.is_empty() {
        let _ = writeln!(
            s,
            "**Rounds no shard brought: {}** — the figures are of the other rounds only.\n",
            st.lost_rounds
                .iter()
                .map(|r| (r + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s
}

/// report.md's text.
pub fn markdown<R: Run>(r: &Results<R>) -> String {
    let mut s = R::heading(r);
    let modes: Vec<&String> = r.modes.keys().collect();
    notes(&mut s, r);
    figures_table(&mut s, r, &modes);
    spread(&mut s, r);
    s.push_str(&repeats_markdown(r));
    s.push_str(&R::after_rounds(r));
    requests_by_client(&mut s, r, &modes);
    etcd(&mut s, r, &modes);
    api_latency(&mut s, r, &modes);
    s.push_str(&cost::markdown(r));
    s
}

/// One mode's figures every run has (its typical run's).
fn figures_of<'a, R: Run>(r: &'a Results<R>, m: &str) -> &'a RunFigures {
    r.modes[m].result.figures()
}

/// The members of family `m` any mode's typical run has, sorted.
fn members<R: Run>(r: &Results<R>, m: &Metric<RunFigures>) -> Vec<String> {
    let mut n: Vec<String> = r
        .modes
        .keys()
        .flat_map(|mode| m.values(figures_of(r, mode)))
        .map(|(name, _)| name)
        .collect();
    n.sort();
    n.dedup();
    n
}

/// A detail table's cell: a count whole, anything else to a tenth, "—"
/// where the run did not measure it.
fn detail_cell(spec: &Spec, v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if spec.kind == Kind::Count => format!("{v}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// The lines under the heading: the harness's peak RSS, the run set,
/// what was not measured, how requests were attributed and APF's agreement.
fn notes<R: Run>(s: &mut String, r: &Results<R>) {
    let _ = writeln!(
        s,
        "Harness peak RSS: {:.0} MiB (the control plane's processes not included).\n",
        r.harness_peak_rss_kib as f64 / 1024.0
    );
    s.push_str(&run_set(r));
    let mut not_measured: Vec<&String> = r
        .modes
        .values()
        .flat_map(|m| &m.result.figures().window.not_measured)
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
        .any(|m| m.result.figures().window.attribution == "apf")
    {
        let _ = writeln!(
            s,
            "Requests per client are the API server's priority-and-fairness counts (one FlowSchema per followed identity); everyone else is listed by the FlowSchema that served them.\n"
        );
    }
    if r.modes
        .values()
        .any(|m| m.result.figures().window.attribution == "client")
    {
        let _ = writeln!(s, "{}\n", R::COUNTED_CLIENT_SIDE);
    }
    apf_agreement(s, r);
}

/// The figures table: a row per metric (per family member) that shows in
/// a row, a column per mode, then each mode ÷ the reference mode.
fn figures_table<R: Run>(s: &mut String, r: &Results<R>, modes: &[&String]) {
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
    let mut first = R::per_run(r);
    // With repeats each column is the typical run (Run::typical).
    let repeats = r.modes.values().map(|m| m.repeats.len()).max().unwrap_or(1);
    if repeats > 1 {
        first.push_str(&format!(" (mean of {repeats})"));
    }
    markdown_table_head(s, &first, &columns);
    let metrics = R::metrics();
    let mut rows: Vec<_> = metrics
        .iter()
        .filter(|m| m.spec.views.has(Views::ROW))
        .collect();
    // What the run did, then what it cost (stable: declaration order
    // within each).
    rows.sort_by_key(|m| m.spec.group);
    for m in rows {
        for name in row_names(r, m) {
            let label = match m.spec.member_of(&name) {
                Some(member) => m.spec.label_of(member),
                None => m.spec.label.to_string(),
            };
            let f = |run: &R| m.value(run, &name);
            // A metric no mode measured (a provider that does not serve
            // it, a result from before it was read) has no row.
            if modes.iter().all(|mode| f(&r.modes[*mode].result).is_none()) {
                continue;
            }
            let _ = write!(s, "| {label} |");
            for mode in modes {
                let cell = f(&r.modes[*mode].result);
                let _ = write!(s, " {} |", cell.map_or("—".into(), fmt_num));
            }
            for mode in &ratio_cols {
                let b = base.and_then(f).unwrap_or(0.0);
                let v = f(&r.modes[*mode].result).unwrap_or(0.0);
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
    }
}

/// The row names of one metric: its key, or for a family a row per
/// member any mode's typical run has.
fn row_names<R: Run>(r: &Results<R>, m: &Metric<R>) -> Vec<String> {
    match m.spec.is_family() {
        false => vec![m.spec.key.to_string()],
        true => {
            let mut n: Vec<String> = r
                .modes
                .values()
                .flat_map(|s| m.values(&s.result))
                .map(|(name, _)| name)
                .collect();
            n.sort();
            n.dedup();
            n
        }
    }
}

/// Each mode's spread over its repeats, when any mode was repeated.
fn spread<R: Run>(s: &mut String, r: &Results<R>) {
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
}

/// The API requests by client section: the table (the declared
/// per-client requests, `figures::BY_CLIENT`), the workload's own lines
/// after it, then each mode's failed requests.
fn requests_by_client<R: Run>(s: &mut String, r: &Results<R>, modes: &[&String]) {
    s.push_str("\n### API requests by client\n\n");
    markdown_table_head(s, "client", modes);
    let common = figures::common();
    let by_client = common.of(&figures::BY_CLIENT);
    for name in members(r, by_client) {
        let c = by_client.spec.member_of(&name).unwrap_or(&name);
        let _ = write!(s, "| {c} |");
        for m in modes {
            let n = by_client.value(figures_of(r, m), &name).unwrap_or(0.0);
            let _ = write!(s, " {n} |");
        }
        s.push('\n');
    }
    s.push_str(&R::after_clients(r));
    for m in modes {
        for (client, reqs) in &figures_of(r, m).window.failed_requests {
            let parts: Vec<String> = reqs.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
            let _ = writeln!(
                s,
                "- {m}: failed requests of {client}: {}",
                parts.join(", ")
            );
        }
    }
}

/// The etcd section: a table of etcd's counts, size and latencies per
/// mode, a row per declared metric of `figures::ETCD_TABLE`.
fn etcd<R: Run>(s: &mut String, r: &Results<R>, modes: &[&String]) {
    s.push_str("\n### etcd\n\n");
    markdown_table_head(s, "", modes);
    let common = figures::common();
    for spec in &figures::ETCD_TABLE {
        let m = common.of(spec);
        let _ = write!(s, "| {} |", spec.label);
        for mode in modes {
            let cell = detail_cell(spec, m.value(figures_of(r, mode), spec.key));
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
}

/// The API latency section: a line per mode of each request class's
/// declared percentiles (`figures::API_LATENCY_P50`, `…_P90`, the judged
/// p99 `API_LATENCY`).
fn api_latency<R: Run>(s: &mut String, r: &Results<R>, modes: &[&String]) {
    s.push_str("\n### API latency (ms, p50 / p90 / p99)\n\n");
    let common = figures::common();
    let quantiles = [
        figures::API_LATENCY_P50,
        figures::API_LATENCY_P90,
        figures::API_LATENCY,
    ]
    .map(|spec| common.of(&spec));
    let [_, _, p99] = quantiles;
    for m in modes {
        let run = figures_of(r, m);
        let parts: Vec<String> = p99
            .values(run)
            .iter()
            .filter_map(|(name, _)| p99.spec.member_of(name))
            .map(|class| {
                let each: Vec<String> = quantiles
                    .iter()
                    .map(|q| detail_cell(&q.spec, q.value(run, &q.spec.member(class))))
                    .collect();
                format!("{class} {}", each.join(" / "))
            })
            .collect();
        let _ = writeln!(s, "- {m}: {}", parts.join("; "));
    }
}

/// JUnit: one case per mode, its headline metrics as properties.
pub fn junit<R: Run>(r: &Results<R>) -> String {
    let metrics = R::metrics();
    let (suite, class) = R::junit_names(r);
    let cases = r
        .modes
        .iter()
        .map(|(m, sum)| JunitCase {
            properties: crate::bench::core::metric::values_in(
                &metrics,
                &sum.result,
                Views::HEADLINE,
            )
            .into_iter()
            .map(|(k, v)| (k, fmt_num(v)))
            .collect(),
            ..JunitCase::new(class.clone(), m).time(sum.result.figures().wall_s)
        })
        .collect();
    junit_xml(&[JunitSuite {
        name: suite,
        time: None,
        cases,
    }])
}

/// One page for one or more results (several scenarios chart against
/// their worker counts).
/// Where the headline part of [`markdown`] ends and its detail tables
/// begin (report.html puts the charts between them).
const DETAIL_START: &str = "\n### API requests by client";

pub fn html<R: Run>(results: &[Results<R>]) -> String {
    html_led(results, "")
}

/// report.html opening with `lead` (Markdown: a comparison's summary)
/// before everything else.
pub fn html_led<R: Run>(results: &[Results<R>], lead: &str) -> String {
    let mut s = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}</style></head><body>\n<h1>{}</h1>\n",
        R::TITLE,
        R::html_heading()
    );
    // The answer first: each result's headline table, its repeats with
    // intervals and verdicts (and contention); charts and the detail
    // tables after.
    if !lead.is_empty() {
        s.push_str("<section id=\"comparison\">\n");
        s.push_str(&inline(&md_tables_to_html(lead)));
        s.push_str("</section>\n");
    }
    let mds: Vec<String> = results.iter().map(markdown).collect();
    let split = |md: &str| md.find(DETAIL_START).unwrap_or(md.len());
    for md in &mds {
        s.push_str(&md_tables_to_html(&md[..split(md)]));
    }
    s.push_str(&charts::bars_with_ranges(
        "API requests per run, by mode (median, bars: min–max of the rounds)",
        "requests",
        &ranged(results, API_REQUESTS.key),
    ));
    s.push_str(&charts::bars_with_ranges(
        "etcd writes per run, by mode (median, bars: min–max of the rounds)",
        "writes",
        &ranged(results, ETCD_WRITES.key),
    ));
    let common = figures::common();
    let by_client = common.of(&figures::BY_CLIENT);
    for r in results {
        let lat: Vec<(String, Vec<(String, f64)>)> = [
            ("p50", figures::POD_P50),
            ("p90", figures::POD_P90),
            ("p99", figures::POD_P99),
        ]
        .iter()
        .map(|(q, spec)| {
            let m = common.of(spec);
            (
                format!("pod start-up {q}"),
                r.modes
                    .iter()
                    .map(|(mode, s)| {
                        let v = m.value(s.result.figures(), spec.key);
                        (mode.clone(), v.unwrap_or(0.0))
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
                let each = by_client.values(sum.result.figures()).into_iter();
                let each = each.map(|(name, n)| {
                    let c = by_client.spec.member_of(&name).unwrap_or(&name);
                    (c.rsplit(':').next().unwrap_or(c).to_string(), n)
                });
                (m.clone(), each.collect())
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
                let usage = &sum.result.figures().window.resources;
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

/// Per result a group, per mode the declared `metric`'s median and
/// min–max over the rounds (a single run: its value, no range).
fn ranged<R: Run>(results: &[Results<R>], metric: &str) -> Vec<charts::RangedGroup> {
    let metrics = R::metrics();
    results
        .iter()
        .map(|r| {
            (
                R::chart_group(r),
                r.modes
                    .iter()
                    .map(|(m, sum)| match sum.stats.get(metric) {
                        Some(x) if x.n > 1 => (m.clone(), x.median, Some((x.min, x.max))),
                        _ => (
                            m.clone(),
                            value_of(&metrics, &sum.result, metric).unwrap_or(0.0),
                            None,
                        ),
                    })
                    .collect(),
            )
        })
        .collect()
}

/// Minimal Markdown → HTML for the report's own output (headings, tables,
/// list items, paragraphs).
/// Markdown's `code` and **bold** in escaped HTML text, as tags (pairs
/// in order; an odd one left as it is).
fn inline(html: &str) -> String {
    let pair = |s: &str, mark: &str, open: &str, close: &str| {
        let parts: Vec<&str> = s.split(mark).collect();
        if parts.len() < 3 {
            return s.to_string();
        }
        let mut out = String::new();
        let pairs = (parts.len() - 1) / 2 * 2;
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                out.push_str(match (i <= pairs, i % 2) {
                    (true, 1) => open,
                    (true, _) => close,
                    (false, _) => mark,
                });
            }
            out.push_str(p);
        }
        out
    };
    html.lines()
        .map(|l| pair(&pair(l, "**", "<b>", "</b>"), "`", "<code>", "</code>"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn a_report_page_is_titled_by_its_workload() {
        use crate::bench::core::figures::RunFigures;
        use crate::bench::core::result::{Results, Statistics};
        let empty = Results::<RunFigures>::begin(
            "measure-a",
            "local",
            "1.37.1".into(),
            Default::default(),
            Statistics::new(1, Vec::new(), String::new()),
        );
        let measure = super::html(&[empty]);
        assert!(
            measure.contains("<title>harness measure</title>") && !measure.contains("Thor"),
            "{measure}"
        );
        let thor = super::html(&[crate::bench::thor::result::sample_result(100, 10.0)]);
        assert!(
            thor.contains("<title>Thor benchmark</title>")
                && thor.contains("<h1>Thor on Kubernetes: baseline vs JobSet</h1>"),
            "{thor}"
        );
    }

    #[test]
    fn code_and_bold_become_tags_and_an_odd_mark_stays() {
        assert_eq!(
            super::inline("<p>**Regressed** `a` and `b` then ` alone</p>"),
            "<p><b>Regressed</b> <code>a</code> and <code>b</code> then ` alone</p>\n"
        );
    }
}
