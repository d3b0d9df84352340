//! Where a binary that is not on the machine (flag, env, PATH, cache)
//! comes from: the official release artifact, a Go build, or the first of
//! the two that works. `--source download|build|auto`, else
//! `HARNESS_SOURCE`, else auto.

use std::str::FromStr;
use std::sync::Mutex;

use anyhow::Result;
use serde::Serialize;

use crate::error::bad_input;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceMode {
    /// Download the release artifact; build from Go modules when it cannot
    /// be had (no network, no artifact for this binary), saying why.
    Auto,
    /// Download only: exit 3 when that fails.
    Download,
    /// Build only: never touch the network for a binary.
    Build,
}

impl SourceMode {
    pub const NAMES: [&'static str; 3] = ["auto", "download", "build"];
}

impl std::fmt::Display for SourceMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SourceMode::Auto => "auto",
            SourceMode::Download => "download",
            SourceMode::Build => "build",
        })
    }
}

impl FromStr for SourceMode {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<SourceMode> {
        match s.trim() {
            "auto" => Ok(SourceMode::Auto),
            "download" => Ok(SourceMode::Download),
            "build" => Ok(SourceMode::Build),
            other => Err(bad_input(format!(
                "{other:?} is not a binary source; one of {}",
                SourceMode::NAMES.join(", ")
            ))),
        }
    }
}

/// `--source` given on this process's command line. The command line
/// parses it once, before any resolver exists; every resolver the process
/// builds from its environment (`up`, the benches, `tools`) then uses it.
static PROCESS_SOURCE: Mutex<Option<SourceMode>> = Mutex::new(None);

/// Record `--source` for this process (wins over `HARNESS_SOURCE`).
pub fn set_process_source(mode: SourceMode) {
    *PROCESS_SOURCE.lock().unwrap_or_else(|e| e.into_inner()) = Some(mode);
}

/// `--source` of this process, else `HARNESS_SOURCE`, else auto. An
/// unknown `HARNESS_SOURCE` is bad input (exit 2), naming the variable.
pub fn process_source() -> Result<SourceMode> {
    if let Some(mode) = *PROCESS_SOURCE.lock().unwrap_or_else(|e| e.into_inner()) {
        return Ok(mode);
    }
    source_from(std::env::var("HARNESS_SOURCE").ok().as_deref())
}

/// The mode an `HARNESS_SOURCE` value names (None or empty: auto).
pub fn source_from(value: Option<&str>) -> Result<SourceMode> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(SourceMode::Auto),
        Some(v) => v
            .parse()
            .map_err(|e| bad_input(format!("HARNESS_SOURCE={v}: {e:#}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_both_ways() {
        for name in SourceMode::NAMES {
            let m: SourceMode = name.parse().unwrap();
            assert_eq!(m.to_string(), name);
        }
        let e = "cache".parse::<SourceMode>().unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("auto, download, build"), "{e}");
    }

    #[test]
    fn the_variable_defaults_to_auto_and_names_itself_when_wrong() {
        assert_eq!(source_from(None).unwrap(), SourceMode::Auto);
        assert_eq!(source_from(Some(" ")).unwrap(), SourceMode::Auto);
        assert_eq!(source_from(Some("build")).unwrap(), SourceMode::Build);
        let e = source_from(Some("mirror")).unwrap_err();
        assert!(e.to_string().contains("HARNESS_SOURCE=mirror"), "{e}");
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
    }
}
