//! The test suites (`suite::*`, run by `runner`) and their shared pieces:
//! the repository root, clusters (`Fixture`: started on first use and torn
//! down when the suite's trials are done or on Ctrl-C, or attached by
//! name), and small helpers. Waiting goes through `harness::poll`, interrupts through
//! `harness::signal`.
//!
//! A suite never skips because a binary is missing: the harness builds it,
//! or the trial fails with the exit-3 message saying what to install.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use harness::cluster::local::LocalCluster;
use harness::cluster::{AnyCluster, Cluster, ClusterSpec, NodeSpec};
use harness::lifecycle::{self, UpOptions};
use harness::poll::Poll;

pub mod builds;
pub mod case_suite;
pub mod failures;
pub mod lane;
pub mod runner;
pub mod slots;
pub mod suite;
pub mod timing;

/// The repository this suite crate sits in.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("suites/ sits in the repository")
        .to_path_buf()
}

/// The `harness` binary cargo built beside this test binary
/// (`target/<profile>/harness`: `cargo test --workspace` builds it with
/// the harness crate's tests), when it is at least as new as the harness
/// library this binary was linked with. Err says what is missing and how
/// to build it.
pub fn harness_cli() -> std::result::Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this test binary's path: {e}"))?;
    let deps = exe.parent().ok_or("this test binary has no directory")?;
    let profile = deps
        .parent()
        .ok_or("this test binary's directory has none")?;
    let bin = profile.join("harness");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let how = "`cargo build -p harness` builds it; `cargo test --workspace` does too";
    let Some(built) = modified(&bin) else {
        return Err(format!(
            "the harness binary is not built ({}): {how}",
            bin.display()
        ));
    };
    let lib = std::fs::read_dir(deps)
        .map_err(|e| format!("reading {}: {e}", deps.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libharness-") && n.ends_with(".rlib"))
        })
        .filter_map(|p| modified(&p))
        .max();
    match lib {
        Some(lib) if built < lib => Err(format!(
            "the harness binary ({}) is older than the harness library this test was built with: {how}",
            bin.display()
        )),
        _ => Ok(bin),
    }
}

/// A cluster and the runtime its trials use.
pub struct Fixture<C = LocalCluster> {
    pub rt: tokio::runtime::Runtime,
    pub cluster: C,
}

/// Names of the local clusters this process started (torn down on Ctrl-C).
static STARTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl Fixture<LocalCluster> {
    /// Start a local cluster of `spec`. On Ctrl-C or SIGTERM every cluster
    /// this process started is stopped before it exits.
    pub fn start(spec: ClusterSpec) -> Result<Fixture> {
        interrupt_tears_down();
        let rt = runtime()?;
        let name = spec.name.clone();
        if let Ok(mut s) = STARTED.lock() {
            s.push(name.clone());
        }
        let opts = UpOptions {
            spec,
            bins: Default::default(),
            timeout: Duration::from_secs(180),
        };
        let cluster = rt
            .block_on(lifecycle::up(&opts))
            .with_context(|| format!("starting cluster {name}"))?;
        Ok(Fixture { rt, cluster })
    }

    /// Stop this fixture's cluster.
    pub fn stop(&self) -> Result<()> {
        LocalCluster::load(self.cluster.name())?.down(false)
    }

    /// The shared cluster of `prefix` (small nodes, default version),
    /// started on the first call; one per prefix, so suites running in one
    /// process keep their own. An error fails every trial that needs it,
    /// with the same message.
    pub fn shared(prefix: &str) -> std::result::Result<&'static Fixture, String> {
        let cell: &'static SharedCell = {
            let mut map = SHARED.lock().map_err(|e| e.to_string())?;
            map.entry(prefix.to_string())
                .or_insert_with(|| Box::leak(Box::new(OnceLock::new())))
        };
        cell.get_or_init(|| {
            Fixture::start(test_spec(&unique_name(prefix))).map_err(|e| format!("{e:#}"))
        })
        .as_ref()
        .map_err(Clone::clone)
    }
}

impl Fixture<AnyCluster> {
    /// Attach to a running cluster by name, whatever its provider.
    pub fn attach(name: &str) -> Result<Fixture<AnyCluster>> {
        Ok(Fixture {
            rt: runtime()?,
            cluster: AnyCluster::load(name)?,
        })
    }
}

type SharedCell = OnceLock<std::result::Result<Fixture, String>>;

/// The shared clusters, by prefix.
static SHARED: Mutex<BTreeMap<String, &'static SharedCell>> = Mutex::new(BTreeMap::new());

/// Stop the shared cluster of `prefix` if one was started. Call after the
/// trials that use it ran.
pub fn teardown(prefix: &str) -> Result<()> {
    let cell = SHARED
        .lock()
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .get(prefix)
        .copied();
    if let Some(Ok(fx)) = cell.and_then(|c| c.get()) {
        fx.stop()?;
    }
    Ok(())
}

/// Names of the kind clusters this process started (torn down on Ctrl-C).
static STARTED_KIND: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Record a kind cluster this process is starting, so that Ctrl-C or
/// SIGTERM deletes it.
pub fn kind_started(name: &str) {
    interrupt_tears_down();
    if let Ok(mut s) = STARTED_KIND.lock() {
        s.push(name.to_string());
    }
}

/// Set when the suite runner handles SIGINT/SIGTERM itself (it calls
/// `abandon_all` after the suites' `after`s).
static RUNNER_HANDLES_SIGNALS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

pub(crate) fn runner_handles_signals() {
    RUNNER_HANDLES_SIGNALS.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Once per process (unless the suite runner handles signals): on Ctrl-C,
/// stop every cluster this process made.
fn interrupt_tears_down() {
    if RUNNER_HANDLES_SIGNALS.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        harness::signal::exit_on_interrupt("tearing down the suite's clusters".into(), |_| {
            abandon_all()
        });
    });
}

/// Stop every cluster this process made: those `Fixture::start` and
/// `kind_started` recorded, and any other state dir named `…-<pid>`
/// (`unique_name`: clusters trials start themselves, and half-made ones).
/// A cluster another thread of this process is still starting holds its
/// name's lock: its processes are found under its dir, stopped, and the
/// dir removed.
pub fn abandon_all() {
    let names = STARTED.lock().map(|s| s.clone()).unwrap_or_default();
    for n in names {
        let _ = lifecycle::abandon_local(&n);
    }
    let kinds = STARTED_KIND.lock().map(|s| s.clone()).unwrap_or_default();
    for n in kinds {
        let _ = harness::cluster::kind::abandon(&n);
    }
    let suffix = format!("-{}", std::process::id());
    let ours = harness::cluster::state::list_dirs()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.ends_with(&suffix));
    for n in ours {
        if lifecycle::down(&n, false).is_err() {
            let dir = harness::cluster::state::cluster_dir(&n);
            let pids = harness::cluster::state::processes_under(&dir);
            harness::cluster::state::stop_pids(&pids, Duration::from_secs(10));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    harness::cluster::state::clean_stale_locks();
}

/// The spec of a test binary's cluster: small nodes, default version.
pub fn test_spec(name: &str) -> ClusterSpec {
    ClusterSpec {
        name: name.to_string(),
        k8s_minor: harness::k8s::DEFAULT_K8S_MINOR.to_string(),
        feature_gates: Default::default(),
        runtime_config: Default::default(),
        nodes: NodeSpec {
            count: 3,
            cpu: "16".into(),
            memory: "64Gi".into(),
            pods: 110,
        },
        kubelet: Default::default(),
        control_plane: Default::default(),
        kueue: None,
        real_node: false,
    }
}

/// A `bench thor` of `scenario` (a file under suites/thor/) in `modes` on
/// fresh local clusters named `<cluster_prefix>-<mode>-<round>`, one round,
/// nothing else asked for: the suites set what differs with `..` on this.
pub fn thor_options(
    scenario: &str,
    modes: Vec<harness::workload::thor::Mode>,
    cluster_prefix: String,
) -> harness::bench::thor::ThorBenchOptions {
    harness::bench::thor::ThorBenchOptions {
        scenario: repo_root().join("suites/thor").join(scenario),
        modes: Some(modes),
        repeat: 1,
        seed: None,
        shard: None,
        bins: Default::default(),
        cluster_prefix,
        overrides: Vec::new(),
        out: None,
        scrape: false,
        profiles: None,
        provider: harness::cluster::Provider::Local { real_node: false },
        real_node: false,
    }
}

/// A cluster name unique to this process: `<prefix>-<pid>`.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}-{}", std::process::id())
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("building the tokio runtime")
}

/// Convert a trial body's result for libtest-mimic.
pub fn trial_result(r: Result<()>) -> std::result::Result<(), libtest_mimic::Failed> {
    r.map_err(|e| format!("{e:#}").into())
}

/// A namespace of its own for a trial (they run in parallel).
pub async fn namespace(cluster: &impl Cluster, name: &str) -> Result<kube::Client> {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, PostParams};
    let client = cluster.client().await?;
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    // The namespace's default service account (created by the controller
    // manager) must exist before pods can be created in it.
    let sas: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(client.clone(), name);
    Poll::new("default service account", Duration::from_secs(30))
        .until(|| async { Ok(sas.get_opt("default").await?.map(|_| ())) })
        .await?;
    Ok(client)
}
