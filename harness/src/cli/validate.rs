//! `harness validate`: the offline checks, printed in the chosen format.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use harness::error::{self, bad_input};

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Files or directories (default: kind-configs/, manifests/, suites/,
    /// baselines/ of the repository).
    pub paths: Vec<PathBuf>,
    /// The repository root (default: found from the current directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: ValidateFormat,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidateFormat {
    Human,
    Json,
    Junit,
    Markdown,
}

pub fn validate(args: &ValidateArgs) -> Result<i32> {
    let root = match &args.root {
        Some(r) => r.clone(),
        None => {
            let cwd = std::env::current_dir()?;
            harness::paths::repo_root(&cwd).ok_or_else(|| {
                bad_input(format!(
                    "{} is not inside the harness repository (no Cargo.toml with manifests/ above it); pass --root",
                    cwd.display()
                ))
            })?
        }
    };
    let report = harness::validate::run(&root, &args.paths)?;
    let text = match args.format {
        ValidateFormat::Human => harness::validate::report::human(&report),
        ValidateFormat::Json => harness::validate::report::json(&report),
        ValidateFormat::Junit => harness::validate::report::junit(&report),
        ValidateFormat::Markdown => harness::validate::report::markdown(&report),
    };
    print!("{text}");
    Ok(if report.ok() { 0 } else { error::EXIT_FAILED })
}
