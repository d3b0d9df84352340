//! A run set's rounds as an Indexed Job on a cluster the user has
//! (`--on-cluster --kubeconfig FILE`): the image (given, or built here and
//! loaded into the nodes of a kind cluster the harness made), a namespace
//! of the run's own, the Job (`job`), each pod's out dir brought back as
//! its shard finishes (`collect`), the namespace removed at the end —
//! after Ctrl-C too, by the one interrupt path (everything carrying the
//! run id). The caller merges the shards (`bench::merge`); a round whose
//! index failed for good is a lost round there.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::bench::on_cluster::collect::{self, Asked};
use crate::bench::on_cluster::image::{self, Contents};
use crate::bench::on_cluster::job::{self, JOB, JobPlan, Size};
use crate::cluster::{AnyCluster, Cluster};
use crate::error::{bad_input, env_missing};

/// A run set on a cluster.
pub struct OnCluster {
    pub kubeconfig: PathBuf,
    pub context: Option<String>,
    /// The run's id: its namespace and Job carry it.
    pub run_id: String,
    /// An image the nodes can run; None: build it here and load it into
    /// the nodes (a kind cluster the harness made), or push it (`push`).
    pub image: Option<String>,
    /// Build the image here and push it there (REGISTRY/REPOSITORY[:TAG]);
    /// the pods run it from there.
    pub push: Option<String>,
    /// What a built image holds.
    pub contents: Contents,
    pub shards: u32,
    pub parallel: u32,
    /// The harness's arguments for one shard (`--shard index/N`).
    pub args: Vec<String>,
    pub size: Size,
    /// Where each shard's out dir comes back: `<out>/shards/<index>`.
    pub out: PathBuf,
    /// How long the whole run set may take.
    pub timeout: Duration,
    /// The caller's files the rounds read, by their path under
    /// `job::INPUTS_DIR` (the ConfigMap `job::INPUTS`).
    pub inputs: Vec<(String, Vec<u8>)>,
}

/// A pod's requests and limits for a run set of `workers` Thor workers
/// (0 for `measure`): a local cluster's processes in the pod. The Thor
/// smoke's were measured at 1.2 GiB of peak RSS summed over every process
/// (kind-results/local, 2026-11-27) and 35 CPU-seconds over a 50-second
/// mode (0.7 cores); 1.5 GiB plus 4 MiB per worker is asked for, twice that
/// is the limit, and one core.
pub fn size_for(workers: u32) -> Size {
    let mib = 1536 + 4 * u64::from(workers);
    Size {
        cpu_request: "1".into(),
        memory_request: format!("{mib}Mi"),
        memory_limit: format!("{}Mi", 2 * mib),
    }
}

/// What came back.
pub struct Collected {
    /// Each collected shard's out dir.
    pub dirs: Vec<PathBuf>,
    /// Indexes that failed for good (their rounds are lost).
    pub failed: Vec<u32>,
    pub namespace: String,
}

/// The harness-made cluster whose kubeconfig is `kubeconfig`, if any.
fn made_here(kubeconfig: &Path) -> Option<AnyCluster> {
    let want = std::fs::canonicalize(kubeconfig).ok()?;
    crate::cluster::state::list_clusters()
        .ok()?
        .into_iter()
        .filter_map(|n| AnyCluster::load(&n).ok())
        .find(|c| std::fs::canonicalize(c.kubeconfig()).ok().as_ref() == Some(&want))
}

/// The image the pods run: the given one, or built here and loaded into
/// the nodes of the kind cluster of `kubeconfig`.
async fn image(o: &OnCluster) -> Result<String> {
    if let Some(i) = &o.image {
        return Ok(i.clone());
    }
    if let Some(to) = &o.push {
        let dir = crate::paths::cache_dir().join("images");
        let (archive, name) = image::build(&o.contents, &dir)?;
        let to =
            crate::tools::push::parse_reference(to, name.rsplit(':').next().unwrap_or("latest"))?;
        let step = crate::progress::Step::start(format!("pushing {name} as {to}"));
        let p = crate::tools::push::push(&archive, &to).await?;
        step.done(&format!(
            "{} blobs sent, {} there already",
            p.blobs_sent, p.blobs_there
        ));
        return Ok(to.to_string());
    }
    let Some(cluster) = made_here(&o.kubeconfig) else {
        return Err(bad_input(format!(
            "--on-cluster --kubeconfig {}: not a cluster the harness made, so its nodes cannot be loaded with the image: build one (`harness image build --out FILE`), push it where the nodes pull from, and give --image REF",
            o.kubeconfig.display()
        )));
    };
    let dir = crate::paths::cache_dir().join("images");
    let contents = &o.contents;
    let (archive, name) = {
        let step =
            crate::progress::Step::start("the harness's image (the harness and its binaries)");
        let r = image::build(contents, &dir)?;
        step.done(&r.1);
        r
    };
    let step =
        crate::progress::Step::start(format!("loading {name} into {}'s nodes", cluster.name()));
    // Its tag is a digest of what it holds: nodes that have it keep it.
    match cluster.load_image_archive(&archive, Some(&name)).await? {
        0 => step.done("every node has it already"),
        n => step.done(&format!("loaded into {n} nodes")),
    };
    Ok(name)
}

/// The index a Job's pod runs.
fn index_of(p: &Pod) -> Option<u32> {
    p.metadata
        .annotations
        .as_ref()?
        .get("batch.kubernetes.io/job-completion-index")?
        .parse()
        .ok()
}

/// Run the Job and bring each shard's out dir back.
pub async fn run(o: &OnCluster) -> Result<Collected> {
    let bytes: usize = o.inputs.iter().map(|(p, b)| p.len() + b.len()).sum();
    if bytes > job::INPUTS_MAX_BYTES {
        return Err(bad_input(format!(
            "--on-cluster: the input files are {bytes} bytes, more than one ConfigMap holds ({} bytes): give fewer or smaller files",
            job::INPUTS_MAX_BYTES
        )));
    }
    let client = crate::cluster::client::client_for(&o.kubeconfig, o.context.as_deref()).await?;
    let image = image(o).await?;
    let namespace = crate::cluster::run_id::run_namespace(&o.run_id, "rounds", 0)?;
    let mut objects = vec![job::namespace(&namespace, &o.run_id)];
    if !o.inputs.is_empty() {
        objects.push(job::inputs(&namespace, &o.run_id, &o.inputs));
    }
    objects.push(job::job(&JobPlan {
        namespace: &namespace,
        run_id: &o.run_id,
        image: &image,
        args: o.args.clone(),
        shards: o.shards,
        parallel: o.parallel,
        size: o.size.clone(),
        hold_s: 1800,
        inputs: o.inputs.iter().map(|(p, _)| p.clone()).collect(),
    }));
    crate::install::apply::apply_all(&client, &objects)
        .await
        .with_context(|| format!("creating the rounds' namespace {namespace} and Job"))?;
    eprintln!(
        "harness: {} rounds as Job {namespace}/{JOB}, {} at a time (image {image})",
        o.shards, o.parallel
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let jobs: Api<Job> = Api::namespaced(client, &namespace);
    let started = Instant::now();
    let mut collected: BTreeSet<u32> = BTreeSet::new();
    let mut dirs = Vec::new();
    loop {
        if started.elapsed() > o.timeout {
            return Err(env_missing(
                format!(
                    "the rounds on the cluster took longer than {} s; collected {} of {}",
                    o.timeout.as_secs(),
                    collected.len(),
                    o.shards
                ),
                "look at the pods of the Job (their logs say what each round did), or give --timeout more",
            ));
        }
        let list = pods
            .list(&ListParams::default().labels(&format!("job-name={JOB}")))
            .await
            .context("listing the rounds' pods")?;
        for p in &list.items {
            let (Some(name), Some(index)) = (p.metadata.name.as_deref(), index_of(p)) else {
                continue;
            };
            let running = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
            if !running || collected.contains(&index) {
                continue;
            }
            match collect::ask(&pods, name).await {
                Ok(Asked::NotYet) => {}
                Ok(Asked::Packed(tar)) => {
                    let dir = o.out.join("shards").join(index.to_string());
                    let _ = std::fs::remove_dir_all(&dir);
                    collect::unpack(&tar, &dir)?;
                    let code =
                        std::fs::read_to_string(dir.join(collect::EXIT_FILE)).unwrap_or_default();
                    collect::release(&pods, name).await?;
                    eprintln!(
                        "harness: round {} of {} collected from pod {name} (exit {})",
                        index + 1,
                        o.shards,
                        code.trim()
                    );
                    // A shard that failed is run again by the Job: its
                    // second pod's out dir replaces this one.
                    if code.trim() == "0" {
                        collected.insert(index);
                        dirs.push(dir);
                    }
                }
                Err(e) => tracing::debug!("asking pod {name}: {e:#}"),
            }
        }
        let status = jobs.get(JOB).await.context("reading the Job")?.status;
        let failed = status
            .as_ref()
            .and_then(|s| s.failed_indexes.as_deref())
            .map(job::indexes)
            .unwrap_or_default();
        let done = status.as_ref().is_some_and(|s| {
            s.conditions.as_ref().is_some_and(|cs| {
                cs.iter().any(|c| {
                    matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True"
                })
            })
        });
        if done || collected.len() + failed.len() >= o.shards as usize {
            dirs.sort();
            return Ok(Collected {
                dirs,
                failed,
                namespace,
            });
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}
