//! The report's cost sections: CPU seconds and memory per component and
//! mode, API call latency against the SLOs (the worst ten and every
//! breach), and the timeline charts and files (timeline.json, .csv).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use anyhow::Result;

use crate::bench::core::charts::{self, fmt_num};
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::metrics::timeline::{self, Timeline};

/// "CPU and memory per component" and "API latency against the SLOs".
pub fn markdown<R: Run>(r: &Results<R>) -> String {
    let mut s = String::new();
    let modes: Vec<&String> = r.modes.keys().collect();
    let components: BTreeSet<&String> = r
        .modes
        .values()
        .flat_map(|m| m.result.figures().window.resources.keys())
        .collect();
    s.push_str("\n### CPU and memory per component (CPU s · peak / mean RSS MiB)\n\n");
    if components.is_empty() {
        s.push_str("Not measured: this provider's processes do not run on this machine.\n");
    } else {
        crate::output::markdown_table_head(&mut s, "component", &modes);
        for c in components {
            row(&mut s, c, &modes, |m| {
                let u = r.modes[m].result.figures().window.resources.get(c)?;
                if c == crate::metrics::usage::OTHERS {
                    return Some(format!("{:.2} · —", u.cpu_s));
                }
                Some(format!(
                    "{:.2} · {:.0} / {:.0}",
                    u.cpu_s, u.rss_peak_mib, u.rss_mean_mib
                ))
            });
        }
        s.push_str(
            "\nkubectl: the driver's forked kubectl processes (CPU of those finished in the window; memory summed over those alive at each sample). others: the CPU the rest of the machine used (/proc/stat's busy time less every row above) — a build or another cluster beside the run shows here.\n",
        );
    }
    throttling(&mut s, r, &modes);
    s.push_str("\n### API call latency against the SLOs (p99 of the window, ms)\n\n");
    for m in &modes {
        let rows = &r.modes[*m].result.figures().window.api_latency_slo;
        let breaches = rows.iter().filter(|x| x.breached()).count();
        let _ = writeln!(
            s,
            "{m}: {} (verb, resource, scope) classes, {}.\n",
            rows.len(),
            if breaches == 0 {
                "no SLO breach".to_string()
            } else {
                format!("**{breaches} over their SLO**")
            }
        );
        if rows.is_empty() {
            continue;
        }
        s.push_str("| verb | resource | scope | calls | p50 | p90 | p99 | SLO |\n|---|---|---|---:|---:|---:|---:|---:|\n");
        for x in rows
            .iter()
            .enumerate()
            .filter(|(i, x)| *i < 10 || x.breached())
            .map(|(_, x)| x)
        {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1}{} | {} |",
                x.verb,
                x.resource,
                x.scope,
                x.count,
                x.latency_ms.p50,
                x.latency_ms.p90,
                x.latency_ms.p99,
                if x.breached() { " **over**" } else { "" },
                fmt_num(x.slo_ms)
            );
        }
        s.push('\n');
    }
    s
}

/// One row of a component × mode table: `label`, then each mode's cell
/// ("—" where it has none).
fn row(s: &mut String, label: &str, modes: &[&String], cell: impl Fn(&String) -> Option<String>) {
    let _ = write!(s, "| {label} |");
    for m in modes {
        match cell(m) {
            Some(c) => {
                let _ = write!(s, " {c} |");
            }
            None => s.push_str(" — |"),
        }
    }
    s.push('\n');
}

/// "Client-side throttling": per component and mode, the seconds its
/// requests waited on its own QPS limit (metrics::throttle).
fn throttling<R: Run>(s: &mut String, r: &Results<R>, modes: &[&String]) {
    let components: BTreeSet<&String> = r
        .modes
        .values()
        .flat_map(|m| m.result.figures().window.client_throttle.keys())
        .collect();
    if components.is_empty() {
        return;
    }
    s.push_str("\n### Client-side throttling (seconds waited on the component's own QPS limit · requests · of them waiting > 1 s; then seconds by verb)\n\n");
    crate::output::markdown_table_head(s, "component", modes);
    for c in components {
        let of = |m: &String| r.modes[m].result.figures().window.client_throttle.get(c);
        row(s, c, modes, |m| {
            of(m).map(|t| format!("{:.2} · {} · {}", t.waited_s, t.requests, t.waited_over_1s))
        });
        let verbs: BTreeSet<&String> = modes
            .iter()
            .filter_map(|m| of(m))
            .flat_map(|t| t.waited_s_by_verb.keys())
            .collect();
        for v in verbs {
            row(s, &format!("{c} {v}"), modes, |m| {
                of(m)?.waited_s_by_verb.get(v).map(|w| format!("{w:.2}"))
            });
        }
    }
    s.push_str("\nFrom client-go's `rest_client_rate_limiter_duration_seconds` (summed over concurrent requests, so it can exceed the run's length).\n");
}

/// The charts a timeline gets: (title, unit, series name or prefix ending
/// in '.'): one line per mode, the matching series summed. The scraped
/// ones are drawn only when the run scraped (`--scrape-metrics`). A
/// title's `{}` is whose kubectl processes they are (`Run::KUBECTL`).
const CHARTS: &[(&str, &str, &str)] = &[
    (
        "API requests per second (all but the harness)",
        "requests/s",
        "audit.requests_per_s.",
    ),
    (
        "Mutating requests in flight",
        "requests",
        "audit.inflight.mutating",
    ),
    (
        "Read-only requests in flight",
        "requests",
        "audit.inflight.readOnly",
    ),
    ("Open watches", "watches", "audit.watches"),
    ("kube-apiserver CPU", "cores", "cpu_cores.kube-apiserver"),
    ("etcd CPU", "cores", "cpu_cores.etcd"),
    (
        "kube-controller-manager CPU",
        "cores",
        "cpu_cores.kube-controller-manager",
    ),
    ("kube-scheduler CPU", "cores", "cpu_cores.kube-scheduler"),
    (
        "jobset-controller CPU",
        "cores",
        "cpu_cores.jobset-controller",
    ),
    ("kwok CPU", "cores", "cpu_cores.kwok"),
    ("{} memory", "MiB", "rss_mib.kubectl"),
    ("kube-apiserver memory", "MiB", "rss_mib.kube-apiserver"),
    ("etcd memory", "MiB", "rss_mib.etcd"),
    ("Objects stored (scraped)", "objects", "apiserver.objects"),
    (
        "etcd puts per second (scraped)",
        "puts/s",
        "etcd.puts_per_s",
    ),
    (
        "etcd deletes per second (scraped)",
        "deletes/s",
        "etcd.deletes_per_s",
    ),
    (
        "API server inflight, its own gauge (scraped)",
        "requests",
        "apiserver.inflight.",
    ),
];

/// A timeline's series matching `key` (a name, or a prefix ending in
/// '.'), summed point by point; None when it has none.
fn summed(tl: &Timeline, key: &str) -> Option<Vec<(f64, f64)>> {
    let matching: Vec<&Vec<f64>> = tl
        .series
        .iter()
        .filter(|(k, _)| match key.ends_with('.') {
            true => k.starts_with(key),
            false => k.as_str() == key,
        })
        .map(|(_, v)| v)
        .collect();
    if matching.is_empty() {
        return None;
    }
    Some(
        tl.t_s
            .iter()
            .enumerate()
            .map(|(i, t)| (*t, matching.iter().map(|v| v[i]).sum()))
            .collect(),
    )
}

/// One chart per metric, each mode's first run a line from its start; then
/// per mode the request rate by verb.
pub fn timeline_charts<R: Run>(r: &Results<R>) -> String {
    let firsts: Vec<(&String, &Timeline)> = r
        .timelines
        .iter()
        .filter(|(_, rep, _)| *rep == 0)
        .map(|(m, _, tl)| (m, tl))
        .collect();
    if firsts.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "<h2>{}: the control plane over time</h2>\n<p>Sampled every second during each mode's measurement window (first run of each mode); timeline.csv has every series.</p>\n",
        crate::output::xml_escape(&r.scenario)
    );
    for (title, unit, key) in CHARTS {
        let title = &title.replacen("{}", R::KUBECTL, 1);
        let lines: Vec<(String, Vec<(f64, f64)>)> = firsts
            .iter()
            .filter_map(|(m, tl)| Some(((*m).clone(), summed(tl, key)?)))
            .collect();
        if !lines.is_empty() {
            s.push_str(&charts::lines(title, unit, &lines));
        }
    }
    for (m, tl) in &firsts {
        let verbs: Vec<(String, Vec<(f64, f64)>)> = tl
            .series
            .keys()
            .filter_map(|k| k.strip_prefix("audit.requests_per_s."))
            .filter_map(|verb| {
                let pts = summed(tl, &format!("audit.requests_per_s.{verb}"))?;
                pts.iter()
                    .any(|p| p.1 > 0.0)
                    .then(|| (verb.to_string(), pts))
            })
            .collect();
        if !verbs.is_empty() {
            let title = format!("{m}: API requests per second by verb");
            s.push_str(&charts::lines(&title, "requests/s", &verbs));
        }
    }
    s
}

/// Write timeline.json ({mode: [timeline per repeat]}) and timeline.csv
/// into `out` when the run has timelines.
pub fn write_timelines<R: Run>(r: &Results<R>, out: &Path) -> Result<()> {
    if r.timelines.is_empty() {
        return Ok(());
    }
    let mut by_mode: BTreeMap<&str, Vec<&Timeline>> = BTreeMap::new();
    for (m, _, tl) in &r.timelines {
        by_mode.entry(m).or_default().push(tl);
    }
    crate::output::write_atomic(
        &out.join("timeline.json"),
        serde_json::to_string(&by_mode)? + "\n",
    )?;
    let runs: Vec<(String, usize, &Timeline)> = r
        .timelines
        .iter()
        .map(|(m, rep, tl)| (m.clone(), *rep, tl))
        .collect();
    crate::output::write_atomic(&out.join("timeline.csv"), timeline::csv(&runs))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::bench::core::report::cost::{markdown, timeline_charts};
    use crate::bench::thor::result::sample_result;
    use crate::metrics::percentiles::Percentiles;
    use crate::metrics::slo::SloRow;
    use crate::metrics::timeline::Timeline;
    use crate::metrics::usage::Usage;

    #[test]
    fn cost_tables_and_charts() {
        let mut r = sample_result(100, 5.0);
        let m = &mut r.modes.get_mut("baseline").unwrap().result.run;
        m.window.resources.insert(
            "etcd".into(),
            Usage {
                cpu_s: 1.5,
                rss_peak_mib: 80.0,
                rss_mean_mib: 70.0,
                samples: 9,
            },
        );
        let row = |p99: f64, slo: f64| SloRow {
            verb: "POST".into(),
            resource: "jobs.batch".into(),
            scope: "resource".into(),
            count: 3,
            latency_ms: Percentiles {
                p99,
                ..Default::default()
            },
            slo_ms: slo,
        };
        m.window.api_latency_slo = (0..12).map(|i| row(f64::from(i), 1000.0)).collect();
        m.window.api_latency_slo.push(row(1500.0, 1000.0));
        let md = markdown(&r);
        assert!(md.contains("| etcd | 1.50 · 80 / 70 |"), "{md}");
        // ten rows and the breach
        assert_eq!(md.matches("| POST | jobs.batch").count(), 11, "{md}");
        assert!(md.contains("**1 over their SLO**"));
        assert_eq!(timeline_charts(&r), "", "no timeline, no charts");
        let mut tl = Timeline {
            t_s: vec![1.0, 2.0],
            ..Default::default()
        };
        tl.series
            .insert("audit.requests_per_s.get".into(), vec![3.0, 4.0]);
        tl.series
            .insert("audit.requests_per_s.create".into(), vec![1.0, 0.0]);
        tl.series.insert("cpu_cores.etcd".into(), vec![0.1, 0.2]);
        tl.series.insert("rss_mib.kubectl".into(), vec![5.0, 6.0]);
        r.timelines.push(("baseline".into(), 0, tl));
        let html = timeline_charts(&r);
        assert!(html.contains("etcd CPU"));
        // Whose kubectl it is, in Thor's words (Run::KUBECTL).
        assert!(
            html.contains("kubectl (HPCC&apos;s drivers) memory"),
            "{html}"
        );
        // requests/s summed over verbs: 4 then 4
        assert!(html.contains("<title>baseline: peak 4</title>"), "{html}");
        assert!(html.contains("baseline: API requests per second by verb"));
    }
}
