//! The Thor identity's calls against the plan the scenario implies: HPCC's
//! clients poll with a backoff, so how many calls of each purpose a run
//! may make follows from each instance's measured life
//! (`workload::thor::driver::callplan`). Judged of a run set on its own,
//! beside any baseline (`Run::own_verdicts`).

use crate::bench::core::metric::MetricKind;
use crate::bench::core::verdict::model::{Reason, Status, Verdict};
use crate::bench::thor::result::ThorResult;
use crate::stats;
use crate::workload::thor::driver::callplan;

/// The rows' metric prefix of the Thor identity's calls against the
/// scenario's plan.
pub const PLAN_PREFIX: &str = "thor_agent_calls_vs_plan.";

/// The Thor identity's calls by purpose in each run of each mode against
/// the bounds the scenario's plan implies (`callplan`): a row per mode
/// and purpose, regressed when any run is outside. Modes whose runs carry
/// no plan (older results) or had a failed instance say so.
pub fn against_plan(r: &ThorResult) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (mode, s) in &r.modes {
        let runs = s.runs();
        let plans: Vec<Option<_>> = runs
            .iter()
            .map(|x| x.call_plan.as_ref().and_then(callplan::expected))
            .collect();
        if plans.iter().any(Option::is_none) {
            out.push(Verdict::new(
                mode,
                &format!("{PLAN_PREFIX}*"),
                MetricKind::Count,
                Status::NotCompared,
                Reason::Workload(
                    "not compared with the plan: a run had a failed instance or no plan (an older result)".into(),
                ),
            ));
            continue;
        }
        let mut purposes: Vec<String> = callplan::PURPOSES.iter().map(|p| p.to_string()).collect();
        for run in runs {
            purposes.extend(run.thor_agent_calls_by_purpose.keys().cloned());
        }
        purposes.sort();
        purposes.dedup();
        for purpose in purposes {
            let mut outside = Vec::new();
            let mut counts = Vec::new();
            let mut bounds = Vec::new();
            for (i, (run, plan)) in runs.iter().zip(&plans).enumerate() {
                let plan = plan.as_ref().expect("checked above");
                let n = run
                    .thor_agent_calls_by_purpose
                    .get(&purpose)
                    .copied()
                    .unwrap_or(0);
                let [lo, hi] = plan.get(&purpose).copied().unwrap_or([0, 0]);
                counts.push(n as f64);
                bounds.push(format!("{lo}–{hi}"));
                if n < lo || n > hi {
                    outside.push(format!("run {}: {n} outside {lo}–{hi}", i + 1));
                }
            }
            if counts.iter().all(|c| *c == 0.0) && bounds.iter().all(|b| b == "0–0") {
                continue;
            }
            let instances: u32 = runs.iter().map(|x| x.instances).sum();
            let per_instance = counts.iter().sum::<f64>() / f64::from(instances.max(1));
            let pass = outside.is_empty();
            let mut v = Verdict::new(
                mode,
                &format!("{PLAN_PREFIX}{purpose}"),
                MetricKind::Exact,
                if pass { Status::Ok } else { Status::Regressed },
                Reason::Workload(match pass {
                    true => format!(
                        "within the plan ({} per run; {per_instance:.1} per instance)",
                        bounds.join(", ")
                    ),
                    false => format!(
                        "outside the plan the scenario implies: {} ({per_instance:.1} per instance)",
                        outside.join("; ")
                    ),
                }),
            );
            v.current = Some(stats::median(&counts));
            out.push(v);
        }
    }
    out
}
