//! `harness status`: every cluster (or one) with the health of each
//! component.

use anyhow::Result;
use clap::Args;
use harness::cluster::Cluster;
use harness::error;

use crate::cli::args::Format;

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Only this cluster.
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// Print every cluster (or one) with each component's health; exit 1
/// when any is unhealthy.
pub async fn status(args: &StatusArgs) -> Result<i32> {
    let names = match &args.name {
        Some(n) => vec![n.clone()],
        None => harness::cluster::state::list_dirs()?,
    };
    let mut all_healthy = true;
    let mut report = Vec::new();
    let mut half_made = Vec::new();
    for name in &names {
        let dir = harness::cluster::state::cluster_dir(name);
        if dir.is_dir() && !dir.join("state.json").exists() {
            half_made.push(name.clone());
            all_healthy = false;
            continue;
        }
        let c = harness::cluster::AnyCluster::load(name)?;
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
    match args.format {
        Format::Json => {
            let v: Vec<_> = report
                .iter()
                .map(|(c, h, ok)| {
                    serde_json::json!({
                        "name": c.name(), "provider": c.provider(),
                        "k8s_version": c.k8s_version(), "kubeconfig": c.kubeconfig(),
                        "healthy": ok, "components": h,
                    })
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Text => {
            if report.is_empty() && half_made.is_empty() {
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
