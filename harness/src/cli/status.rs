//! `harness status`: every cluster (or one) with the health of each
//! component.

use anyhow::Result;
use clap::Args;
use harness::cluster::Cluster;
use harness::error;

use crate::cli::args::{ExistingArgs, Format};
use crate::cli::provider::ProviderName;

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Only this cluster.
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// local: the clusters this machine's harness started; existing: the
    /// cluster of --kubeconfig, probed for what `bench thor` needs.
    #[arg(long, value_enum, default_value = "local")]
    pub provider: ProviderName,
    #[command(flatten)]
    pub existing: ExistingArgs,
    /// The scenario whose needs an existing cluster is probed for.
    #[arg(long, default_value = "suites/thor/smoke.yaml")]
    pub scenario: std::path::PathBuf,
}

/// An existing cluster: its API server's health, the probe's table for
/// the scenario in every mode, what it lacks and what runs left on it.
/// Exit 1 when the API server is not ready, 3 when it lacks something,
/// and nothing is created either way.
async fn existing(args: &StatusArgs) -> Result<i32> {
    let opts = args.existing.options()?;
    let smoke = harness::workload::thor::scenario::load(&args.scenario)?;
    let s = harness::lifecycle::thor::existing::survey(&opts, &smoke).await?;
    let health = s.cluster.health().await;
    let healthy = health.iter().all(|h| h.healthy);
    match args.format {
        Format::Json => {
            let v = serde_json::json!({
                "name": s.cluster.name(), "provider": "existing",
                "kubeconfig": s.cluster.kubeconfig(), "healthy": healthy,
                "components": health, "capabilities": s.caps,
                "missing": s.missing.iter().map(|m| serde_json::json!({"what": m.what, "fix": m.fix})).collect::<Vec<_>>(),
                "runs_left": s.runs_left,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => {
            println!(
                "{} as {} ({}): {}",
                s.cluster.kubeconfig().display(),
                s.cluster.user,
                s.caps.server_version,
                if healthy { "ready" } else { "NOT READY" }
            );
            print!(
                "{}",
                harness::cluster::existing::lacks::table(&s.caps, &s.needs)
            );
            for m in &s.missing {
                println!("LACKS: {}\n  fix: {}", m.what, m.fix);
            }
            for (run, objects) in &s.runs_left {
                println!(
                    "left by run {run}: {} (`kubectl delete namespace,flowschema -l {}={run}`)",
                    objects.join(", "),
                    harness::cluster::existing::labels::RUN_ID_LABEL
                );
            }
        }
    }
    Ok(match (healthy, s.missing.is_empty()) {
        (false, _) => error::EXIT_FAILED,
        (true, false) => error::EXIT_ENV,
        (true, true) => 0,
    })
}

/// Print every cluster (or one) with each component's health; exit 1
/// when any is unhealthy.
pub async fn status(args: &StatusArgs) -> Result<i32> {
    match args.provider {
        ProviderName::Existing if args.name.is_some() => {
            return Err(error::bad_input(
                "--name is for the local provider's clusters",
            ));
        }
        ProviderName::Existing => return existing(args).await,
        ProviderName::Local | ProviderName::Kind if args.existing.any() => {
            return Err(error::bad_input(
                "--kubeconfig and the other existing-cluster flags need --provider existing",
            ));
        }
        // The state registry holds both providers' clusters.
        ProviderName::Local | ProviderName::Kind => {}
    }
    let names = match &args.name {
        Some(n) => vec![n.clone()],
        None => harness::cluster::state::list_dirs()?,
    };
    harness::cluster::state::clean_stale_locks();
    let mut all_healthy = true;
    let mut report = Vec::new();
    let mut half_made = Vec::new();
    let mut damaged = Vec::new();
    for name in &names {
        let dir = harness::cluster::state::cluster_dir(name);
        if dir.is_dir() && std::fs::symlink_metadata(dir.join("state.json")).is_err() {
            half_made.push(name.clone());
            all_healthy = false;
            continue;
        }
        // One damaged state file does not hide the other clusters: it is
        // reported as damaged (exit 1), and `down --name` removes it.
        let c = match harness::cluster::AnyCluster::load(name) {
            Ok(c) => c,
            Err(e) if dir.is_dir() => {
                damaged.push(harness::cluster::state::Damaged {
                    name: name.clone(),
                    why: format!("{e:#}"),
                });
                all_healthy = false;
                continue;
            }
            Err(e) => return Err(e),
        };
        let health = c.health().await;
        let healthy = health.iter().all(|h| h.healthy);
        all_healthy &= healthy;
        report.push((c, health, healthy));
    }
    for name in &half_made {
        eprintln!(
            "{name}: INCOMPLETE — {} has no state.json (a start that died before writing it); `harness down --name {name}` removes it",
            harness::cluster::state::cluster_dir(name).display()
        );
    }
    for d in &damaged {
        eprintln!(
            "{}: DAMAGED — {}; `harness down --name {}` stops what runs from its directory and removes it",
            d.name,
            harness::output::terminal_safe(&d.why),
            d.name
        );
    }
    match args.format {
        Format::Json => {
            let mut v: Vec<_> = report
                .iter()
                .map(|(c, h, ok)| {
                    serde_json::json!({
                        "name": c.name(), "provider": c.provider(),
                        "k8s_version": c.k8s_version(), "kubeconfig": c.kubeconfig(),
                        "healthy": ok, "components": h,
                    })
                })
                .collect();
            v.extend(
                damaged.iter().map(
                    |d| serde_json::json!({"name": d.name, "healthy": false, "damaged": d.why}),
                ),
            );
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => {
            if report.is_empty() && half_made.is_empty() && damaged.is_empty() {
                println!(
                    "no clusters (state dir {})",
                    harness::paths::clusters_dir().display()
                );
            }
            for (c, health, ok) in &report {
                println!(
                    "{} ({} provider, Kubernetes v{}): {}\n  KUBECONFIG={}",
                    c.name(),
                    c.provider(),
                    c.k8s_version(),
                    if *ok { "healthy" } else { "UNHEALTHY" },
                    c.kubeconfig().display()
                );
                for h in health {
                    println!(
                        "  {:<24} pid {:<8} {:<8} {}",
                        h.component,
                        h.pid.map(|p| p.to_string()).unwrap_or_default(),
                        if h.running { "running" } else { "EXITED" },
                        h.health
                    );
                }
                if !ok && let Err(e) = c.diagnose() {
                    eprintln!("{e:#}");
                }
            }
        }
    }
    Ok(if all_healthy { 0 } else { error::EXIT_FAILED })
}
