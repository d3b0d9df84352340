//! `harness image build`: the harness and the binaries a run set needs as
//! one OCI image archive, for rounds on a cluster (`--on-cluster`).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum ImageCommand {
    /// Build the image rounds run in on a cluster (`bench thor|measure
    /// --on-cluster`): the harness with the shared libraries it links,
    /// every binary the local provider starts (found or built here), the
    /// upstream module files it installs from, and the Thor scenarios.
    /// Written as an OCI image layout archive (`ctr images import`,
    /// `docker load` and `kind load image-archive` read it); its name's
    /// tag is a digest of what it holds.
    Build(ImageBuildArgs),
}

#[derive(Args, Debug)]
pub struct ImageBuildArgs {
    /// The Kubernetes minor whose binaries it holds.
    #[arg(long = "k8s-version", default_value = harness::k8s::DEFAULT_K8S_MINOR)]
    pub k8s_version: String,
    /// Also hold Kueue's controller (the jobset-kueue mode and `measure
    /// --kueue` need it).
    #[arg(long)]
    pub kueue: bool,
    /// Also hold Kueue's performance runner (`measure --kueue-perf`).
    #[arg(long)]
    pub kueue_perf: bool,
    /// Where the archive goes [default: the harness's cache, images/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also push it to a registry: REGISTRY/REPOSITORY[:TAG] (the tag
    /// defaults to the image's own, a digest of its content). A loopback
    /// registry is spoken to over HTTP, any other over HTTPS with the
    /// credentials `docker login` stored. Prints the pushed reference,
    /// which `--on-cluster --image` takes.
    #[arg(long, value_name = "REF")]
    pub push: Option<String>,
}

pub async fn run(c: &ImageCommand) -> Result<i32> {
    let ImageCommand::Build(a) = c;
    let release = harness::k8s::K8sRelease::parse(&a.k8s_version)?;
    // Every flag is checked before a binary is resolved or a layer built:
    // the reference (its tag is the image's own unless it names one), and
    // where the archive goes.
    if let Some(r) = &a.push {
        harness::tools::push::parse_reference(r, "latest")?;
    }
    if let Some(out) = &a.out {
        harness::output::check_out("--out", out, harness::output::Out::File, &[])?;
    }
    let root = harness::paths::repo_root(&std::env::current_dir()?).ok_or_else(|| {
        harness::error::bad_input(
            "image build reads the scenarios in suites/thor/: run from inside the repository",
        )
    })?;
    use harness::tools::Component;
    let extra: Vec<Component> = [
        (a.kueue || a.kueue_perf, Component::Kueue),
        (a.kueue_perf, Component::KueuePerfRunner),
    ]
    .into_iter()
    .filter_map(|(want, c)| want.then_some(c))
    .collect();
    let contents = harness::bench::on_cluster::image::contents(release, &extra, &root).await?;
    let dir = a
        .out
        .as_ref()
        .and_then(|o| o.parent().map(PathBuf::from))
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| match &a.out {
            Some(_) => PathBuf::from("."),
            None => harness::paths::cache_dir().join("images"),
        });
    let (archive, name) = harness::bench::on_cluster::image::build(&contents, &dir)?;
    let to = match &a.push {
        Some(r) => match harness::tools::push::parse_reference(
            r,
            name.rsplit(':').next().unwrap_or("latest"),
        ) {
            Ok(to) => Some(to),
            Err(e) => {
                // Nothing half-made is left: the archive goes with the
                // command that failed.
                let _ = std::fs::remove_file(&archive);
                return Err(e);
            }
        },
        None => None,
    };
    let archive = match &a.out {
        Some(out) => {
            if let Err(e) = std::fs::rename(&archive, out) {
                let _ = std::fs::remove_file(&archive);
                return Err(anyhow::Error::new(e).context(format!(
                    "moving {} to {}",
                    archive.display(),
                    out.display()
                )));
            }
            out.clone()
        }
        None => archive,
    };
    eprintln!("wrote {}", archive.display());
    match to {
        Some(to) => {
            let step = harness::progress::Step::start(format!("pushing {name} as {to}"));
            let p = harness::tools::push::push(&archive, &to).await?;
            step.done(&format!(
                "{} blobs sent ({} MB), {} there already; manifest {}",
                p.blobs_sent,
                p.bytes_sent / 1_000_000,
                p.blobs_there,
                p.digest
            ));
            println!("{to}");
        }
        None => println!("{name}"),
    }
    Ok(0)
}
