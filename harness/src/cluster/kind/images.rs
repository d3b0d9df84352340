//! Where a kind cluster's node image comes from: the profile's pinned
//! `kindest/node` (pulled), or one built here (tools/kindnode) when asked
//! or when the pinned one cannot be had; and the docker network clusters
//! of built images share.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cluster::kind::commands::KindTools;
use crate::tools::command;

/// Where the node image (and the controllers' images) come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum KindImages {
    /// The profile's pinned `kindest/node` digest and the release images,
    /// pulled by Docker and the nodes.
    Pulled,
    /// Made here (`tools install --kind`): no registry needed.
    Built,
    /// Pulled when the pinned node image is in the engine or can be
    /// pulled, else built.
    #[default]
    Auto,
}

/// The docker network built-image clusters use: made by the harness with
/// masquerading off (an engine started with `--iptables=false` cannot
/// masquerade, and nothing here leaves the machine), named to kind with
/// KIND_EXPERIMENTAL_DOCKER_NETWORK. Shared by the harness's kind clusters.
pub const BUILT_NETWORK: &str = "harness-kind";
use crate::cluster::kind::config;

/// Which node image `start` uses: None for the profile's pinned one, or
/// the one built here.
pub async fn choose(
    want: KindImages,
    profile: &config::Profile,
    tools: &KindTools,
) -> Result<Option<crate::tools::kindnode::BuiltNode>> {
    let pinned_here = || async {
        let inspect = command::Cmd::new(&tools.docker, &["image", "inspect", &profile.node_image]);
        if command::output(&inspect)
            .await
            .is_ok_and(|o| o.status.success())
        {
            return Ok(());
        }
        let pull = command::Cmd::new(&tools.docker, &["pull", &profile.node_image]);
        match tokio::time::timeout(Duration::from_secs(600), command::output(&pull)).await {
            Ok(Ok(o)) if o.status.success() => Ok(()),
            Ok(Ok(o)) => Err(command::tail(&o, 2).trim().to_string()),
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(_) => Err("no answer within 600 s".to_string()),
        }
    };
    let build = match want {
        KindImages::Pulled => false,
        KindImages::Built => true,
        KindImages::Auto => match pinned_here().await {
            Ok(()) => false,
            Err(why) => {
                eprintln!(
                    "harness: {} cannot be pulled ({why}); building the node image here (--kind-images built)",
                    profile.node_image
                );
                true
            }
        },
    };
    if !build {
        return Ok(None);
    }
    let release = crate::k8s::K8sRelease::parse(&profile.minor)?;
    let node = tokio::task::spawn_blocking(move || crate::tools::kindnode::ensure(release))
        .await
        .context("the node image build panicked")??;
    Ok(Some(node))
}

/// The network built-image clusters share, made when missing.
pub async fn ensure_network(docker: &Path) -> Result<()> {
    let inspect = command::Cmd::new(docker, &["network", "inspect", BUILT_NETWORK]);
    if command::output(&inspect).await?.status.success() {
        return Ok(());
    }
    command::run(&command::Cmd::new(
        docker,
        &[
            "network",
            "create",
            "--driver",
            "bridge",
            "--opt",
            "com.docker.network.bridge.enable_ip_masquerade=false",
            "--label",
            "harness.kind=built-images",
            BUILT_NETWORK,
        ],
    ))
    .await
    .with_context(|| format!("creating docker network {BUILT_NETWORK}"))?;
    Ok(())
}

/// Remove the built-image clusters' network when no container is on it
/// and `others` says no other harness kind cluster is, or may soon be,
/// there (one starting attaches its nodes after `ensure_network`). An
/// absent network is nothing to do.
pub fn release_network(docker: &Path, others: bool) -> Result<()> {
    if others {
        return Ok(());
    }
    let inspect = command::Cmd::new(
        docker,
        &[
            "network",
            "inspect",
            "--format",
            "{{len .Containers}}",
            BUILT_NETWORK,
        ],
    );
    let Ok(out) = command::run_blocking(&inspect) else {
        return Ok(());
    };
    if command::lines(&out).first().map(String::as_str) != Some("0") {
        return Ok(());
    }
    command::run_blocking(&command::Cmd::new(
        docker,
        &["network", "rm", BUILT_NETWORK],
    ))
    .with_context(|| format!("removing docker network {BUILT_NETWORK}"))?;
    Ok(())
}

/// Import an image archive (OCI or docker) into every node's
/// containerd, in the `k8s.io` namespace the kubelet uses.
pub async fn load_archive(docker: &Path, nodes: &[String], archive: &Path) -> Result<()> {
    for n in nodes {
        let file = std::fs::File::open(archive)
            .with_context(|| format!("opening {}", archive.display()))?;
        let out = tokio::process::Command::new(docker)
            .envs(crate::tools::engine::env())
            .args([
                "exec",
                "-i",
                n,
                "ctr",
                "--namespace=k8s.io",
                "images",
                "import",
                "--all-platforms",
                "--digests",
                "-",
            ])
            .stdin(std::process::Stdio::from(file))
            .kill_on_drop(true)
            .output()
            .await
            .with_context(|| format!("loading {} into {n}", archive.display()))?;
        if !out.status.success() {
            bail!(
                "loading {} into node {n} failed ({}):\n{}",
                archive.display(),
                out.status,
                command::tail(&out, 10)
            );
        }
    }
    Ok(())
}
