//! The baseline policy: a run set compared with its stored baseline
//! (`baselines/<provider>/<minor>/<scenario>.json`: the verdicts, the
//! machine gate, compare.md and compare-junit.xml), or stored as it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::core::report::compare as report;
use crate::bench::core::result::Results;
use crate::bench::core::result::{Run, specs};
use crate::bench::core::{baseline, compare, gate};

/// A run checked against its stored baseline.
pub struct Comparison {
    pub baseline: PathBuf,
    pub verdicts: Vec<compare::Verdict>,
    /// Ok(why) the machine-bound figures were judged, Err(why) they were
    /// only shown (`bench::core::gate`).
    pub timing: std::result::Result<String, String>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.verdicts.iter().any(|v| !v.pass)
    }
}

/// Compare `r` with `baselines/<provider>/<minor>/<scenario>.json` under
/// `root`. Latencies and the counts that follow the machine's timing are
/// judged only on a quiet machine alike the baseline's (gate),
/// and never with `counts_only`; otherwise they are shown but not judged
/// (compare::counts_only). Writes compare.md and compare-junit.xml into
/// `out`.
pub fn compare<R: Run>(
    root: &Path,
    r: &Results<R>,
    counts_only: bool,
    out: &Path,
) -> Result<Comparison> {
    let path = baseline::path_for(root, r);
    let base = baseline::load(&path)?;
    baseline::same_capabilities(&base, r, &path)?;
    let mut verdicts = compare::compare(&base, r);
    let timing = if counts_only {
        Err("asked with --counts-only".to_string())
    } else {
        gate::machine_gate(&base, r)
    };
    if timing.is_err() {
        compare::counts_only(&specs::<R>(), &mut verdicts);
    }
    let md = report::compare_markdown(&verdicts, &path, &timing);
    crate::output::write_atomic(&out.join("compare.md"), &md)?;
    crate::output::write_atomic(
        &out.join("compare-junit.xml"),
        report::compare_junit(&verdicts),
    )?;
    Ok(Comparison {
        baseline: path,
        verdicts,
        timing,
    })
}

/// Store `r` as the baseline under `root`, naming the scenario file
/// relative to the repository when it lies inside it. Returns the path.
pub fn record<R: Run>(root: &Path, r: &Results<R>, scenario: &Path) -> Result<PathBuf> {
    let path = baseline::path_for(root, r);
    let relative = scenario
        .canonicalize()
        .ok()
        .and_then(|p| {
            p.strip_prefix(root.canonicalize().ok()?)
                .ok()
                .map(Path::to_path_buf)
        })
        .unwrap_or(scenario.to_path_buf());
    baseline::record(&path, r, &relative.display().to_string())?;
    Ok(path)
}
