//! A run set saved by `bench thor --out`, read back: for `report
//! history` and for `bench thor --from`, which judges or records saved
//! runs instead of running again.

use std::path::Path;

use anyhow::Result;

use crate::bench::thor::result::ThorResult;
use crate::bench::thor::runs::model_of;
use crate::error::bad_input;
use crate::workload::thor::scenario::ThorScenario;

/// The result `bench thor --out` wrote (`Results::read`).
pub fn read_result(p: &Path, what: &str) -> Result<ThorResult> {
    ThorResult::read(p, what)
}

/// The runs saved in `dir` (`bench thor --from`), refused unless they ran
/// `scenario` as given now (`--set` included): its name and every model
/// setting the result recorded (kubectl, kubelet, linger, DNS hostnames,
/// the control plane's limits…), so saved runs are judged or recorded
/// only as what they were.
pub fn matching(dir: &Path, scenario: &ThorScenario) -> Result<ThorResult> {
    let r = read_result(dir, "--from")?;
    if r.scenario != scenario.name {
        return Err(bad_input(format!(
            "--from {}: its runs are of scenario {:?}, not {:?}",
            dir.display(),
            r.scenario,
            scenario.name
        )));
    }
    let want = model_of(scenario);
    let differ: Vec<String> = want
        .iter()
        .filter(|(k, v)| r.model.get(*k) != Some(*v))
        .map(|(k, v)| {
            format!(
                "{k}: saved {}, scenario {v}",
                r.model.get(k).map_or("(none)", String::as_str)
            )
        })
        .collect();
    if !differ.is_empty() {
        return Err(bad_input(format!(
            "--from {}: its runs differ from the scenario as given (edit it or --set to match): {}",
            dir.display(),
            differ.join("; ")
        )));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::thor::result::sample_result;
    use crate::workload::thor::scenario;

    fn smoke() -> ThorScenario {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        scenario::load(&root.join("suites/thor/smoke.yaml")).unwrap()
    }

    fn saved(r: &ThorResult) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("result.json"),
            serde_json::to_string(r).unwrap(),
        )
        .unwrap();
        d
    }

    #[test]
    fn saved_runs_are_taken_only_as_the_scenario_they_ran() {
        let s = smoke();
        let mut r = sample_result(1000, 10.0);
        r.scenario = s.name.clone();
        r.model = model_of(&s);
        let d = saved(&r);
        assert_eq!(matching(d.path(), &s).unwrap().modes.len(), 1);
        // The same runs against the scenario with a longer linger.
        let mut longer = s.clone();
        longer.thor.linger_period = "18s".into();
        let e = matching(d.path(), &longer).unwrap_err().to_string();
        assert!(e.contains("linger_period: saved 5s, scenario 18s"), "{e}");
        // Another scenario's runs.
        r.scenario = "medium".into();
        let e = matching(saved(&r).path(), &s).unwrap_err().to_string();
        assert!(e.contains("scenario \"medium\", not \"smoke\""), "{e}");
        // No result there: bad input naming the file.
        let empty = tempfile::tempdir().unwrap();
        let e = matching(empty.path(), &s).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("result.json"), "{e}");
    }
}
