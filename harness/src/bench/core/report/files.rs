//! What a run set writes into its out dir: result.json (the contract),
//! report.md, junit.xml, report.html, and the timelines beside them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bench::core::report::cost::write_timelines;
use crate::bench::core::report::markdown::{html, html_led, junit, markdown};
use crate::bench::core::result::Results;
use crate::bench::core::result::Run;

/// Write result.json, report.md, junit.xml and report.html into `out`
/// (and the timelines, when the run has them).
pub fn write_all<R: Run>(r: &Results<R>, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let files = [
        ("result.json", serde_json::to_string_pretty(r)? + "\n"),
        ("report.md", markdown(r)),
        ("junit.xml", junit(r)),
        ("report.html", html(std::slice::from_ref(r))),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let p = out.join(name);
        crate::output::write_atomic(&p, text)?;
        written.push(p);
    }
    write_timelines(r, out)?;
    if !r.timelines.is_empty() {
        written.extend([out.join("timeline.json"), out.join("timeline.csv")]);
    }
    Ok(written)
}

/// result.json and the timelines so far: after every run, so a later
/// failure loses nothing.
pub fn save_progress<R: Run>(r: &Results<R>, out: &Path) -> Result<()> {
    crate::output::write_atomic(
        &out.join("result.json"),
        serde_json::to_string_pretty(r)? + "\n",
    )?;
    write_timelines(r, out)
}

/// report.html again, opening with a comparison's summary (`--compare`).
pub fn lead_with<R: Run>(r: &Results<R>, out: &Path, summary: &str) -> Result<PathBuf> {
    let p = out.join("report.html");
    crate::output::write_atomic(&p, html_led(std::slice::from_ref(r), summary))?;
    Ok(p)
}
