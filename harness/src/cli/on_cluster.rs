//! `--on-cluster` of `bench thor` and `measure`: a run set's rounds as
//! the pods of an Indexed Job on a cluster the user has
//! (`bench::on_cluster`), the flags both take and what both do once the
//! Job is made — wait for the shards under the one interrupt path, remove
//! the run's namespace, and merge what came back into the result one run
//! gives.

use anyhow::Result;
use clap::Args;
use harness::bench::on_cluster::run;
use harness::bench::saved::Saved;
use harness::cluster::Provider;
use harness::cluster::existing::ExistingOptions;

use crate::cli::interrupt::{Made, or_tear_down};

/// Rounds as the pods of an Indexed Job on a cluster the user has.
#[derive(Args, Debug, Clone)]
pub struct OnClusterArgs {
    /// Run the rounds on the cluster of --kubeconfig as the pods of an
    /// Indexed Job (a namespace of the run's own, removed at the end and
    /// on Ctrl-C), each round with the local provider inside its pod,
    /// unprivileged; each pod's out dir comes back and the shards are
    /// merged here into the result one run gives (then --compare and
    /// --record judge or store it).
    #[arg(long, requires = "kubeconfig")]
    pub on_cluster: bool,
    /// With --on-cluster: how many rounds run at once.
    #[arg(long, default_value_t = 2, requires = "on_cluster",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: u32,
    /// With --on-cluster: the image the pods run, pullable by the nodes
    /// (`harness image build`) [default: built here and loaded into the
    /// nodes — a kind cluster the harness made].
    #[arg(long, requires = "on_cluster")]
    pub image: Option<String>,
    /// With --on-cluster: build the image here, push it to this
    /// REGISTRY/REPOSITORY[:TAG] (as `harness image build --push`) and run
    /// the pods from it: for a cluster whose nodes pull from that registry.
    #[arg(
        long,
        value_name = "REF",
        requires = "on_cluster",
        conflicts_with = "image"
    )]
    pub push: Option<String>,
    /// With --on-cluster: seconds the whole run set may take.
    #[arg(long, default_value_t = 7200, requires = "on_cluster")]
    pub on_cluster_timeout: u64,
    /// In a round's pod: hold the out dir this many seconds until the
    /// caller has collected it.
    #[arg(long, hide = true)]
    pub hold: Option<u64>,
}

/// A round in a pod (`--hold`): run it, and whatever happened hold its
/// out dir and exit code until the caller has collected them.
pub async fn in_pod(
    out: &std::path::Path,
    hold_s: u64,
    round: impl std::future::Future<Output = Result<i32>>,
) -> Result<i32> {
    let code = match round.await {
        Ok(code) => code,
        Err(e) => crate::cli::errors::report(&e),
    };
    harness::bench::on_cluster::collect::hold(out, code, hold_s)
}

/// What can be refused before anything is built or made: a --push
/// reference that is not one (exit 2).
pub fn check(a: &OnClusterArgs) -> Result<()> {
    if let Some(p) = &a.push {
        harness::tools::push::parse_reference(p, "latest")?;
    }
    Ok(())
}

/// The cluster of --kubeconfig, read (exit 2 when it is not a
/// kubeconfig) and its server reached (exit 3, naming the server and the
/// file, within seconds) before anything is built, resolved or written.
pub async fn cluster(target: &crate::cli::provider::ProviderArgs) -> Result<ExistingOptions> {
    let existing = target.existing.options()?;
    harness::cluster::client::reachable(&existing.kubeconfig, existing.context.as_deref()).await?;
    Ok(existing)
}

/// What a built image would hold: found or built here only when the
/// image is built here (no --image); with --image nothing is resolved.
pub async fn contents(
    a: &OnClusterArgs,
    k8s: harness::k8s::K8sRelease,
    extra: &[harness::tools::Component],
    root: &std::path::Path,
) -> Result<harness::bench::on_cluster::image::Contents> {
    match &a.image {
        Some(_) => Ok(harness::bench::on_cluster::image::Contents {
            k8s,
            binaries: Vec::new(),
            modules: Vec::new(),
            files: Vec::new(),
            root: root.to_path_buf(),
        }),
        None => harness::bench::on_cluster::image::contents(k8s, extra, root).await,
    }
}

/// Run `on`'s rounds as a Job, remove its namespace (at the end, or on
/// Ctrl-C/SIGTERM: then Err(exit code)), and merge the shards that came
/// back; a round that did not is a lost round in the merged result.
pub async fn rounds(
    on: &run::OnCluster,
    cluster: ExistingOptions,
) -> Result<std::result::Result<Saved, i32>> {
    let existing = harness::cluster::ExistingTarget {
        cluster,
        run_id: on.run_id.clone(),
        yes: true,
        node_image: String::new(),
    };
    let target = Provider::Existing(existing.clone());
    let collected = match or_tear_down(run::run(on), &target, Made::Prefixed("")).await? {
        Ok(c) => c,
        Err(code) => return Ok(Err(code)),
    };
    existing.cluster.remove_run(&existing.run_id).await?;
    eprintln!("harness: removed namespace {}", collected.namespace);
    if collected.dirs.is_empty() {
        return Err(harness::error::env_missing(
            format!(
                "no round came back from the cluster (indexes failed: {:?})",
                collected.failed
            ),
            "read the logs of the Job's pods: each says what its round did",
        ));
    }
    let dirs: Vec<&std::path::Path> = collected.dirs.iter().map(|d| d.as_path()).collect();
    Ok(Ok(harness::bench::merge::merge_dirs(&dirs)?))
}
