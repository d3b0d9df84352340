//! SVG charts for report.html, drawn by hand (no plotting library): grouped
//! bars, stacked bars and time-series lines, all on one frame — title,
//! y-axis with five gridlines, legend under the plot, a `<title>` tooltip on
//! every mark.

use std::fmt::Write;

use crate::output::xml_escape;

const COLORS: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#a0cbe8", "#ffbe7d", "#8cd17d", "#ff9d9a", "#86bcb6", "#f1ce63",
    "#d4a6c8", "#fabfd2", "#d7b5a6", "#79706e",
];

const W: f64 = 640.0;
const H: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;
/// Legend entries per row and the width of each (room for a name like
/// `system:serviceaccount:…` cut to LEGEND_CHARS characters).
const LEGEND_PER_ROW: usize = 3;
const LEGEND_COL: f64 = 190.0;
const LEGEND_CHARS: usize = 28;
const LEGEND_ROW: f64 = 14.0;
/// The first legend row's baseline: under the x-axis labels.
const LEGEND_Y: f64 = H - BOTTOM + 34.0;

/// A number as the report prints it: integers plain, others to one decimal
/// (two below 10).
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

fn color(i: usize) -> &'static str {
    COLORS[i % COLORS.len()]
}

/// Names in first-seen order, each once.
fn unique<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

fn plot_w() -> f64 {
    W - LEFT - RIGHT
}

fn plot_h() -> f64 {
    H - TOP - BOTTOM
}

/// The gridline step for data up to `v`: the smallest round size (1, 2,
/// 2.5 or 5 × a power of ten) that covers `v` in at most five steps.
fn nice_step(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 0.25;
    }
    let raw = v / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-12))
        .unwrap_or(10.0 * mag)
}

/// The axis top for data up to `v`: a whole number of round steps, so
/// every tick is a round number (and nice_max of it is itself).
pub fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let step = nice_step(v);
    step * (v / step * (1.0 - 1e-12)).ceil().max(1.0)
}

/// At most this many hover marks per line (every k-th point beyond it,
/// the peak always): values on hover without a report of megabytes.
const MAX_POINT_MARKS: usize = 300;

/// y pixel of value `v` on an axis up to `max`.
fn y_of(v: f64, max: f64) -> f64 {
    TOP + plot_h() - plot_h() * (v / max).clamp(0.0, 1.0)
}

/// The frame: the svg element, title, y gridlines up to `max` with the
/// unit, and the legend of `series`. The caller adds marks and closes it.
fn frame(title: &str, unit: &str, max: f64, series: &[String]) -> String {
    let rows = series.len().div_ceil(LEGEND_PER_ROW);
    let height = LEGEND_Y + LEGEND_ROW * rows.saturating_sub(1) as f64 + 8.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height:.0}\" role=\"img\" style=\"background:#fff\" font-family=\"sans-serif\" aria-label=\"{t}\">\n<text x=\"{LEFT}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{t}</text>\n",
        t = xml_escape(title)
    );
    let step = nice_step(max);
    let ticks = (max / step).round().max(1.0) as u32;
    for i in 0..=ticks {
        let v = step * f64::from(i);
        let y = y_of(v, max);
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
            W - RIGHT,
            LEFT - 4.0,
            y + 3.0,
            fmt_num(v)
        );
    }
    let mid = TOP + plot_h() / 2.0;
    let _ = writeln!(
        s,
        "<text x=\"12\" y=\"{mid:.1}\" font-size=\"10\" transform=\"rotate(-90 12 {mid:.1})\">{}</text>",
        xml_escape(unit)
    );
    for (i, name) in series.iter().enumerate() {
        let x = LEFT + LEGEND_COL * (i % LEGEND_PER_ROW) as f64;
        let y = LEGEND_Y + LEGEND_ROW * (i / LEGEND_PER_ROW) as f64;
        let shown: String = if name.chars().count() > LEGEND_CHARS {
            let head: String = name.chars().take(LEGEND_CHARS - 1).collect();
            format!("{head}…")
        } else {
            name.clone()
        };
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y:.1}\" font-size=\"11\"><title>{}</title>{}</text>",
            y - 9.0,
            color(i),
            x + 14.0,
            xml_escape(name),
            xml_escape(&shown)
        );
    }
    s
}

fn x_label(s: &mut String, x: f64, label: &str) {
    let _ = writeln!(
        s,
        "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
        H - BOTTOM + 14.0,
        xml_escape(label)
    );
}

fn rect(s: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str, tip: &str) {
    let _ = writeln!(
        s,
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\"><title>{}</title></rect>",
        xml_escape(tip)
    );
}

/// Grouped bars: one group per x label, one bar per series.
pub fn bars(title: &str, unit: &str, groups: &[(String, Vec<(String, f64)>)]) -> String {
    let groups: Vec<RangedGroup> = groups
        .iter()
        .map(|(l, v)| {
            (
                l.clone(),
                v.iter().map(|(n, x)| (n.clone(), *x, None)).collect(),
            )
        })
        .collect();
    bars_with_ranges(title, unit, &groups)
}

/// A group of bars: its label, and per series the bar's value (the
/// median) with the runs' min–max when there were several.
pub type RangedGroup = (String, Vec<(String, f64, Option<(f64, f64)>)>);

/// Grouped bars with error bars: each bar's range drawn as a line with
/// caps from min to max.
pub fn bars_with_ranges(title: &str, unit: &str, groups: &[RangedGroup]) -> String {
    let series = unique(groups.iter().flat_map(|(_, v)| v.iter().map(|(n, ..)| n)));
    let values = groups
        .iter()
        .flat_map(|(_, v)| v.iter().map(|(_, x, r)| r.map_or(*x, |(_, hi)| hi.max(*x))));
    let max = nice_max(values.fold(0.0_f64, f64::max));
    let mut s = frame(title, unit, max, &series);
    let group_w = plot_w() / groups.len().max(1) as f64;
    let bar_w = group_w * 0.8 / series.len().max(1) as f64;
    for (gi, (label, vals)) in groups.iter().enumerate() {
        let gx = LEFT + group_w * gi as f64 + group_w * 0.1;
        for (name, v, range) in vals {
            let si = series.iter().position(|x| x == name).unwrap_or(0);
            let y = y_of(*v, max);
            let tip = match range {
                Some((lo, hi)) => format!(
                    "{label}, {name}: {} (runs {}–{})",
                    fmt_num(*v),
                    fmt_num(*lo),
                    fmt_num(*hi)
                ),
                None => format!("{label}, {name}: {}", fmt_num(*v)),
            };
            let x = gx + bar_w * si as f64;
            rect(
                &mut s,
                x,
                y,
                bar_w * 0.95,
                TOP + plot_h() - y,
                color(si),
                &tip,
            );
            if let Some((lo, hi)) = range {
                let cx = x + bar_w * 0.475;
                let (y_lo, y_hi) = (y_of(*lo, max), y_of(*hi, max));
                let cap = bar_w * 0.2;
                let _ = writeln!(
                    s,
                    "<path class=\"range\" d=\"M{cx:.1} {y_lo:.1}V{y_hi:.1}M{:.1} {y_lo:.1}h{:.1}M{:.1} {y_hi:.1}h{:.1}\" stroke=\"#222\" fill=\"none\"/>",
                    cx - cap,
                    2.0 * cap,
                    cx - cap,
                    2.0 * cap
                );
            }
        }
        x_label(&mut s, gx + group_w * 0.4, label);
    }
    s.push_str("</svg>\n");
    s
}

/// Stacked bars: one bar per x label, its series stacked bottom to top.
pub fn stacked(title: &str, unit: &str, bars: &[(String, Vec<(String, f64)>)]) -> String {
    let series = unique(bars.iter().flat_map(|(_, v)| v.iter().map(|(n, _)| n)));
    let totals = bars
        .iter()
        .map(|(_, v)| v.iter().map(|(_, x)| x).sum::<f64>());
    let max = nice_max(totals.fold(0.0_f64, f64::max));
    let mut s = frame(title, unit, max, &series);
    let slot = plot_w() / bars.len().max(1) as f64;
    for (bi, (label, vals)) in bars.iter().enumerate() {
        let x = LEFT + slot * bi as f64 + slot * 0.2;
        let mut below = 0.0;
        for (si, name) in series.iter().enumerate() {
            let Some((_, v)) = vals.iter().find(|(n, _)| n == name) else {
                continue;
            };
            let (y0, y1) = (y_of(below, max), y_of(below + v, max));
            let tip = format!("{label}, {name}: {}", fmt_num(*v));
            rect(&mut s, x, y1, slot * 0.6, y0 - y1, color(si), &tip);
            below += v;
        }
        x_label(&mut s, x + slot * 0.3, label);
    }
    s.push_str("</svg>\n");
    s
}

/// Lines over time: each series a list of (t seconds, value).
pub fn lines(title: &str, unit: &str, series: &[(String, Vec<(f64, f64)>)]) -> String {
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let points = || series.iter().flat_map(|(_, p)| p.iter());
    let max = points().map(|p| p.1).fold(0.0_f64, f64::max);
    let max = nice_max(max);
    let t_max = nice_max(points().map(|p| p.0).fold(0.0_f64, f64::max));
    let mut s = frame(title, unit, max, &names);
    let x_of = |t: f64| LEFT + plot_w() * (t / t_max);
    let t_step = nice_step(t_max);
    for i in 0..=(t_max / t_step).round() as u32 {
        let t = t_step * f64::from(i);
        x_label(&mut s, x_of(t), &format!("{}s", fmt_num(t)));
    }
    for (si, (name, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(t, v)| format!("{:.1},{:.1}", x_of(*t), y_of(*v, max)))
            .collect();
        let peak = pts.iter().map(|p| p.1).fold(0.0_f64, f64::max);
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"><title>{}: peak {}</title></polyline>",
            color(si),
            path.join(" "),
            xml_escape(name),
            fmt_num(peak)
        );
        // Each point's value on hover: a transparent mark with a title.
        let every = pts.len().div_ceil(MAX_POINT_MARKS).max(1);
        let mut peak_shown = false;
        for (i, (t, v)) in pts.iter().enumerate() {
            let is_peak = !peak_shown && *v == peak;
            if i % every != 0 && !is_peak {
                continue;
            }
            peak_shown |= *v == peak;
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\" fill-opacity=\"0\"><title>{}, {}s: {}</title></circle>",
                x_of(*t),
                y_of(*v, max),
                color(si),
                xml_escape(name),
                fmt_num(*t),
                fmt_num(*v)
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A series over a sequence of runs: one line per series over the x
/// labels (one per run), a ring on each marked point (series index, x
/// index) with its tooltip.
pub fn sequence(
    title: &str,
    unit: &str,
    labels: &[String],
    series: &[(String, Vec<(usize, f64)>)],
    marks: &[(usize, usize, String)],
) -> String {
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    let max = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(0.0_f64, f64::max);
    let max = if max > 0.0 { max * 1.05 } else { 1.0 };
    let mut s = frame(title, unit, max, &names);
    let step = plot_w() / labels.len().max(1) as f64;
    let x_of = |i: usize| LEFT + step * (i as f64 + 0.5);
    // Every label when they fit, else about eight of them.
    let every = labels.len().div_ceil(8).max(1);
    for (i, l) in labels.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let short: String = l.chars().take(12).collect();
        x_label(&mut s, x_of(i), &short);
    }
    for (si, (name, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(i, v)| format!("{:.1},{:.1}", x_of(*i), y_of(*v, max)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"><title>{}</title></polyline>",
            color(si),
            path.join(" "),
            xml_escape(name)
        );
        for (i, v) in pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"><title>{}, {}: {}</title></circle>",
                x_of(*i),
                y_of(*v, max),
                color(si),
                xml_escape(name),
                xml_escape(labels.get(*i).map_or("", String::as_str)),
                fmt_num(*v)
            );
        }
    }
    for (si, i, tip) in marks {
        let Some((_, pts)) = series.get(*si) else {
            continue;
        };
        let Some((_, v)) = pts.iter().find(|(x, _)| x == i) else {
            continue;
        };
        let _ = writeln!(
            s,
            "<circle class=\"change\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"7\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>{}</title></circle>",
            x_of(*i),
            y_of(*v, max),
            color(*si),
            xml_escape(tip)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use crate::bench::core::charts::{
        LEGEND_ROW, RangedGroup, bars, bars_with_ranges, fmt_num, lines, nice_max, sequence,
        stacked,
    };

    #[test]
    fn a_sequence_draws_a_line_per_series_and_a_ring_per_change_point() {
        let labels: Vec<String> = (0..4).map(|i| format!("run{i}")).collect();
        let series = vec![
            (
                "baseline".to_string(),
                vec![(0, 1.0), (1, 1.0), (2, 2.0), (3, 2.0)],
            ),
            ("jobset".to_string(), vec![(0, 1.5), (1, 1.5), (3, 1.5)]),
        ];
        let svg = sequence("t", "u", &labels, &series, &[(0, 2, "step <×2>".into())]);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("class=\"change\"").count(), 1);
        assert!(svg.contains("step &lt;×2&gt;"), "{svg}");
        assert!(svg.contains("run3"));
    }

    fn count(s: &str, what: &str) -> usize {
        s.matches(what).count()
    }

    #[test]
    fn ranged_bars_draw_one_error_bar_per_ranged_bar() {
        let groups: Vec<RangedGroup> = vec![(
            "smoke".into(),
            vec![
                ("baseline".into(), 100.0, Some((90.0, 130.0))),
                ("jobset".into(), 110.0, None),
            ],
        )];
        let svg = bars_with_ranges("t", "requests", &groups);
        assert_eq!(count(&svg, "class=\"range\""), 1);
        assert!(svg.contains("runs 90–130"), "{svg}");
        // The axis reaches the top of the range, not only the bar.
        assert!(svg.contains("130"), "{svg}");
    }

    #[test]
    fn bars_stacks_and_lines_draw_every_mark_once() {
        let g = vec![
            (
                "a".to_string(),
                vec![("x".to_string(), 3.0), ("y".to_string(), 1.0)],
            ),
            ("b".to_string(), vec![("y".to_string(), 2.0)]),
        ];
        let b = bars("t", "u", &g);
        // 3 bars + 2 legend squares
        assert_eq!(count(&b, "<rect"), 5);
        let s = stacked("t", "u", &g);
        assert_eq!(count(&s, "<rect"), 5);
        // x on the bottom of a's bar, y on top of it: y's rect is higher.
        assert!(s.contains("<title>a, y: 1</title>"));
        let l = lines(
            "cpu <&>",
            "cores",
            &[("jobset".into(), vec![(0.0, 0.5), (10.0, 1.5)])],
        );
        assert_eq!(count(&l, "<polyline"), 1);
        assert!(l.contains("cpu &lt;&amp;&gt;"));
        assert!(l.contains("peak 1.50"));
    }

    #[test]
    fn a_long_legend_gets_rows_of_its_own_below_the_labels_in_distinct_colours() {
        let names: Vec<String> = (0..14)
            .map(|i| format!("system:serviceaccount:kube-system:controller-{i}"))
            .collect();
        let bar = [(
            "baseline".to_string(),
            names.iter().map(|n| (n.clone(), 1.0)).collect(),
        )];
        let one = stacked("t", "u", &bar);
        let few = stacked(
            "t",
            "u",
            &[("baseline".to_string(), vec![("a".to_string(), 1.0)])],
        );
        let height = |s: &str| -> f64 {
            let h = s.split("height=\"").nth(1).unwrap();
            h[..h.find('"').unwrap()].parse().unwrap()
        };
        // 5 rows of 3 instead of 1: 4 more rows.
        assert_eq!(height(&one) - height(&few), 4.0 * LEGEND_ROW);
        // Every legend entry has a place of its own, under the x labels.
        let places: Vec<&str> = one
            .lines()
            .filter(|l| l.starts_with("<rect x=") && l.contains("width=\"10\""))
            .map(|l| &l[..l.find(" width").unwrap()])
            .collect();
        assert_eq!(places.len(), 14);
        let unique: std::collections::BTreeSet<_> = places.iter().collect();
        assert_eq!(unique.len(), 14, "{places:?}");
        let colours: std::collections::BTreeSet<_> = (0..14).map(super::color).collect();
        assert_eq!(colours.len(), 14);
        // Long names are cut in the legend, whole in its tooltip.
        assert!(one.contains(&format!("<title>{}</title>", names[0])));
        assert!(one.contains("system:serviceaccount:kube-…"));
    }

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(3.1), 4.0);
        assert_eq!(nice_max(37.0), 40.0);
        assert_eq!(nice_max(41.0), 50.0);
        assert_eq!(nice_max(101.0), 125.0);
        assert_eq!(nice_max(2626.0), 3000.0);
        assert_eq!(nice_max(1990.0), 2000.0);
        assert_eq!(nice_max(0.33), 0.4);
        for v in [0.33, 3.1, 41.0, 101.0, 2626.0, 77777.0] {
            assert_eq!(nice_max(nice_max(v)), nice_max(v), "{v}");
        }
        let svg = bars("t", "u", &[("g".into(), vec![("a".into(), 2626.0)])]);
        for tick in ["0", "1000", "2000", "3000"] {
            assert!(svg.contains(&format!(">{tick}</text>")), "{svg}");
        }
    }

    #[test]
    fn every_line_point_has_its_value_on_hover() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i), f64::from(i * i))).collect();
        let svg = lines("t", "u", &[("cpu".into(), pts)]);
        assert_eq!(svg.matches("<circle ").count(), 10, "{svg}");
        assert!(svg.contains("<title>cpu, 3s: 9</title>"), "{svg}");
        // A long line: every 4th point of 1000, and its peak (the last).
        let long: Vec<(f64, f64)> = (0..1000).map(|i| (f64::from(i), f64::from(i))).collect();
        let svg = lines("t", "u", &[("x".into(), long)]);
        assert_eq!(svg.matches("<circle ").count(), 251, "{svg}");
        assert!(svg.contains("<title>x, 999s: 999</title>"));
    }

    #[test]
    fn numbers() {
        assert_eq!(fmt_num(3.0), "3");
        assert_eq!(fmt_num(0.256), "0.26");
        assert_eq!(fmt_num(12.34), "12.3");
    }
}
