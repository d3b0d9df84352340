//! The Markdown and JUnit renderings of a `--compare`: each metric's
//! verdict against the stored baseline (compare.md), and what a reader
//! needs first (compare-summary.md: report.html opens with it, the
//! workflows put it in the job summary).

use std::fmt::Write;

use crate::bench::core::charts::fmt_num;
use crate::bench::core::figures;
use crate::bench::core::metric::Spec;
use crate::bench::core::verdict::model::{Comparison, Reason, Status, Verdict};
use crate::output::{JunitCase, JunitSuite, junit_xml};

/// The summary's file name in an out dir.
pub const SUMMARY: &str = "compare-summary.md";

/// The verdict table under a heading, the rule, and where it was judged
/// (`timing`: Ok(why) or Err(why not), from `bench::core::gate`).
pub fn compare_markdown(c: &Comparison) -> String {
    let (verdicts, baseline) = (&c.verdicts, &c.baseline);
    let count = |st: Status| verdicts.iter().filter(|v| v.status == st).count();
    let failed = verdicts.iter().filter(|v| !v.pass()).count();
    let mut also = Vec::new();
    for (st, what) in [
        (Status::Withheld, "withheld here"),
        (Status::Improved, "lower"),
        (Status::NotCompared, "mode(s) not compared"),
        (Status::NotInBaseline, "metric(s) not in the baseline"),
    ] {
        if count(st) > 0 {
            also.push(format!("{} {what}", count(st)));
        }
    }
    let mut s = format!(
        "\n### Compared with {}: {}{}\n\n",
        baseline.display(),
        if failed == 0 {
            "no regressions".to_string()
        } else {
            format!("{failed} regression(s)")
        },
        if also.is_empty() {
            String::new()
        } else {
            format!("; {}", also.join(", "))
        }
    );
    if verdicts.iter().any(|v| v.judged.is_some()) {
        let _ = writeln!(
            s,
            "Rule: on the baseline's own machine, and for what the workload alone drives, a metric's band is what its recorded runs measured (highest ÷ median); it regressed when the {:.0} % interval of run ÷ baseline (Welch t on the logs of the recorded runs and the run's: the ratio of their geometric means; on the values where one is 0; with one run, the recorded runs' spread stands for both) lies above 1 + band and the change exceeds its minimum effect and noise floor ({}). Off that machine, what the pace or the clock drives regressed when the run's mean lies past what a machine not seen yet may show — the machines' centre plus z standard deviations of a random-effects prediction (machine-to-machine spread at its 95 % upper bound from the machines the baseline holds), z for a {:.0} % chance that any metric judged so falls out on unchanged code — and past the same minimum effect and floor; it is withheld when that allowance is wider than +{:.0} % (counts, sizes) or +{:.0} % (times) and the floor. A request class, client or call no run of any machine made is a regression from {} a run. {} must stay in their recorded range; a request-latency p99 is judged only when {} requests or more lie above it ({} in its class) in every run. The intervals shown are against the recorded runs themselves.\n",
            crate::stats::CONFIDENCE * 100.0,
            crate::bench::core::result::RULE_TEXT,
            crate::bench::core::verdict::judge::FAMILY_ALPHA * 100.0,
            crate::bench::core::verdict::judge::MUST_SEE_COUNT * 100.0,
            crate::bench::core::verdict::judge::MUST_SEE_TIME * 100.0,
            crate::bench::core::verdict::judge::NEW_CLASS_FLOOR,
            capitalized(c.in_range),
            crate::bench::core::thin::MIN_ABOVE,
            crate::bench::core::thin::MIN_REQUESTS
        );
    }
    s.push_str(&place(c));
    s.push('\n');
    s.push_str("| mode | metric | baseline | now | verdict |\n|---|---|---:|---:|---|\n");
    let num = |x: f64| {
        if x.is_finite() {
            fmt_num(x)
        } else {
            "—".into()
        }
    };
    for v in verdicts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} {} |",
            v.mode,
            v.metric,
            num(v.baseline),
            v.current.map_or("—".into(), num),
            match (v.pass(), v.status) {
                (false, _) => "**REGRESSION**",
                (true, Status::Improved) => "lower",
                (true, Status::NotCompared) => "not compared",
                (true, Status::NotInBaseline) => "new",
                (true, Status::Withheld) => "withheld",
                _ => "ok",
            },
            v.note()
        );
    }
    s
}

pub fn compare_junit(verdicts: &[Verdict]) -> String {
    let cases = verdicts
        .iter()
        .map(|v| {
            let c = JunitCase::new(format!("compare.{}", v.mode), &v.metric);
            if v.pass() { c } else { c.failed(v.note()) }
        })
        .collect();
    junit_xml(&[JunitSuite {
        name: "harness bench compare".into(),
        time: Some(0.0),
        cases,
    }])
}

/// Where the comparison judged, and against what.
fn place(c: &Comparison) -> String {
    let mut s = match &c.timing {
        Ok(why) => format!(
            "Judged on the baseline's own machine: every metric against its recorded runs — {why}.\n"
        ),
        Err(why) => format!(
            "Not the baseline's machine, or not quiet ({why}): what the workload alone drives (objects, creates, an identity's writes, its planned calls) is judged against the recorded runs; what its pace or the clock drives against what a machine not seen yet may show, predicted from {}.\n",
            match c.machines.len() {
                0 | 1 => "the recording machine alone — which says nothing of another, so those verdicts are withheld (add runs of other machines with `--record-band`)".to_string(),
                n => format!(
                    "the {n} machines the baseline holds ({}), family-wise over the metrics judged so",
                    c.machines.join("; ")
                ),
            }
        ),
    };
    s.push_str("Counts the clock drives (lease renewals and their watch events) are compared per second of their window.\n");
    if c.counts_only {
        s.push_str("Latencies, times and CPU: shown, not judged (--counts-only).\n");
    }
    s
}

/// "pods, …" → "Pods, …".
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or(String::new(), |f| {
        f.to_uppercase().collect::<String>() + c.as_str()
    })
}

/// What a family's member names follow (its key before the member).
fn family_prefix(spec: &Spec) -> &'static str {
    spec.key.split_once("{}").map_or(spec.key, |(pre, _)| pre)
}

/// What moved behind a regressed row: for a client's requests, its
/// requests by verb × resource that grew most; for a total, the clients
/// that grew most and theirs. From the rows' medians (baseline → now).
fn behind(v: &Verdict, c: &Comparison) -> String {
    let all = &c.verdicts;
    // A client's requests, and its requests by verb and resource
    // ("client: verb resource").
    let by_client = family_prefix(&figures::BY_CLIENT);
    let by_request = family_prefix(&figures::BY_CLIENT_REQUEST);
    let grew = |prefix: &str, within: &dyn Fn(&str) -> bool| {
        let mut rows: Vec<(&str, f64, f64)> = all
            .iter()
            .filter(|x| x.mode == v.mode && !x.per_second)
            .filter_map(|x| {
                let name = x.metric.strip_prefix(prefix)?;
                let now = x.current?;
                let was = if x.baseline.is_finite() {
                    x.baseline
                } else {
                    0.0
                };
                (within(name) && now > was).then_some((name, was, now))
            })
            .collect();
        rows.sort_by(|a, b| (b.2 - b.1).total_cmp(&(a.2 - a.1)));
        rows.truncate(2);
        rows
    };
    let requests_of = |client: &str| {
        let pre = format!("{client}: ");
        grew(by_request, &|n: &str| n.starts_with(&pre))
            .into_iter()
            .map(|(n, was, now)| {
                format!(
                    "`{}` {} → {}",
                    n.strip_prefix(&pre).unwrap_or(n),
                    fmt_num(was),
                    fmt_num(now)
                )
            })
            .collect::<Vec<_>>()
    };
    // etcd's writes are the API's writes: the clients' write requests
    // that grew most stand behind them.
    if v.metric == figures::ETCD_WRITES.key || v.metric == figures::ETCD_BYTES.key {
        let writes: Vec<String> = grew(by_request, &|n: &str| {
            n.split_once(": ").is_some_and(|(_, req)| {
                ["create ", "update ", "patch ", "delete "]
                    .iter()
                    .any(|w| req.starts_with(w))
            })
        })
        .into_iter()
        .map(|(n, was, now)| format!("`{n}` {} → {}", fmt_num(was), fmt_num(now)))
        .collect();
        return if writes.is_empty() {
            String::new()
        } else {
            format!(
                " — the write requests that grew most: {}",
                writes.join(", ")
            )
        };
    }
    if let Some(client) = v.metric.strip_prefix(by_client) {
        let r = requests_of(client);
        return if r.is_empty() {
            String::new()
        } else {
            format!(" — its requests that grew most: {}", r.join(", "))
        };
    }
    if c.request_totals.contains(&v.metric.as_str()) {
        let clients: Vec<String> = grew(by_client, &|_| true)
            .into_iter()
            .map(|(c, was, now)| {
                let r = requests_of(c);
                format!(
                    "`{c}` {} → {}{}",
                    fmt_num(was),
                    fmt_num(now),
                    if r.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", r.join(", "))
                    }
                )
            })
            .collect();
        if !clients.is_empty() {
            return format!(" — the clients that grew most: {}", clients.join("; "));
        }
    }
    String::new()
}

/// What a reader needs first: the verdict, what regressed and who is
/// behind it (client, verb × resource), what could not be judged here
/// and why, and what would give a verdict.
pub fn summary(c: &Comparison) -> String {
    let regressed: Vec<&Verdict> = c.verdicts.iter().filter(|v| !v.pass()).collect();
    let withheld: Vec<&Verdict> = c
        .verdicts
        .iter()
        .filter(|v| v.status == Status::Withheld)
        .collect();
    let judged = c.verdicts.iter().filter(|v| v.judged_here()).count();
    let mut s = format!(
        "## Compared with `{}`: {}\n\n",
        c.baseline.display(),
        match (regressed.len(), withheld.len()) {
            (0, 0) => format!("no regressions ({judged} metrics judged)"),
            (0, w) => format!(
                "no regressions among {judged} judged; {w} could not be judged here (exit {})",
                crate::error::EXIT_UNJUDGED
            ),
            (r, 0) => format!("{r} regression(s) ({judged} metrics judged)"),
            (r, w) => format!("{r} regression(s) ({judged} judged); {w} could not be judged here"),
        }
    );
    s.push_str(&place(c));
    s.push('\n');
    if !regressed.is_empty() {
        s.push_str("**Regressed**\n\n");
        for v in &regressed {
            let _ = writeln!(
                s,
                "- {} `{}`: {} → {}: {}{}",
                v.mode,
                v.metric,
                fmt_num(v.baseline),
                v.current.map_or("—".into(), fmt_num),
                v.note(),
                behind(v, c)
            );
        }
        s.push('\n');
    }
    if !withheld.is_empty() {
        let _ = writeln!(s, "**Could not be judged here** ({}):\n", withheld.len());
        // One line per kind of reason, its metrics named.
        let mut by_why: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for v in &withheld {
            let why = match &v.reason {
                Reason::Withheld { why, .. } => why.headline(),
                _ => v.note(),
            };
            by_why
                .entry(why)
                .or_default()
                .push(format!("{} `{}`", v.mode, v.metric));
        }
        for (why, names) in by_why {
            let shown: Vec<&String> = names.iter().take(6).collect();
            let _ = writeln!(
                s,
                "- {why}: {}{}",
                shown
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if names.len() > shown.len() {
                    format!(" and {} more", names.len() - shown.len())
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(
            s,
            "\nWhat gives a verdict for them here: {}, or a baseline of this machine (record the reference build here with `--record`, then `--compare` your change); more machines in the baseline's band narrow what a new machine may show (`--record-band`). Each row of compare.md says the smallest change it could have seen here.",
            c.here
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::core::metric::MetricKind;

    fn row(metric: &str, was: f64, now: f64, status: Status, note: &str) -> Verdict {
        let mut v = Verdict::new(
            "jobset",
            metric,
            MetricKind::Count,
            status,
            Reason::Workload(note.into()),
        );
        v.baseline = was;
        v.current = Some(now);
        v
    }

    /// A row withheld for `why`.
    fn withheld(metric: &str, why: crate::bench::core::verdict::model::Unjudgeable) -> Verdict {
        let mut v = row(metric, 30.0, 31.0, Status::Withheld, "");
        v.reason = Reason::Withheld {
            why,
            could_see: Some(1.2),
        };
        v
    }

    fn too_wide() -> crate::bench::core::verdict::model::Unjudgeable {
        crate::bench::core::verdict::model::Unjudgeable::TooWide {
            allowance: crate::bench::core::verdict::model::Allowance {
                up: 0.8,
                down: 0.44,
                centre: 30.0,
                width: 24.0,
                machines: 3,
                runs: 50,
                pooled: true,
                z: 3.9,
                family: 200,
            },
            must_see: 0.5,
            floor: 5.0,
            needed: Some(7),
        }
    }

    /// The rule's list of what must stay in range is the workload's:
    /// Thor's words as compare.md always printed them.
    #[test]
    fn the_rule_names_what_the_workload_fixes() {
        use crate::bench::core::result::Run;
        let mut v = row("pods_created", 10.0, 10.0, Status::Ok, "");
        v.judged = Some(crate::stats::Judged {
            ratio: crate::stats::Ratio {
                ratio: 1.0,
                ci_low: 1.0,
                ci_high: 1.0,
                n: 3,
                paired: false,
            },
            verdict: crate::stats::Direction::Same,
            p_value: None,
            method: None,
            detectable: None,
        });
        let mut c = comparison(vec![v]);
        let measure = compare_markdown(&c);
        assert!(
            measure.contains(". Pods, containers and objects must stay in their recorded range;"),
            "{measure}"
        );
        c.in_range = crate::bench::thor::result::ModeResult::IN_RANGE;
        let thor = compare_markdown(&c);
        assert!(
            thor.contains(". Pods, containers, objects and the Thor identity's writes must stay in their recorded range; a request-latency p99"),
            "{thor}"
        );
    }

    fn comparison(verdicts: Vec<Verdict>) -> Comparison {
        Comparison {
            baseline: "baselines/local/1.37/smoke.json".into(),
            verdicts,
            timing: Err("another machine".into()),
            machines: Vec::new(),
            counts_only: false,
            in_range: "pods, containers and objects",
            // The rows below are Thor's.
            request_totals: <crate::bench::thor::result::ModeResult as crate::bench::core::result::Run>::REQUEST_TOTALS,
            here: <crate::bench::thor::result::ModeResult as crate::bench::core::result::Run>::HERE,
        }
    }

    #[test]
    fn the_summary_names_the_client_its_request_and_what_was_withheld() {
        let c = comparison(vec![
            row(
                "api_requests_others",
                226.0,
                261.0,
                Status::Regressed,
                "higher",
            ),
            row(
                "api_requests_by_client.jobset-controller",
                23.0,
                58.0,
                Status::Regressed,
                "higher",
            ),
            row(
                "api_requests_by_client_request.jobset-controller: list jobsets",
                0.0,
                35.0,
                Status::Regressed,
                "higher",
            ),
            row(
                "api_requests_by_client_request.jobset-controller: update jobsets/status",
                17.0,
                18.0,
                Status::Ok,
                "ok",
            ),
            row(
                "etcd_writes_total",
                199.0,
                233.0,
                Status::Regressed,
                "higher",
            ),
            row(
                "api_requests_by_client_request.jobset-controller: update jobs",
                4.0,
                38.0,
                Status::Ok,
                "ok",
            ),
            withheld("wall_s", too_wide()),
            withheld("instance_start_ms.p99", too_wide()),
        ]);
        assert_eq!(c.exit_code(), crate::error::EXIT_FAILED);
        let s = summary(&c);
        assert!(
            s.contains("4 regression(s)") && s.contains("2 could not be judged here"),
            "{s}"
        );
        assert!(
            s.contains("the clients that grew most: `jobset-controller` 23 → 58 (`list jobsets` 0 → 35, `update jobs` 4 → 38)"),
            "{s}"
        );
        assert!(
            s.contains("its requests that grew most: `list jobsets` 0 → 35, `update jobs` 4 → 38"),
            "{s}"
        );
        assert!(
            s.contains(
                "the write requests that grew most: `jobset-controller: update jobs` 4 → 38"
            ),
            "{s}"
        );
        // One line per kind of reason, grouped by the reason itself.
        assert!(
            s.contains("- what a machine not seen yet may show, from the 3 machines the baseline holds, is wider than the +50 % they must be seen at: jobset `wall_s`, jobset `instance_start_ms.p99`"),
            "{s}"
        );
        assert!(s.contains("What gives a verdict for them"), "{s}");
        // Nothing regressed, something withheld: exit 4.
        let c = comparison(vec![withheld(
            "wall_s",
            crate::bench::core::verdict::model::Unjudgeable::OneMachine,
        )]);
        assert_eq!(c.exit_code(), crate::error::EXIT_UNJUDGED);
        assert!(summary(&c).contains("(exit 4)"));
        assert_eq!(
            comparison(vec![row("x", 1.0, 1.0, Status::Ok, "ok")]).exit_code(),
            0
        );
    }
}
