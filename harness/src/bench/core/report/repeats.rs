//! The Markdown of repeated runs: each metric's median, min–max and
//! coefficient of variation per mode, and each mode ÷ the reference with
//! its interval and verdict (`crate::stats`'s rule).

use std::fmt::Write;

use crate::bench::core::charts::fmt_num;
use crate::bench::core::metric::Views;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::output::markdown_table_head;

/// The rows of the rounds table: the workload's metrics that show there
/// (`Views::ROUNDS`), in declaration order, a family's members as the
/// modes' statistics have them.
fn rows<R: Run>(r: &Results<R>) -> Vec<String> {
    let mut out = Vec::new();
    for m in R::metrics()
        .iter()
        .filter(|m| m.spec.views.has(Views::ROUNDS))
    {
        if !m.spec.is_family() {
            out.push(m.spec.key.to_string());
            continue;
        }
        let mut members: Vec<&String> = r
            .modes
            .values()
            .flat_map(|s| s.stats.keys())
            .filter(|k| m.spec.names(k))
            .collect();
        members.sort();
        members.dedup();
        out.extend(members.into_iter().cloned());
    }
    out
}

/// Medians, min–max and CV per mode, and each mode ÷ the reference with
/// its interval and verdict (`ModeSummary::stats`, `vs_reference`).
pub fn repeats_markdown<R: Run>(r: &Results<R>) -> String {
    let mut s = String::new();
    let Some(st) = &r.statistics else {
        return s;
    };
    let n = st.rounds.len();
    if n < 2 {
        return s;
    }
    let modes: Vec<&String> = r.modes.keys().collect();
    let others: Vec<&String> = modes
        .iter()
        .copied()
        .filter(|m| **m != st.reference)
        .collect();
    let _ = writeln!(
        s,
        "\n### {n} rounds, interleaved (seed {}; replay with `--seed {}`)\n",
        st.seed, st.seed
    );
    let _ = writeln!(
        s,
        "Per mode: median [min–max] over the rounds, and CV (sd ÷ mean). Each mode ÷ {}: {} ({:.0} % interval{}). Minimum effects: {}. `↑`/`↓` higher/lower, `~` no significant difference, with the test's p and the rounds n; \"could see\" is the smallest change the comparison would have called with {:.0} % probability, given the spread it saw.\n",
        st.reference,
        st.method,
        st.confidence * 100.0,
        st.resamples
            .map_or(String::new(), |r| format!(", {r} resamples")),
        st.rule,
        crate::stats::POWER * 100.0,
    );
    let columns: Vec<String> = modes
        .iter()
        .map(|m| m.to_string())
        .chain(others.iter().map(|m| format!("{m} ÷ {}", st.reference)))
        .collect();
    markdown_table_head(&mut s, "metric", &columns);
    for metric in rows(r) {
        let metric = metric.as_str();
        if !modes.iter().any(|m| r.modes[*m].stats.contains_key(metric)) {
            continue;
        }
        let _ = write!(s, "| {metric} |");
        for m in &modes {
            let cell = r.modes[*m].stats.get(metric).map_or("—".into(), |x| {
                format!(
                    "{} [{}–{}] cv {:.1} %",
                    fmt_num(x.median),
                    fmt_num(x.min),
                    fmt_num(x.max),
                    x.cv_pct
                )
            });
            let _ = write!(s, " {cell} |");
        }
        for m in &others {
            let cell = r.modes[*m]
                .vs_reference
                .get(metric)
                .map_or("—".into(), |j| match j.could_see() {
                    see if see.is_empty() => j.cell(),
                    see => format!("{}, {see}", j.cell()),
                });
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    for m in &others {
        let family = crate::stats::holm(
            r.modes[*m]
                .vs_reference
                .iter()
                .map(|(k, j)| (k.as_str(), j)),
        );
        let _ = writeln!(s, "\n{m} ÷ {}: {}", st.reference, family.sentence());
        if let Some(reference) = r.modes.get(st.reference.as_str()) {
            for b in crate::bench::core::behind::behind(&r.modes[*m], reference) {
                let _ = writeln!(s, "\n{}", b.sentence());
            }
        }
    }
    let order: Vec<String> = st.rounds.iter().map(|r| r.join(", ")).collect();
    let _ = writeln!(s, "\nRun order: {}.", order.join(" | "));
    s
}
