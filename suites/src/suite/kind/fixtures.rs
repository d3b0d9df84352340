//! The kind suite's shared clusters: one per Kubernetes minor of the gang
//! profile (kind-configs/gang-<minor>.yaml), with kwok running in it for
//! the gang cases' pools (`up --kwok`), brought up on first use by
//! the trials of cluster.rs and workloads.rs, with the helpers they
//! share (the minors asked for, `docker exec` in a node).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use harness::cluster::kind::{KindCluster, KindImages};

/// The minors the suite brings up: `$HARNESS_KIND_MINORS` (comma
/// separated; a pre-release minor only when named there), else the
/// released minors the other suites run (`HARNESS_MINORS`; the default
/// minor alone when unset — a bad value fails the case suites' trials,
/// which say why, and brings up the default minor here).
pub fn minors() -> Vec<&'static str> {
    use harness::k8s::{K8S_PRERELEASES, K8S_RELEASES, K8sRelease, releases_for_suites};
    match std::env::var("HARNESS_KIND_MINORS") {
        Ok(v) if !v.trim().is_empty() => K8S_RELEASES
            .iter()
            .chain(K8S_PRERELEASES)
            .map(|r| r.minor)
            .filter(|m| v.split(',').any(|w| w.trim() == *m))
            .collect(),
        _ => releases_for_suites()
            .unwrap_or_else(|_| vec![K8sRelease::default_release()])
            .iter()
            .filter(|r| !r.is_prerelease())
            .map(|r| r.minor)
            .collect(),
    }
}

/// A shared kind cluster and the runtime its trials use.
pub struct KindFx {
    pub rt: tokio::runtime::Runtime,
    pub cluster: KindCluster,
}

pub type Cell = OnceLock<std::result::Result<KindFx, String>>;
pub static SHARED: Mutex<BTreeMap<&'static str, &'static Cell>> = Mutex::new(BTreeMap::new());

fn name(minor: &str) -> String {
    crate::unique_name(&format!("kind-{}", minor.replace('.', "")))
}

/// The cluster of `minor`, brought up on first use.
pub fn shared(minor: &'static str) -> Result<&'static KindFx> {
    let cell: &'static Cell = {
        let mut map = SHARED.lock().map_err(|e| anyhow::anyhow!("{e}"))?;
        map.entry(minor)
            .or_insert_with(|| Box::leak(Box::new(OnceLock::new())))
    };
    cell.get_or_init(|| start(minor).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("the kind {minor} cluster did not come up: {e}"))
}

fn start(minor: &str) -> Result<KindFx> {
    let rt = crate::runtime()?;
    let name = name(minor);
    crate::kind_started(&name);
    let opts = harness::lifecycle::KindUpOptions {
        spec: harness::cluster::kind::KindSpec {
            name: name.clone(),
            config: crate::repo_root().join(format!("kind-configs/gang-{minor}.yaml")),
            k8s_version: Some(minor.to_string()),
            wait: Duration::from_secs(300),
            images: KindImages::Auto,
        },
        kueue: false,
        // The gang cases add kwok pools beside the real nodes.
        kwok: true,
        timeout: Duration::from_secs(300),
    };
    let cluster = rt
        .block_on(harness::lifecycle::up_kind(&opts))
        .with_context(|| format!("harness up --provider kind --name {name}"))?;
    Ok(KindFx { rt, cluster })
}

/// `docker exec NODE sh -c SCRIPT`, its standard output.
pub fn exec(fx: &KindFx, node: &str, script: &str) -> Result<String> {
    let docker = fx.cluster.tools()?.docker;
    let out = std::process::Command::new(docker)
        .envs(harness::tools::engine::env())
        .args(["exec", node, "sh", "-c", script])
        .output()
        .context("docker exec")?;
    ensure!(
        out.status.success(),
        "docker exec {node} sh -c {script:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
