//! Which workload recorded a stored baseline, read from the baseline
//! itself: one `harness measure --record` wrote names its workload in
//! `scenario` (`bench::measure::result::BASELINE_PREFIX`), any other is
//! the Thor benchmark's. Its metrics and the modes it may hold are that
//! workload's (`Run::metrics`, `Run::known_mode`); the core, which knows
//! no workload, is handed them from here.

use std::path::Path;

use anyhow::Result;

use crate::bench::core::baseline::{self, Baseline};
use crate::bench::core::figures::RunFigures;
use crate::bench::core::metric::Spec;
use crate::bench::core::result::{Run, specs};
use crate::bench::measure::result::BASELINE_PREFIX;
use crate::bench::thor::result::ModeResult;
use crate::schema::Finding;
use crate::schema::typed::Ctx;

/// Whether `harness measure --record` wrote `b`.
pub fn is_measure(b: &Baseline) -> bool {
    b.scenario.starts_with(BASELINE_PREFIX)
}

/// The metrics of the workload that recorded `b`: a `measure` baseline's
/// are the figures every run has, any other is the Thor benchmark's.
pub fn specs_of(b: &Baseline) -> Vec<Spec> {
    match is_measure(b) {
        true => specs::<RunFigures>(),
        false => specs::<ModeResult>(),
    }
}

/// Whether `b` may hold `mode`: a `measure` baseline's modes are its
/// variants (any), any other's the Thor benchmark's modes.
pub fn known_mode(b: &Baseline, mode: &str) -> bool {
    match is_measure(b) {
        true => RunFigures::known_mode(mode),
        false => ModeResult::known_mode(mode),
    }
}

/// Load and check a baseline, its modes those of the workload that
/// recorded it.
pub fn load(path: &Path) -> Result<Baseline> {
    baseline::load_with(path, known_mode)
}

/// Decode and check one baseline document, its modes those of the
/// workload that recorded it (`harness validate`).
pub fn check(ctx: &Ctx<'_>, v: &serde_json::Value) -> (Option<Baseline>, Vec<Finding>) {
    baseline::check(ctx, v, known_mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(scenario: &str) -> Baseline {
        let r = crate::bench::thor::result::sample_result(100, 10.0);
        baseline::from_result(&r, scenario)
    }

    /// A Thor baseline holds Thor's modes; a `measure` one any variant.
    #[test]
    fn the_recording_workload_says_which_modes_a_baseline_holds() {
        let thor = baseline("suites/thor/smoke.yaml");
        assert!(thor.problems(known_mode).is_empty());
        assert!(known_mode(&thor, "baseline") && !known_mode(&thor, "variant-a"));
        let mut odd = thor.clone();
        let m = odd.modes.remove("baseline").unwrap();
        odd.modes.insert("variant-a".into(), m);
        let found = odd.problems(known_mode);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, "unknown mode \"variant-a\"");
        assert!(odd.problems(baseline::any_mode).is_empty());
        odd.scenario = format!("{BASELINE_PREFIX}w: true");
        assert!(is_measure(&odd) && odd.problems(known_mode).is_empty());
        let keys = |v: Vec<Spec>| v.iter().map(|s| s.key).collect::<Vec<_>>();
        assert_eq!(keys(specs_of(&odd)), keys(specs::<RunFigures>()));
    }
}
