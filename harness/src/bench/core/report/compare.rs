//! The Markdown and JUnit renderings of a `--compare`: each metric's
//! verdict against the stored baseline.

use std::fmt::Write;
use std::path::Path;

use crate::bench::core::charts::fmt_num;
use crate::bench::core::compare::Verdict;
use crate::output::{JunitCase, JunitSuite, junit_xml};

/// The verdict table under a heading, the rule, and whether the
/// machine-bound figures were judged (`timing`: Ok(why) or Err(why not),
/// from `bench::core::gate`).
pub fn compare_markdown(
    verdicts: &[Verdict],
    baseline: &Path,
    timing: &Result<String, String>,
) -> String {
    use crate::bench::core::compare::Status;
    let count = |st: Status| verdicts.iter().filter(|v| v.status == st).count();
    let failed = verdicts.iter().filter(|v| !v.pass).count();
    let mut also = Vec::new();
    for (st, what) in [
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
            "Rule: a metric's band is what its recorded runs measured (highest ÷ median); it regressed when the {:.0} % interval of run ÷ baseline (Welch t on the logs of the recorded runs and the run's: the ratio of their geometric means; on the values where one is 0; with one run, the recorded runs' spread stands for both) lies above 1 + band and the change exceeds its minimum effect and noise floor ({}); pods, containers, objects and the Thor identity's writes must stay in their recorded range; a request-latency p99 is judged only when {} requests or more lie above it ({} in its class) in every run. The intervals shown are against the recorded runs themselves.\n",
            crate::stats::CONFIDENCE * 100.0,
            crate::bench::core::result::RULE_TEXT,
            crate::bench::core::thin::MIN_ABOVE,
            crate::bench::core::thin::MIN_REQUESTS
        );
    }
    let _ = match timing {
        Ok(why) => writeln!(
            s,
            "Latencies, times, CPU and the counts that follow the machine's timing: judged — {why}.\n"
        ),
        Err(why) => writeln!(
            s,
            "Latencies, times, CPU and the counts that follow the machine's timing: shown, not judged — {why}.\n"
        ),
    };
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
            match (v.pass, v.status) {
                (false, _) => "**REGRESSION**",
                (true, Status::Improved) => "lower",
                (true, Status::NotCompared) => "not compared",
                (true, Status::NotInBaseline) => "new",
                _ => "ok",
            },
            v.note
        );
    }
    s
}

pub fn compare_junit(verdicts: &[Verdict]) -> String {
    let cases = verdicts
        .iter()
        .map(|v| {
            let c = JunitCase::new(format!("compare.{}", v.mode), &v.metric);
            if v.pass { c } else { c.failed(&v.note) }
        })
        .collect();
    junit_xml(&[JunitSuite {
        name: "harness bench compare".into(),
        time: Some(0.0),
        cases,
    }])
}
