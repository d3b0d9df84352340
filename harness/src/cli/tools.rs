//! `harness tools install|list`: find, download or build the binaries, and
//! show where each was found; `harness doctor`: where each would come from
//! right now, and what the kind provider would find.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use harness::error::{bad_input, env_missing};
use harness::k8s::K8sRelease;
use harness::tools::doctor::{ToolsReport, Way, diagnose};
use harness::tools::source::set_process_source;
use harness::tools::{Component, Resolver, SourceMode};

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
    /// Kubernetes minor (1.37, 1.36; 1.38 is a pre-release) or its pinned patch version
    /// [default: 1.37; with --provider kind and --config: the config's].
    #[arg(long)]
    pub k8s_version: Option<String>,
    /// Use this binary: NAME=PATH (NAME: etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kubectl, kwok,
    /// jobset-controller). Repeatable.
    #[arg(long = "bin", value_name = "NAME=PATH")]
    pub bins: Vec<String>,
    /// Where a binary found nowhere on the machine comes from: download
    /// (the release artifact, SHA-256 verified; exit 3 when it cannot),
    /// build (from Go modules; never downloads) or auto (download, else
    /// build, saying why) [default: auto].
    #[arg(long, value_name = "download|build|auto", env = "HARNESS_SOURCE", value_parser = source_flag)]
    pub source: Option<SourceMode>,
}

/// Parse `--source` (or `HARNESS_SOURCE`) and make it this process's
/// source: `up` and the benches build their resolvers from the process
/// environment, below the command line.
fn source_flag(s: &str) -> std::result::Result<SourceMode, String> {
    let mode: SourceMode = s.parse().map_err(|e: anyhow::Error| e.to_string())?;
    set_process_source(mode);
    Ok(mode)
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
    /// Also build the kind node image of --k8s-version here (a Debian root
    /// filesystem, the binaries, the images kubeadm runs; for machines
    /// that reach no registry), cached by content. Needs a Docker engine
    /// and, the first time, root for debootstrap.
    #[arg(long)]
    pub kind: bool,
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
    let mut r = Resolver::from_env(k8s, parse_bins(&args.bins)?);
    if let Some(mode) = args.source {
        r.source = mode;
    }
    if let Some(problem) = &r.invalid_env {
        return Err(bad_input(problem.clone()));
    }
    Ok(r)
}

pub async fn run(c: ToolsCommand) -> Result<i32> {
    match c {
        ToolsCommand::Install(args) => tools_install(&args).await,
        ToolsCommand::List(args) => tools_list(&args),
    }
}

async fn tools_install(args: &ToolsInstallArgs) -> Result<i32> {
    let r = resolver(&args.tools)?;
    let wanted: Vec<Component> = if args.only.is_empty() && args.kind {
        harness::tools::kindnode::components()
    } else if args.only.is_empty() {
        Component::for_users()
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
    // What is missing is built side by side, the biggest first.
    let rows = {
        let r = r.clone();
        tokio::task::spawn_blocking(move || r.resolve_many(&wanted))
            .await
            .context("tool resolution panicked")??
    };
    println!(
        "{:<24} {:<9} {:<10} {:>8}  PATH",
        "BINARY", "VERSION", "SOURCE", "TIME"
    );
    for (r, took) in rows {
        println!(
            "{:<24} {:<9} {:<10} {:>7.1}s  {}",
            r.component,
            r.version,
            r.source.to_string(),
            took.as_secs_f64(),
            r.path.display()
        );
    }
    harness::cluster::kind::commands::link_tools(r.k8s)?;
    if args.kind {
        let k8s = r.k8s;
        let started = Instant::now();
        let node = tokio::task::spawn_blocking(move || harness::tools::kindnode::ensure(k8s))
            .await
            .context("the node image build panicked")??;
        if node.timings.is_empty() {
            println!("kind node image {} (cached)", node.image);
        } else {
            let steps: Vec<String> = node
                .timings
                .iter()
                .map(|(what, s)| format!("{what} {s:.1} s"))
                .collect();
            println!(
                "kind node image {} built in {:.1} s ({})",
                node.image,
                started.elapsed().as_secs_f64(),
                steps.join(", ")
            );
        }
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

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub tools: ToolsArgs,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// `harness doctor`: exit 0 when everything the local provider runs can be
/// had, 3 (saying what to install) otherwise.
pub async fn doctor(args: &DoctorArgs) -> Result<i32> {
    let r = resolver(&args.tools)?;
    let report = tokio::task::spawn_blocking(move || diagnose(&r, &Component::for_users()))
        .await
        .context("the doctor's checks panicked")?;
    let kind =
        harness::cluster::kind::doctor::checks(harness::install::hpcc::find_helm().ok()).await;
    // helm is HPCC's installer's; debootstrap only builds node images.
    let kind_ready = kind
        .iter()
        .filter(|k| k.program != "helm" && k.program != "debootstrap")
        .all(|k| k.ok);
    let node_images: Vec<String> = harness::k8s::K8S_RELEASES
        .iter()
        .map(|r| match harness::tools::kindnode::find_built(*r) {
            Some(image) => format!("{}: {image}", r.minor),
            None => format!(
                "{}: none built yet (`harness tools install --kind --k8s-version {}`)",
                r.minor, r.minor
            ),
        })
        .collect();
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "tools": &report,
                "local_ready": report.local_ready(),
                "kind_provider": &kind,
                "kind_ready": kind_ready,
                "kind_node_images_built": &node_images,
                "inotify_instances": harness::inotify::instances().map(|i| serde_json::json!({
                    "limit": i.limit,
                    "in_use": i.in_use,
                    "local_cluster_needs": harness::inotify::LOCAL.instances,
                    "kind_two_node_cluster_needs": harness::inotify::kind_need(2).instances,
                })),
                "fixes": report.fixes(),
            }))?
        ),
        Format::Text => print_doctor(&report, &kind, kind_ready, &node_images),
    }
    if report.local_ready() {
        return Ok(0);
    }
    let fixes = report.fixes();
    Err(env_missing(
        fixes.first().cloned().unwrap_or_default(),
        fixes[1..].join("; "),
    ))
}

fn print_doctor(
    report: &ToolsReport,
    kind: &[harness::cluster::kind::doctor::ProgramCheck],
    kind_ready: bool,
    node_images: &[String],
) {
    let mirror = report
        .download_base
        .as_deref()
        .map_or("the release hosts".to_string(), |b| {
            format!("the mirror {b}")
        });
    println!(
        "Kubernetes {}; binaries the machine lacks: --source {} (downloads from {mirror})\n",
        report.k8s_version, report.source
    );
    println!(
        "{:<24} {:<8} {:<9} {:>12}  DETAIL",
        "BINARY", "VERSION", "FROM", "TAKES"
    );
    for c in &report.components {
        let takes = match (c.way, c.estimate_s) {
            (Way::Found | Way::Cached, _) => "now".to_string(),
            (Way::Download, _) => "download".to_string(),
            (Way::Build, Some(s)) => format!(
                "≈ {}",
                harness::tools::doctor::human_duration(Duration::from_secs(s))
            ),
            (Way::Build, None) => "≈ minutes".to_string(),
            (Way::Missing, _) => "-".to_string(),
        };
        let role = match Component::from_name(c.binary) {
            _ if c.needed_for_local => "",
            Some(Component::Kueue) => " (up --kueue, Thor's jobset-kueue mode)",
            Some(Component::HpccKubectl) => " (Thor bench only)",
            Some(n) if Component::NODE.contains(&n) => " (up --real-node; kind node image)",
            Some(n) if Component::KIND.contains(&n) => " (kind node image built here)",
            _ => "",
        };
        println!(
            "{:<24} {:<8} {:<9} {:>12}  {}{role}",
            c.binary,
            c.version,
            c.way.to_string(),
            takes,
            c.detail
        );
    }
    let go = &report.go;
    println!(
        "\nGo toolchain: {} {} ({})",
        go.path
            .as_deref()
            .map_or("-".into(), |p| p.display().to_string()),
        go.version.as_deref().unwrap_or("-"),
        go.note
    );
    // One line per download host: the first answer about it.
    let mut hosts = std::collections::BTreeMap::new();
    for c in &report.components {
        if let Some(url) = &c.download.url {
            let host = url.split('/').nth(2).unwrap_or(url).to_string();
            hosts.entry(host).or_insert_with(|| {
                if c.download.reachable {
                    "reachable".to_string()
                } else {
                    c.download.note.clone()
                }
            });
        }
    }
    for (host, state) in hosts {
        println!("release downloads from {host}: {state}");
    }
    println!(
        "\nkind provider: {}",
        if kind_ready { "ready" } else { "not ready" }
    );
    for k in kind {
        println!(
            "  {:<8} {:<4} {}{}",
            k.program,
            if k.ok { "ok" } else { "NO" },
            k.path
                .as_deref()
                .map_or(String::new(), |p| format!("{}: ", p.display())),
            k.detail.replace('\n', "\n           ")
        );
    }
    for line in node_images {
        println!("  node image {line}");
    }
    if let Some(i) = harness::inotify::instances() {
        use harness::inotify::{ADVISED, LOCAL, kind_need, raise};
        let kind = kind_need(2).instances;
        println!(
            "\ninotify instances (fs.inotify.max_user_instances): {} of {} in use by this user; \
             room for about {} local clusters or {} two-node kind clusters ({} and {} each){}",
            i.in_use,
            i.limit,
            i.free() / LOCAL.instances,
            i.free() / kind,
            LOCAL.instances,
            kind,
            if i.limit < ADVISED {
                format!("; kind's known issues advise {ADVISED} (`{}`)", raise())
            } else {
                String::new()
            }
        );
    }
    println!(
        "\nlocal provider: {}",
        if report.local_ready() {
            "every binary can be had"
        } else {
            "NOT every binary can be had (see below)"
        }
    );
}
