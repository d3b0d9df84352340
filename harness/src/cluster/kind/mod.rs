//! The kind provider: a cluster of kind node containers (Kubernetes in
//! Docker) made with the `kind` CLI from a profile in kind-configs/.
//!
//! `start` = preflight (docker, kind, kubectl, helm on PATH; the Docker
//! daemon answers; kind is the pinned version) → the name is free (no state
//! dir, not in `kind get clusters`) → state dir with the effective config,
//! the audit policy and an audit log file the API server appends to through
//! a host mount → `kind create cluster` → kubeconfig (in the state dir, never
//! ~/.kube/config) and node container names recorded in `state.json`.
//! Installs (cert-manager, JobSet, Kueue) are `lifecycle::up_kind`'s next
//! step, in `install/`.
//!
//! In tests the external programs are recording fake commands (`fakes`).

pub mod commands;
pub mod config;
/// Test support (recording fake commands): built for this crate's tests
/// and, with the `testkit` feature, for its integration tests.
#[cfg(any(test, feature = "testkit"))]
pub mod fakes;
pub mod health;
pub mod images;
pub mod inside;
pub mod network;
pub mod patches;
pub mod restarts;
pub mod retry;
pub mod turns;

pub use images::{BUILT_NETWORK, KindImages};

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::cluster::client::client_from_kubeconfig;
use crate::cluster::kind::commands::{KindEnv, KindTools, plan};
use crate::cluster::local::identity::AUDIT_POLICY;
use crate::cluster::pool::NodePool;
use crate::cluster::provider::{Cluster, Processes};
use crate::cluster::spec::ComponentHealth;
use crate::cluster::spec::NodeSpec;
use crate::cluster::state::validate_name;
use crate::error::bad_input;
use crate::progress::Step;

pub const PROVIDER: &str = "kind";

/// The kind cluster behind harness cluster `name`.
pub fn kind_cluster_name(name: &str) -> String {
    format!("harness-{name}")
}

/// What `up --provider kind` asks for.
#[derive(Debug, Clone)]
pub struct KindSpec {
    pub name: String,
    /// A kind config (a profile from kind-configs/).
    pub config: PathBuf,
    /// `--k8s-version`, when given: must match the config's node image.
    pub k8s_version: Option<String>,
    /// `kind create cluster --wait`.
    pub wait: Duration,
    pub images: KindImages,
}

/// `state.json` of a kind cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KindState {
    pub name: String,
    /// Always "kind".
    pub provider: String,
    pub kind_cluster: String,
    /// "1.37.0", from the node image.
    pub k8s_version: String,
    pub node_image: String,
    /// The profile the cluster was made from.
    pub profile: PathBuf,
    /// The effective config given to kind.
    pub config: PathBuf,
    pub kubeconfig: PathBuf,
    /// Node container names; empty until `kind create` succeeded.
    pub nodes: Vec<String>,
    pub control_plane: String,
    pub audit_log: PathBuf,
    pub audit_policy: PathBuf,
    pub kind_version: String,
    pub created_unix: u64,
    /// "pulled" or "built" (tools/kindnode); older state files: pulled.
    #[serde(default = "pulled")]
    pub images: String,
    /// Why cert-manager is not installed, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_manager_absent: Option<String>,
    /// kwok runs in the cluster (`up --kwok`), so pools can be added.
    #[serde(default)]
    pub kwok: bool,
    /// Why each `kind create` before the one that made the cluster failed
    /// (`retry`): a slow start on a loaded machine, said, not hidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_creates: Vec<String>,
}

fn pulled() -> String {
    "pulled".to_string()
}

pub struct KindCluster {
    pub state: KindState,
    pub root: PathBuf,
    env: KindEnv,
    client: tokio::sync::OnceCell<kube::Client>,
}

impl std::fmt::Debug for KindCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindCluster")
            .field("state", &self.state)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

fn mkdir(path: &Path, mode: u32) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
        .with_context(|| format!("creating {}", path.display()))
}

fn write_mode(path: &Path, contents: &str, mode: u32) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

impl KindCluster {
    /// Preflight, claim the name, write the state dir and create the kind
    /// cluster. Nothing is touched before the checks pass; after that, any
    /// failure deletes what was made (cluster and state dir).
    pub async fn start(spec: &KindSpec, env: &KindEnv) -> Result<KindCluster> {
        validate_name(&spec.name)?;
        let profile = config::load_profile(&spec.config)?;
        config::check_minor(&profile, spec.k8s_version.as_deref())?;
        let tools = commands::find_tools(&env.search_path)?;
        let kind_version = commands::preflight(&tools).await?;
        crate::inotify::check_room(&crate::inotify::kind_need(profile.nodes()))?;
        let root = env.cluster_dir(&spec.name);
        if root.exists() {
            return Err(bad_input(format!(
                "cluster name {:?} is taken: {} exists; `harness down --name {}` removes it, or use another --name",
                spec.name,
                root.display(),
                spec.name
            )));
        }
        let kind_name = kind_cluster_name(&spec.name);
        let built = images::choose(spec.images, &profile, &tools).await?;
        let existing = commands::run(&plan::get_clusters(&tools)).await?;
        if commands::lines(&existing).contains(&kind_name) {
            return Err(bad_input(format!(
                "cluster name {:?} is taken: `kind get clusters` lists {kind_name}; `kind delete cluster --name {kind_name}` removes it, or use another --name",
                spec.name
            )));
        }

        mkdir(&root, 0o700)?;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700))?;
        let audit_dir = root.join("audit");
        let state = KindState {
            name: spec.name.clone(),
            provider: PROVIDER.into(),
            kind_cluster: kind_name,
            k8s_version: built
                .as_ref()
                .map_or(profile.k8s_version.clone(), |b| b.version.clone()),
            node_image: built
                .as_ref()
                .map_or(profile.node_image.clone(), |b| b.image.clone()),
            profile: std::path::absolute(&spec.config).unwrap_or(spec.config.clone()),
            config: root.join("kind-config.yaml"),
            kubeconfig: root.join("kubeconfig"),
            nodes: Vec::new(),
            control_plane: String::new(),
            audit_log: audit_dir.join(config::AUDIT_LOG_NAME),
            audit_policy: root.join("audit-policy.yaml"),
            kind_version,
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            images: if built.is_some() { "built" } else { "pulled" }.to_string(),
            cert_manager_absent: None,
            kwok: false,
            failed_creates: Vec::new(),
        };
        let mut cluster = KindCluster {
            state,
            root,
            env: env.clone(),
            client: tokio::sync::OnceCell::new(),
        };
        let made = async {
            cluster.save()?;
            cluster.write_files(&profile, &audit_dir)?;
            cluster.create(&tools, spec.wait).await
        }
        .await;
        if let Err(e) = made {
            let cleanup = cluster.delete_and_remove(&tools.kind);
            if let Err(c) = cleanup {
                tracing::error!("cleaning up after a failed kind create: {c:#}");
            }
            return Err(e.context(format!(
                "creating kind cluster {:?} (state dir removed)",
                spec.name
            )));
        }
        Ok(cluster)
    }

    fn write_files(&self, profile: &config::Profile, audit_dir: &Path) -> Result<()> {
        // The directory and the log file are the user's and world-readable:
        // kube-apiserver (root in the node) opens an existing log file for
        // appending without changing its owner or mode, so the harness can
        // read it without privileges.
        mkdir(audit_dir, 0o755)?;
        std::fs::set_permissions(audit_dir, std::fs::Permissions::from_mode(0o755))?;
        write_mode(&self.state.audit_log, "", 0o644)?;
        write_mode(&self.state.audit_policy, AUDIT_POLICY, 0o644)?;
        let mut eff = config::effective(profile, &self.state.audit_policy, audit_dir);
        if self.built() {
            config::built_overrides(
                &mut eff,
                &self.state.node_image,
                &crate::tools::kindnode::images::etcd_tag(),
                &crate::tools::kindnode::images::dns_tag(),
            );
        }
        write_mode(
            &self.state.config,
            &config::to_yaml(&eff, &profile.path)?,
            0o644,
        )
    }

    async fn create(&mut self, tools: &KindTools, wait: Duration) -> Result<()> {
        let s = &self.state;
        let step = Step::start(format!(
            "creating kind cluster {} (Kubernetes v{}, {})",
            s.kind_cluster, s.k8s_version, s.node_image
        ));
        let built = self.built();
        let mut create = plan::create(
            tools,
            &s.kind_cluster,
            &s.config,
            &s.kubeconfig,
            // Built nodes have no pod network until the harness makes it
            // (after create): `up` waits for Ready nodes itself.
            if built { Duration::ZERO } else { wait },
        );
        if built {
            images::ensure_network(&tools.docker).await?;
            create.env.push((
                "KIND_EXPERIMENTAL_DOCKER_NETWORK".into(),
                BUILT_NETWORK.into(),
            ));
        }
        let control_plane = format!("{}-control-plane", s.kind_cluster);
        let made = retry::make(
            tools,
            &create,
            &s.kind_cluster,
            &s.kubeconfig,
            &control_plane,
            &s.audit_log,
        )
        .await?;
        step.done(&retry::created(made.len()));
        self.state.failed_creates = made;
        let s = &self.state;
        let kc = commands::run(&plan::get_kubeconfig(tools, &s.kind_cluster)).await?;
        let text = String::from_utf8(kc.stdout).context("kind's kubeconfig is not UTF-8")?;
        kube::config::Kubeconfig::from_yaml(&text)
            .context("`kind get kubeconfig` printed no kubeconfig")?;
        write_mode(&s.kubeconfig, &text, 0o600)?;
        let nodes =
            commands::lines(&commands::run(&plan::get_nodes(tools, &s.kind_cluster)).await?);
        if !nodes.contains(&control_plane) {
            bail!(
                "`kind get nodes --name {}` does not list {control_plane} (it lists: {})",
                s.kind_cluster,
                nodes.join(", ")
            );
        }
        self.state.nodes = nodes;
        self.state.control_plane = control_plane;
        self.save()?;
        if built {
            let step = Step::start("giving each node a bridge network of its pod subnet");
            let client =
                crate::cluster::client::client_from_kubeconfig(&self.state.kubeconfig).await?;
            network::setup(client, &self.state.nodes, tools, || self.check_containers()).await?;
            step.done("done");
        }
        Ok(())
    }

    /// A control-plane component's metrics on `port`, read inside the
    /// control-plane node (inside::component_metrics).
    async fn component_metrics(&self, port: u16, component: &str) -> Result<Option<String>> {
        inside::component_metrics(
            &self.tools()?.docker,
            &self.state.control_plane,
            port,
            component,
        )
        .await
        .map(Some)
    }

    /// Whether the node image was built here.
    pub fn built(&self) -> bool {
        self.state.images == "built"
    }

    /// Import an image archive (OCI or docker) into every node's
    /// containerd, in the `k8s.io` namespace the kubelet uses.
    pub async fn load_archive(&self, archive: &Path) -> Result<()> {
        images::load_archive(&self.tools()?.docker, &self.state.nodes, archive).await
    }

    /// Record that cert-manager is not installed, and why.
    pub fn set_cert_manager_absent(&mut self, why: String) -> Result<()> {
        self.state.cert_manager_absent = Some(why);
        self.save()
    }

    /// Record that kwok runs in the cluster (install/kwok.rs).
    pub fn set_kwok(&mut self) -> Result<()> {
        self.state.kwok = true;
        self.save()
    }

    fn save(&self) -> Result<()> {
        crate::output::write_atomic(
            &self.root.join("state.json"),
            serde_json::to_vec_pretty(&self.state)?,
        )
    }

    /// Attach to a kind cluster made earlier.
    pub fn load(name: &str) -> Result<KindCluster> {
        Self::load_in(name, &KindEnv::from_process())
    }

    pub fn load_in(name: &str, env: &KindEnv) -> Result<KindCluster> {
        validate_name(name)?;
        let root = env.cluster_dir(name);
        let path = root.join("state.json");
        let text = crate::cluster::state::read_state_file(&path, "kind cluster", name)?;
        let state: KindState = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a kind cluster state file", path.display()))?;
        if state.provider != PROVIDER {
            bail!(
                "{}: provider is {:?}, not kind",
                path.display(),
                state.provider
            );
        }
        Ok(KindCluster {
            state,
            root,
            env: env.clone(),
            client: tokio::sync::OnceCell::new(),
        })
    }

    /// The programs, found now on this cluster's search path.
    pub fn tools(&self) -> Result<KindTools> {
        commands::find_tools(&self.env.search_path)
    }

    /// Node containers that are not running, with what docker says.
    fn stopped_containers(&self, docker: &Path) -> Vec<(String, String)> {
        self.state
            .nodes
            .iter()
            .filter_map(
                |n| match commands::run_blocking(&plan::inspect(docker, n)) {
                    Ok(out) => {
                        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
                        (!text.starts_with("running")).then(|| (n.clone(), text))
                    }
                    Err(e) => Some((n.clone(), format!("{e:#}"))),
                },
            )
            .collect()
    }

    /// Err naming every node container that is not running.
    pub fn check_containers(&self) -> Result<()> {
        let tools = self.tools()?;
        if self.state.nodes.is_empty() {
            bail!(
                "kind cluster {} has no recorded nodes (its creation did not finish)",
                self.state.kind_cluster
            );
        }
        let stopped = self.stopped_containers(&tools.docker);
        if stopped.is_empty() {
            return Ok(());
        }
        Err(anyhow::anyhow!(
            "kind cluster {:?} is broken: node container(s) not running:\n{}",
            self.state.name,
            stopped
                .iter()
                .map(|(n, s)| format!("  {n}: {s}"))
                .collect::<Vec<_>>()
                .join("\n")
        ))
    }

    /// `kind delete cluster` (kind deletes nothing when the cluster does
    /// not exist), then remove the state dir.
    fn delete_and_remove(&self, kind: &Path) -> Result<()> {
        commands::run_blocking(&plan::delete(
            kind,
            &self.state.kind_cluster,
            &self.state.kubeconfig,
        ))?;
        std::fs::remove_dir_all(&self.root)
            .with_context(|| format!("removing {}", self.root.display()))
    }
}

/// After Ctrl-C during `up`: delete the kind cluster and state of `name`
/// if `up` got as far as claiming the name (its state dir exists).
pub fn abandon(name: &str) -> Result<()> {
    let env = KindEnv::from_process();
    match KindCluster::load_in(name, &env) {
        Ok(c) => c.down(false),
        Err(_) => {
            let dir = env.cluster_dir(name);
            if dir.exists() {
                // A `kind create` cut short leaves node containers and
                // no state: delete by kind's name (nothing to do if none).
                if let Ok(tools) = commands::find_tools(&env.search_path) {
                    commands::run_blocking(&plan::delete(
                        &tools.kind,
                        &kind_cluster_name(name),
                        &dir.join("kubeconfig"),
                    ))
                    .with_context(|| {
                        format!("deleting kind cluster {}", kind_cluster_name(name))
                    })?;
                }
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing {}", dir.display()))?;
            }
            Ok(())
        }
    }
}

impl Cluster for KindCluster {
    fn name(&self) -> &str {
        &self.state.name
    }

    /// kind's kubeconfig user (kubeadm's admin certificate).
    fn harness_users(&self) -> Vec<String> {
        vec!["kubernetes-admin".to_string()]
    }

    fn check_alive(&self) -> Result<()> {
        self.check_containers()
    }

    async fn explain_failure(&self) -> Option<String> {
        let docker = self.tools().ok()?.docker;
        restarts::account(&docker, &self.state.control_plane).await
    }

    fn kubeconfig(&self) -> &Path {
        &self.state.kubeconfig
    }

    async fn client(&self) -> Result<kube::Client> {
        let path = self.state.kubeconfig.clone();
        self.client
            .get_or_try_init(|| client_from_kubeconfig(&path))
            .await
            .cloned()
    }

    async fn etcd_metrics(&self) -> Result<String> {
        inside::etcd_metrics(
            &self.tools()?.docker,
            &self.state.control_plane,
            &self.state.node_image,
        )
        .await
    }

    async fn scheduler_metrics(&self) -> Result<Option<String>> {
        self.component_metrics(10259, "kube-scheduler").await
    }

    /// Only on built node images, whose controller manager lets /metrics
    /// through unasked (config::built_overrides); kind's stock one would
    /// ask the API server about every scrape, inside the window.
    async fn controller_manager_metrics(&self) -> Result<Option<String>> {
        if !self.built() {
            return Ok(None);
        }
        self.component_metrics(10257, "kube-controller-manager")
            .await
    }

    fn audit_log(&self) -> Option<PathBuf> {
        Some(self.state.audit_log.clone())
    }

    /// The components run in the node containers: read there.
    fn processes(&self) -> Processes {
        match self.tools() {
            Ok(t) => Processes::InContainers {
                docker: t.docker,
                containers: self.state.nodes.clone(),
            },
            Err(_) => Processes::Unseen,
        }
    }

    async fn set_capacity(&self, _nodes: &NodeSpec) -> Result<()> {
        Err(bad_input(format!(
            "kind cluster {:?}: its nodes are real containers ({}); their number and size come from the kind config at `up` (nodes: in {}), not from --nodes/--node-cpu/--node-memory",
            self.state.name,
            self.state.nodes.join(", "),
            self.state.profile.display()
        )))
    }

    /// Fake nodes run by the cluster's kwok (`up --kwok`), beside the
    /// real ones; refused when kwok was not installed.
    async fn add_pool(&self, pool: &NodePool) -> Result<Vec<String>> {
        if !self.state.kwok {
            return Err(crate::error::env_missing(
                format!(
                    "kind cluster {:?} runs no kwok, so the {} pool nodes this workload asks for cannot be added",
                    self.state.name, pool.count
                ),
                "bring it up with `harness up --provider kind --kwok`",
            ));
        }
        let client = self.client().await?;
        crate::cluster::local::nodes::add_pool(client, pool, || self.check_containers()).await
    }

    async fn remove_nodes(&self, names: &[String]) -> Result<()> {
        crate::cluster::local::nodes::remove(self.client().await?, names).await
    }

    async fn health(&self) -> Vec<ComponentHealth> {
        health::of(
            &self.tools().map(|t| t.docker),
            &self.state.nodes,
            &self.state.control_plane,
            &self.state.kubeconfig,
        )
        .await
    }

    fn down(self, keep: bool) -> Result<()> {
        let tools = self.tools()?;
        commands::run_blocking(&plan::delete(
            &tools.kind,
            &self.state.kind_cluster,
            &self.state.kubeconfig,
        ))
        .with_context(|| format!("deleting kind cluster {}", self.state.kind_cluster))?;
        if !keep {
            std::fs::remove_dir_all(&self.root)
                .with_context(|| format!("removing {}", self.root.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
