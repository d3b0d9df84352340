//! A saved result of any benchmark, read back by its schema: `report
//! render` renders it again (renderers only format, so a saved result
//! always gives the same report).

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::measure::result::MeasureResult;
use crate::bench::thor::result::ThorResult;
use crate::error::bad_input;

/// A saved result, by its schema.
pub enum Saved {
    Thor(Box<ThorResult>),
    Measure(Box<MeasureResult>),
    Gang(Box<crate::bench::gang::result::GangResult>),
    Cron(Box<crate::bench::cron::result::CronResult>),
}

/// The file a benchmark's out dir keeps its result in (result.json; a
/// `bench gang` or `bench cron` out dir written before they were
/// workloads of the core: gang-latency.json, cron-load.json), the first
/// found.
fn result_file(dir: &Path) -> PathBuf {
    ["result.json", "gang-latency.json", "cron-load.json"]
        .iter()
        .map(|f| dir.join(f))
        .find(|f| f.is_file())
        .unwrap_or_else(|| dir.join("result.json"))
}

/// The result in `p` (an out dir, or its result.json); bad input naming
/// the file and `what` asked for it when it is missing, broken or of a
/// schema no renderer knows.
pub fn read(p: &Path, what: &str) -> Result<Saved> {
    let file = if p.is_dir() || p.extension().is_none_or(|x| x != "json") {
        result_file(p)
    } else {
        p.to_path_buf()
    };
    let text = crate::input::read(&file)
        .map_err(|e| bad_input(format!("{what}: {}: {e:#}", file.display())))?;
    let at = |e: serde_json::Error| {
        bad_input(format!("{what}: {}: {e}", crate::input::json_at(&file, &e)))
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(at)?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    match schema {
        crate::bench::thor::result::RESULT_SCHEMA => {
            Ok(Saved::Thor(serde_json::from_str(&text).map_err(at)?))
        }
        crate::bench::measure::result::SCHEMA => {
            Ok(Saved::Measure(serde_json::from_str(&text).map_err(at)?))
        }
        crate::bench::gang::result::SCHEMA => {
            Ok(Saved::Gang(serde_json::from_str(&text).map_err(at)?))
        }
        crate::bench::gang::v1::SCHEMA => Ok(Saved::Gang(Box::new(
            crate::bench::gang::v1::read(&text)
                .map_err(|e| bad_input(format!("{what}: {}: {e:#}", file.display())))?,
        ))),
        crate::bench::cron::result::SCHEMA => {
            Ok(Saved::Cron(serde_json::from_str(&text).map_err(at)?))
        }
        crate::bench::cron::v1::SCHEMA => Ok(Saved::Cron(Box::new(
            crate::bench::cron::v1::read(&text).map_err(at)?,
        ))),
        other => Err(bad_input(format!(
            "{what}: {}: schema {other:?} is not a result this harness renders ({})",
            file.display(),
            [
                crate::bench::thor::result::RESULT_SCHEMA,
                crate::bench::measure::result::SCHEMA,
                crate::bench::gang::result::SCHEMA,
                crate::bench::gang::v1::SCHEMA,
                crate::bench::cron::result::SCHEMA,
                crate::bench::cron::v1::SCHEMA,
            ]
            .join(", ")
        ))),
    }
}

impl Saved {
    /// Judge the saved runs again by today's rule and metrics
    /// (`crate::stats`, the metric declarations): the statistics of a
    /// metric declared since the result was saved, derived from its runs
    /// (the figures it has keep the values it was saved with), each mode's
    /// ratios to the reference and the statistics block's method
    /// (every workload: Thor, measure, gang, cron). The runs themselves are kept as they were measured.
    pub fn rejudge(&mut self) -> Result<()> {
        fn again<R: crate::bench::core::result::Run>(
            r: &mut crate::bench::core::result::Results<R>,
        ) {
            for sum in r.modes.values_mut() {
                let fresh = crate::bench::core::result::summarize(sum.repeats.clone());
                for (k, v) in fresh.stats {
                    sum.stats.entry(k).or_insert(v);
                }
                for (k, v) in fresh.spread_pct {
                    sum.spread_pct.entry(k).or_insert(v);
                }
            }
            r.judge_modes();
            if let Some(st) = r.statistics.as_mut() {
                let fresh =
                    crate::bench::core::result::Statistics::new(st.seed, Vec::new(), String::new());
                st.method = fresh.method;
                st.resamples = fresh.resamples;
                st.confidence = fresh.confidence;
                st.bootstrap_seed = fresh.bootstrap_seed;
            }
        }
        match self {
            Saved::Thor(r) => again(r.as_mut()),
            Saved::Measure(r) => again(&mut r.figures),
            Saved::Gang(r) => again(r.as_mut()),
            Saved::Cron(r) => again(r.as_mut()),
        }
        Ok(())
    }

    /// report.md's text.
    pub fn markdown(&self) -> String {
        match self {
            Saved::Thor(r) => crate::bench::core::report::markdown::markdown(r),
            Saved::Measure(r) => crate::bench::measure::report::markdown(r),
            Saved::Gang(r) => crate::bench::core::report::markdown::markdown(r),
            Saved::Cron(r) => crate::bench::core::report::markdown::markdown(r),
        }
    }

    /// Every file a run set writes (result.json, report.md, junit.xml,
    /// report.html) into `dir`.
    pub fn write_all(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        match self {
            Saved::Thor(r) => crate::bench::core::report::files::write_all(r.as_ref(), dir),
            Saved::Measure(r) => crate::bench::measure::report::write_all(r, dir),
            Saved::Gang(r) => crate::bench::core::report::files::write_all(r.as_ref(), dir),
            Saved::Cron(r) => crate::bench::core::report::files::write_all(r.as_ref(), dir),
        }
    }

    /// report.md and junit.xml written into `dir`.
    pub fn write_reports(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let junit = match self {
            Saved::Thor(r) => crate::bench::core::report::markdown::junit(r),
            Saved::Measure(r) => crate::bench::core::report::markdown::junit(&r.figures),
            Saved::Cron(r) => crate::bench::core::report::markdown::junit(r),
            Saved::Gang(r) => crate::bench::core::report::markdown::junit(r),
        };
        let files = [("report.md", self.markdown()), ("junit.xml", junit)];
        let mut out = Vec::new();
        for (name, text) in files {
            let p = dir.join(name);
            crate::output::write_atomic(&p, text)?;
            out.push(p);
        }
        Ok(out)
    }
}
