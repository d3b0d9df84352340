//! `harness tools install|list`: find or build the binaries, and show where
//! each was found.

use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use harness::error::bad_input;
use harness::k8s::K8sRelease;
use harness::tools::{Component, Resolver};

use crate::cli::args::Format;
use crate::cli::args::parse_bins;

#[derive(Subcommand, Debug)]
pub enum ToolsCommand {
    /// Resolve every binary, building from Go modules what is missing.
    Install(ToolsInstallArgs),
    /// Show where each binary was found (builds nothing).
    List(ToolsListArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ToolsArgs {
    /// Kubernetes minor (1.37, 1.36) or its pinned patch version
    /// [default: 1.37; with --provider kind and --config: the config's].
    #[arg(long)]
    pub k8s_version: Option<String>,
    /// Use this binary: NAME=PATH (NAME: etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kubectl, kwok,
    /// jobset-controller). Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
}

impl ToolsArgs {
    /// `--k8s-version`, or the default minor.
    pub fn k8s_version(&self) -> &str {
        self.k8s_version
            .as_deref()
            .unwrap_or(harness::k8s::DEFAULT_K8S_MINOR)
    }
}

#[derive(Args, Debug)]
pub struct ToolsInstallArgs {
    #[command(flatten)]
    pub tools: ToolsArgs,
    /// Only these binaries (default: all). Repeatable.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ToolsListArgs {
    #[command(flatten)]
    pub tools: ToolsArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn resolver(args: &ToolsArgs) -> Result<Resolver> {
    let k8s = K8sRelease::parse(args.k8s_version())?;
    Ok(Resolver::from_env(k8s, parse_bins(&args.bins)?))
}

pub async fn run(c: ToolsCommand) -> Result<i32> {
    match c {
        ToolsCommand::Install(args) => tools_install(&args).await,
        ToolsCommand::List(args) => tools_list(&args),
    }
}

async fn tools_install(args: &ToolsInstallArgs) -> Result<i32> {
    let r = resolver(&args.tools)?;
    let wanted: Vec<Component> = if args.only.is_empty() {
        Component::ALL.to_vec()
    } else {
        args.only
            .iter()
            .map(|n| {
                Component::from_name(n).ok_or_else(|| {
                    bad_input(format!(
                        "--only {n}: unknown binary; one of {}",
                        Component::ALL.map(|c| c.name()).join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    let mut rows = Vec::new();
    for c in wanted {
        let r = r.clone();
        let started = Instant::now();
        let resolved = tokio::task::spawn_blocking(move || r.resolve(c))
            .await
            .context("tool resolution panicked")??;
        rows.push((resolved, started.elapsed()));
    }
    println!(
        "{:<24} {:<9} {:<7} {:>8}  PATH",
        "BINARY", "VERSION", "SOURCE", "TIME"
    );
    for (r, took) in rows {
        println!(
            "{:<24} {:<9} {:<7} {:>7.1}s  {}",
            r.component,
            r.version,
            r.source.to_string(),
            took.as_secs_f64(),
            r.path.display()
        );
    }
    Ok(0)
}

fn tools_list(args: &ToolsListArgs) -> Result<i32> {
    let r = resolver(&args.tools)?;
    let mut rows = Vec::new();
    let mut missing = 0;
    for c in Component::ALL {
        match r.find(c) {
            Ok(found) => rows.push(serde_json::json!({
                "binary": c.name(), "wanted": c.version(r.k8s), "found": found.version,
                "source": found.source, "path": found.path, "skipped": found.skipped,
            })),
            Err(skipped) => {
                missing += 1;
                rows.push(serde_json::json!({
                    "binary": c.name(), "wanted": c.version(r.k8s), "found": null,
                    "source": null, "path": null, "skipped": skipped,
                }))
            }
        }
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Text => {
            println!(
                "{:<24} {:<9} {:<9} {:<7} PATH",
                "BINARY", "PINNED", "FOUND", "SOURCE"
            );
            for row in &rows {
                println!(
                    "{:<24} {:<9} {:<9} {:<7} {}",
                    row["binary"].as_str().unwrap_or_default(),
                    row["wanted"].as_str().unwrap_or_default(),
                    row["found"].as_str().unwrap_or("-"),
                    row["source"].as_str().unwrap_or("-"),
                    row["path"]
                        .as_str()
                        .unwrap_or("(missing: `harness tools install` builds it)"),
                );
                for s in row["skipped"].as_array().into_iter().flatten() {
                    println!("{:<24} note: {}", "", s.as_str().unwrap_or_default());
                }
            }
            if missing > 0 {
                println!(
                    "\n{missing} binary(ies) missing; `harness tools install --k8s-version {}` builds them",
                    r.k8s.minor
                );
            }
        }
    }
    Ok(0)
}
