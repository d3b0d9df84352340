//! The baseline policy: a run set compared with its stored baseline
//! (`baselines/<provider>/<minor>/<scenario>.json`: the verdicts, the
//! machine gate, compare.md and compare-junit.xml), or stored as it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::core::baseline;
use crate::bench::core::baseline::KnownMode;
use crate::bench::core::report::compare as report;
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;
use crate::bench::core::verdict::band::Machines;
use crate::bench::core::verdict::compare::{self as walk, compare_at};
use crate::bench::core::verdict::place::{self, Place};

pub use crate::bench::core::verdict::model::Comparison;

/// Compare `r` with `baselines/<provider>/<minor>/<scenario>.json` under
/// `root`: every metric against its recorded runs on the baseline's own
/// machine, quiet (`verdict::place`); elsewhere what the pace or the
/// clock drives against what a machine not seen yet may show, from the
/// machines the baseline holds (`verdict::compare_at`). With `counts_only` latencies, times and CPU
/// are shown, not judged. Writes compare.md, compare-summary.md and
/// compare-junit.xml into `out`. The baseline's modes are checked by
/// `known` (`bench::recorded::known_mode`: its workload's).
pub fn compare<R: Run>(
    root: &Path,
    r: &Results<R>,
    counts_only: bool,
    out: &Path,
    known: KnownMode,
) -> Result<Comparison> {
    let path = baseline::path_for(root, r);
    let base = baseline::load_with(&path, known)?;
    baseline::same_capabilities(&base, r, &path)?;
    let timing = place::machine_gate(&base, r);
    let at = Place {
        unlike: timing.clone().err(),
    };
    let mut verdicts = compare_at(&base, r, &at);
    if counts_only {
        walk::counts_only(&mut verdicts);
    }
    let c = Comparison {
        baseline: path,
        verdicts,
        timing,
        machines: Machines::of(&base).labels,
        counts_only,
        in_range: R::IN_RANGE,
        request_totals: R::REQUEST_TOTALS,
        here: R::HERE,
    };
    write(&c, out)?;
    Ok(c)
}

/// compare.md (every row), compare-summary.md (what a reader needs
/// first: report.html opens with it, the workflows' job summary shows it)
/// and compare-junit.xml of `c`, into `out`.
pub fn write(c: &Comparison, out: &Path) -> Result<()> {
    crate::output::write_atomic(&out.join("compare.md"), report::compare_markdown(c))?;
    crate::output::write_atomic(&out.join(report::SUMMARY), report::summary(c))?;
    crate::output::write_atomic(
        &out.join("compare-junit.xml"),
        report::compare_junit(&c.verdicts),
    )
}

/// Add `r`'s runs to the band across machines and loads of its stored
/// baseline (`--record-band`); the file is written atomically. Returns
/// the path and the condition added. The baseline's modes are checked by
/// `known`.
pub fn record_band<R: Run>(
    root: &Path,
    r: &Results<R>,
    known: KnownMode,
) -> Result<(PathBuf, crate::bench::core::across::Condition)> {
    let path = baseline::path_for(root, r);
    let mut base = baseline::load_with(&path, known)?;
    baseline::same_capabilities(&base, r, &path)?;
    crate::bench::core::across::derive_by_driver(&mut base);
    let c = crate::bench::core::across::add(&mut base, r)
        .map_err(|e| crate::error::bad_input(format!("{}: {e}", path.display())))?;
    crate::output::write_atomic(&path, serde_json::to_string_pretty(&base)? + "\n")?;
    Ok((path, c))
}

/// Store `r` as the baseline under `root`, naming the scenario file
/// relative to the repository when it lies inside it; the band across
/// machines of the one it replaces is kept when that one loads (its
/// modes checked by `known`). Returns the path.
pub fn record<R: Run>(
    root: &Path,
    r: &Results<R>,
    scenario: &Path,
    known: KnownMode,
) -> Result<PathBuf> {
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
    let mut b = baseline::from_result(r, &relative.display().to_string());
    if let Ok(old) = baseline::load_with(&path, known)
        && !old.across.is_empty()
    {
        if old.recorded == b.recorded {
            // The same recorded runs again (a metric declared since): the
            // band's runs stay, for every metric they had.
            b.across = old.across.clone();
            for (mode, metrics) in b.modes.iter_mut() {
                for (name, m) in metrics.iter_mut() {
                    if let Some(o) = old.modes.get(mode).and_then(|ms| ms.get(name)) {
                        m.across = o.across.clone();
                    }
                }
            }
        } else {
            eprintln!(
                "harness: {}: its band across machines and loads ({} condition(s)) is not kept — it was measured beside other recorded runs; add runs to it again with --record-band",
                path.display(),
                old.across.len()
            );
        }
    }
    crate::bench::core::across::derive_by_driver(&mut b);
    crate::output::write_atomic(&path, serde_json::to_string_pretty(&b)? + "\n")?;
    Ok(path)
}
