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

/// The network built-image clusters share, made when missing. Two
/// clusters coming up at once may both find it missing: the one whose
/// `network create` loses ("already exists") finds it there on a second
/// look and goes on; any other failure is the error.
pub async fn ensure_network(docker: &Path) -> Result<()> {
    let inspect = command::Cmd::new(docker, &["network", "inspect", BUILT_NETWORK]);
    if command::output(&inspect).await?.status.success() {
        return Ok(());
    }
    let made = command::run(&command::Cmd::new(
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
    .await;
    let Err(e) = made else {
        return Ok(());
    };
    if !format!("{e:#}").contains("already exists") {
        return Err(e.context(format!("creating docker network {BUILT_NETWORK}")));
    }
    // The other create holds the name before the network can be inspected
    // (the CI of f5b4ea7: the second look, at once, found none): looked
    // for until it is there.
    crate::poll::Poll::new(
        format!("docker network {BUILT_NETWORK}, made by another cluster's start"),
        std::time::Duration::from_secs(30),
    )
    .every(std::time::Duration::from_millis(200))
    .until(|| async {
        Ok(command::output(&inspect)
            .await?
            .status
            .success()
            .then_some(()))
    })
    .await
    .with_context(|| format!("creating docker network {BUILT_NETWORK}: {e:#}"))
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
/// containerd, in the `k8s.io` namespace the kubelet uses. With
/// `content_named` (a reference whose tag is a digest of the image's
/// content), a node that has that reference already is left as it is.
/// How many nodes it was imported into.
pub async fn load_archive(
    docker: &Path,
    nodes: &[String],
    archive: &Path,
    content_named: Option<&str>,
) -> Result<usize> {
    let mut loaded = 0;
    for n in nodes {
        if let Some(name) = content_named
            && node_has(docker, n, name).await?
        {
            tracing::debug!("{n} has {name} already");
            continue;
        }
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
        loaded += 1;
    }
    Ok(loaded)
}

/// Does node `n`'s containerd (namespace k8s.io) have image `name`?
async fn node_has(docker: &Path, n: &str, name: &str) -> Result<bool> {
    let out = tokio::process::Command::new(docker)
        .envs(crate::tools::engine::env())
        .args(["exec", n, "ctr", "--namespace=k8s.io", "images", "ls", "-q"])
        .arg(format!("name=={name}"))
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("listing the images of node {n}"))?;
    if !out.status.success() {
        bail!(
            "listing the images of node {n} failed ({}):\n{}",
            out.status,
            command::tail(&out, 10)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::kind::fakes::FakeCommands;

    /// A docker whose network is there while file `made` exists and whose
    /// `network create` runs `create` (sh built-ins).
    fn docker(made: &Path, create: &str) -> String {
        let made = made.display();
        format!(
            r#"case "$1 $2" in
  "network inspect") [ -e '{made}' ] ;;
  "network create") {create} ;;
  *) exit 2 ;;
esac
"#
        )
    }

    #[tokio::test]
    async fn a_network_made_by_a_cluster_starting_at_the_same_time_is_used() {
        let (tmp, fakes) = FakeCommands::healthy_in_temp_dir();
        let made = tmp.path().join("made");
        // The other cluster's create lands between our look and our create.
        let lost = format!(
            ": > '{}'; printf 'Error response from daemon: network with name harness-kind already exists\\n' >&2; exit 1",
            made.display()
        );
        fakes.script("docker", &docker(&made, &lost));
        ensure_network(&fakes.dir.join("docker")).await.unwrap();
        let calls = fakes.calls();
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(calls[1].starts_with("docker network create"), "{calls:?}");
        assert_eq!(calls[2], "docker network inspect harness-kind");
    }

    #[tokio::test]
    async fn a_create_that_fails_with_no_network_after_it_is_the_error() {
        let (tmp, fakes) = FakeCommands::healthy_in_temp_dir();
        let made = tmp.path().join("made");
        let fails = "printf 'Error response from daemon: no space left\\n' >&2; exit 1";
        fakes.script("docker", &docker(&made, fails));
        let e = ensure_network(&fakes.dir.join("docker")).await.unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("creating docker network harness-kind"),
            "{text}"
        );
        assert!(text.contains("no space left"), "{text}");
    }

    #[tokio::test]
    async fn a_network_already_there_is_not_made_again() {
        let (tmp, fakes) = FakeCommands::healthy_in_temp_dir();
        let made = tmp.path().join("made");
        std::fs::write(&made, "").unwrap();
        fakes.script("docker", &docker(&made, "exit 1"));
        ensure_network(&fakes.dir.join("docker")).await.unwrap();
        assert_eq!(fakes.calls(), ["docker network inspect harness-kind"]);
    }
}
