//! Shared pieces of the test suites: one local cluster per test binary,
//! started on first use and torn down when the binary's trials are done
//! (or on Ctrl-C), and polling helpers.
//!
//! A suite never skips because a binary is missing: the harness builds it,
//! or the trial fails with the exit-3 message saying what to install.

use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use harness::cluster::local::LocalCluster;
use harness::cluster::{Cluster, ClusterSpec, NodeSpec};
use harness::lifecycle::{self, UpOptions};

pub struct Fixture {
    pub rt: tokio::runtime::Runtime,
    pub cluster: LocalCluster,
}

static FIXTURE: OnceLock<std::result::Result<Fixture, String>> = OnceLock::new();
static NAME: OnceLock<String> = OnceLock::new();

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

/// The binary's shared cluster, started on the first call. An error here
/// fails every trial that needs it, with the same message.
pub fn shared(prefix: &str) -> std::result::Result<&'static Fixture, String> {
    let fx = FIXTURE.get_or_init(|| {
        let name = NAME.get_or_init(|| unique_name(prefix)).clone();
        let start = || -> Result<Fixture> {
            let rt = runtime()?;
            let opts = UpOptions {
                spec: test_spec(&name),
                bins: Default::default(),
                timeout: Duration::from_secs(180),
            };
            let cluster = rt.block_on(lifecycle::up(&opts))?;
            // Ctrl-C while trials run: tear the cluster down, then leave.
            let n = name.clone();
            rt.spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("interrupted: tearing down cluster {n}");
                    if let Ok(c) = LocalCluster::load(&n) {
                        let _ = c.down(false);
                    }
                    std::process::exit(130);
                }
            });
            Ok(cluster).map(|cluster| Fixture { rt, cluster })
        };
        start().map_err(|e| format!("{e:#}"))
    });
    fx.as_ref().map_err(Clone::clone)
}

/// Stop the shared cluster if one was started. Call after the trials ran.
pub fn teardown() -> Result<()> {
    if let (Some(Ok(_)), Some(name)) = (FIXTURE.get(), NAME.get()) {
        LocalCluster::load(name)?.down(false)?;
    }
    Ok(())
}

/// Poll `f` every 100 ms until it returns Some, failing after `timeout`
/// with `what` and the last error or state `f` reported.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    let mut last = String::from("no result yet");
    loop {
        match f().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last = format!("{e:#}"),
        }
        if Instant::now() > deadline {
            bail!(
                "{what}: not reached within {} s (last error: {last})",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
    eventually("default service account", Duration::from_secs(30), || {
        let sas = sas.clone();
        async move { Ok(sas.get_opt("default").await?.map(|_| ())) }
    })
    .await?;
    Ok(client)
}
