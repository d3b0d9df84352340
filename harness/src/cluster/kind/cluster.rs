//! A kind cluster: made from a profile (`KindCluster::start`: preflight,
//! the name claimed, the state dir, `kind create`), attached by name
//! (`load`), and the `Cluster` trait on it — its components read inside
//! the node containers.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::cluster::client::client_from_kubeconfig;
use crate::cluster::kind::cgroup_driver;
use crate::cluster::kind::commands::{self, KindEnv, KindTools, plan};
use crate::cluster::kind::config;
use crate::cluster::kind::health;
use crate::cluster::kind::images::{self, BUILT_NETWORK, KindImages};
use crate::cluster::kind::inside;
use crate::cluster::kind::network;
use crate::cluster::kind::restarts;
use crate::cluster::kind::retry;
use crate::cluster::kind::state::{KindState, PROVIDER, kind_cluster_name};
use crate::cluster::local::identity::AUDIT_POLICY;
use crate::cluster::pool::NodePool;
use crate::cluster::provider::{Cluster, Processes};
use crate::cluster::spec::ComponentHealth;
use crate::cluster::spec::NodeSpec;
use crate::cluster::state::validate_name;
use crate::error::bad_input;
use crate::progress::Step;
use crate::tools::command;

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
        let preflight = commands::preflight(&tools).await?;
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
        let existing = command::run(&plan::get_clusters(&tools)).await?;
        if command::lines(&existing).contains(&kind_name) {
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
            kind_version: preflight.kind_version,
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            images: if built.is_some() { "built" } else { "pulled" }.to_string(),
            cert_manager_absent: None,
            kwok: false,
            failed_creates: Vec::new(),
            cgroupfs: preflight.cgroup_v1,
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
            let cleanup = cluster.delete_and_remove(&tools);
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
        if self.state.cgroupfs {
            cgroup_driver::use_cgroupfs(&mut eff);
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
            "creating kind cluster {} (Kubernetes v{}, {}{})",
            s.kind_cluster,
            s.k8s_version,
            s.node_image,
            if s.cgroupfs {
                format!("; {}", cgroup_driver::SAID)
            } else {
                String::new()
            }
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
        let kc = command::run(&plan::get_kubeconfig(tools, &s.kind_cluster)).await?;
        let text = String::from_utf8(kc.stdout).context("kind's kubeconfig is not UTF-8")?;
        kube::config::Kubeconfig::from_yaml(&text)
            .context("`kind get kubeconfig` printed no kubeconfig")?;
        write_mode(&s.kubeconfig, &text, 0o600)?;
        let nodes = command::lines(&command::run(&plan::get_nodes(tools, &s.kind_cluster)).await?);
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
            .filter_map(|n| match command::run_blocking(&plan::inspect(docker, n)) {
                Ok(out) => {
                    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
                    (!text.starts_with("running")).then(|| (n.clone(), text))
                }
                Err(e) => Some((n.clone(), format!("{e:#}"))),
            })
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
    /// not exist), then remove the state dir; the last harness kind
    /// cluster takes the built images' network with it.
    fn delete_and_remove(&self, tools: &KindTools) -> Result<()> {
        command::run_blocking(&plan::delete(
            &tools.kind,
            &self.state.kind_cluster,
            &self.state.kubeconfig,
        ))?;
        std::fs::remove_dir_all(&self.root)
            .with_context(|| format!("removing {}", self.root.display()))?;
        images::release_network(
            &tools.docker,
            others_remain(&self.env.state_root, &self.root),
        )
    }
}

/// Whether another harness kind cluster than the one at `except` is in
/// `state_root`, or may be: a state of the kind provider, or a cluster dir
/// with no state yet (one starting).
fn others_remain(state_root: &Path, except: &Path) -> bool {
    let Ok(dirs) = std::fs::read_dir(state_root) else {
        return false;
    };
    dirs.flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p != except)
        .any(|p| match std::fs::read_to_string(p.join("state.json")) {
            Err(_) => true,
            Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
                .map_or(true, |v| v["provider"] == PROVIDER),
        })
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
                    command::run_blocking(&plan::delete(
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
                if let Ok(tools) = commands::find_tools(&env.search_path) {
                    images::release_network(&tools.docker, others_remain(&env.state_root, &dir))?;
                }
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

    /// Into every node container's containerd, in the `k8s.io` namespace
    /// the kubelet uses.
    async fn load_image_archive(
        &self,
        archive: &Path,
        content_named: Option<&str>,
    ) -> Result<usize> {
        images::load_archive(
            &self.tools()?.docker,
            &self.state.nodes,
            archive,
            content_named,
        )
        .await
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
        command::run_blocking(&plan::delete(
            &tools.kind,
            &self.state.kind_cluster,
            &self.state.kubeconfig,
        ))
        .with_context(|| format!("deleting kind cluster {}", self.state.kind_cluster))?;
        if !keep {
            std::fs::remove_dir_all(&self.root)
                .with_context(|| format!("removing {}", self.root.display()))?;
        }
        // The last harness kind cluster takes the network with it.
        images::release_network(
            &tools.docker,
            others_remain(&self.env.state_root, &self.root),
        )
    }
}

#[cfg(test)]
mod tests {
    // The kind provider against recording fake commands (see `fakes`): the
    // command plan, the state it writes and its error paths. No Docker here;
    // the Kubernetes API is never faked (the fake kubeconfig points at a
    // closed port, and the provider is expected to say so).

    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::cluster::kind::commands::KindEnv;
    use crate::cluster::kind::fakes::{self, FakeCommands, KIND, kind_script};
    use crate::error::exit_code;

    struct Bed {
        _tmp: tempfile::TempDir,
        fakes: FakeCommands,
        env: KindEnv,
    }

    fn bed() -> Bed {
        let (tmp, fakes) = FakeCommands::healthy_in_temp_dir();
        let env = KindEnv {
            search_path: fakes.path(),
            state_root: tmp.path().join("state"),
        };
        Bed {
            _tmp: tmp,
            fakes,
            env,
        }
    }

    fn profile(p: &str, minor: &str) -> PathBuf {
        config::default_config(
            &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
            p,
            minor,
        )
        .unwrap()
    }

    fn spec(name: &str) -> KindSpec {
        KindSpec {
            name: name.into(),
            config: profile("gang", "1.37"),
            k8s_version: Some("1.37".into()),
            wait: Duration::from_secs(90),
            images: KindImages::Pulled,
        }
    }

    fn state_entries(env: &KindEnv) -> Vec<String> {
        std::fs::read_dir(&env.state_root)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn a_cgroup_v1_engine_makes_nodes_with_the_cgroupfs_driver() {
        let b = bed();
        b.fakes.script(
            "docker",
            &fakes::DOCKER.replace("printf '29.0.0 2\\n'", "printf '29.0.0 1\\n'"),
        );
        let c = KindCluster::start(&spec("v1"), &b.env).await.unwrap();
        let root = b.env.cluster_dir("v1");
        let eff = std::fs::read_to_string(root.join("kind-config.yaml")).unwrap();
        assert!(eff.contains("cgroupDriver: cgroupfs"), "{eff}");
        assert!(eff.contains("SystemdCgroup = false"), "{eff}");
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("state.json")).unwrap())
                .unwrap();
        assert_eq!(state["cgroupfs"], true);
        drop(c);
    }

    #[tokio::test]
    async fn up_status_down_runs_the_planned_commands_and_leaves_nothing() {
        let b = bed();
        let c = KindCluster::start(&spec("e2e"), &b.env).await.unwrap();
        let root = b.env.cluster_dir("e2e");
        let kc = root.join("kubeconfig");
        let cfg = root.join("kind-config.yaml");
        assert_eq!(
            b.fakes.calls(),
            [
                "docker info --format {{.ServerVersion}} {{.CgroupVersion}}".to_string(),
                "kind version".into(),
                "kind get clusters".into(),
                format!(
                    "kind create cluster --name harness-e2e --config {} --kubeconfig {} --wait 90s --retain",
                    cfg.display(),
                    kc.display()
                ),
                "kind get kubeconfig --name harness-e2e".into(),
                "kind get nodes --name harness-e2e".into(),
            ]
        );
        // state.json: what AnyCluster and other processes attach with.
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("state.json")).unwrap())
                .unwrap();
        assert_eq!(state["provider"], "kind");
        assert_eq!(state["kind_cluster"], "harness-e2e");
        assert_eq!(state["k8s_version"], "1.37.0");
        assert_eq!(state["kubeconfig"], kc.to_str().unwrap());
        assert_eq!(
            state["nodes"],
            serde_json::json!(["harness-e2e-control-plane", "harness-e2e-worker"])
        );
        assert_eq!(state["kind_version"], "kind v0.33.0 go1.25.1 linux/amd64");
        // Files: the kubeconfig kind printed (private), the effective config
        // with this cluster's mounts, the policy, an empty world-readable log.
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            std::fs::read_to_string(&kc).unwrap(),
            fakes::FAKE_KUBECONFIG
        );
        assert_eq!(mode(&kc), 0o600);
        assert_eq!(mode(&root), 0o700);
        let eff = std::fs::read_to_string(&cfg).unwrap();
        let audit_dir = root.join("audit");
        assert!(
            eff.contains(&format!("hostPath: {}", audit_dir.display())),
            "{eff}"
        );
        assert!(eff.contains(config::NODE_AUDIT_POLICY), "{eff}");
        assert!(eff.contains("WorkloadWithJob: true"), "{eff}");
        assert_eq!(
            std::fs::read_to_string(root.join("audit-policy.yaml")).unwrap(),
            crate::cluster::local::AUDIT_POLICY
        );
        assert_eq!(mode(&audit_dir.join("audit.log")), 0o644);
        // A cgroup v2 engine: kind's own (systemd) driver.
        assert_eq!(state["cgroupfs"], false);
        assert!(!eff.contains("cgroupDriver"), "{eff}");
        drop(c);

        // Attach by name, as `harness status` does.
        let c = KindCluster::load_in("e2e", &b.env).unwrap();
        assert_eq!(c.kubeconfig(), kc);
        let health = c.health().await;
        let names: Vec<&str> = health.iter().map(|h| h.component.as_str()).collect();
        assert_eq!(
            names,
            [
                "harness-e2e-control-plane",
                "harness-e2e-worker",
                "kube-apiserver"
            ]
        );
        assert!(health[0].healthy && health[0].running && health[0].pid == Some(4242));
        let api = &health[2];
        assert!(api.running, "the control-plane container runs");
        assert!(
            !api.healthy,
            "nothing serves the fake kubeconfig: {}",
            api.health
        );
        c.check_containers().unwrap();

        // etcd metrics come from inside the control-plane container.
        assert_eq!(
            c.etcd_metrics().await.unwrap(),
            "etcd_server_has_leader 1\n"
        );
        assert!(b.fakes.calls().iter().any(|l| l
        == "docker exec harness-e2e-control-plane curl -sS --fail --max-time 10 http://127.0.0.1:2381/metrics"));

        // The audit log is read from the host file with the shared reader.
        assert_eq!(c.audit_end().unwrap(), 0);
        let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods","verb":"create","user":{"username":"system:serviceaccount:kube-system:job-controller"},"objectRef":{"resource":"pods","namespace":"default","name":"p","apiVersion":"v1"},"responseStatus":{"code":201}}"#;
        std::fs::write(audit_dir.join("audit.log"), format!("{line}\n")).unwrap();
        let (events, end) = c.audit_events(0).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].key(), "create pods");
        assert_eq!(end, c.audit_end().unwrap());

        let e = c.set_capacity(&NodeSpec::default()).await.unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("real containers"), "{e}");

        let before = b.fakes.calls().len();
        c.down(false).unwrap();
        // The last harness kind cluster takes the built images' network.
        assert_eq!(
            b.fakes.calls()[before..],
            [
                format!(
                    "kind delete cluster --name harness-e2e --kubeconfig {}",
                    kc.display()
                ),
                "docker network inspect --format {{len .Containers}} harness-kind".into(),
                "docker network rm harness-kind".into(),
            ]
        );
        assert!(!root.exists());
    }

    #[tokio::test]
    async fn the_network_stays_while_another_kind_cluster_is_there() {
        let b = bed();
        let one = KindCluster::start(&spec("one"), &b.env).await.unwrap();
        let _two = KindCluster::start(&spec("two"), &b.env).await.unwrap();
        let before = b.fakes.calls().len();
        one.down(false).unwrap();
        assert!(
            !b.fakes.calls()[before..]
                .iter()
                .any(|c| c.starts_with("docker network")),
            "{:?}",
            b.fakes.calls()
        );
    }

    #[tokio::test]
    async fn down_keep_keeps_the_state() {
        let b = bed();
        let c = KindCluster::start(&spec("keep"), &b.env).await.unwrap();
        c.down(true).unwrap();
        assert!(b.env.cluster_dir("keep").join("state.json").is_file());
        assert!(
            b.fakes
                .calls()
                .iter()
                .any(|c| c.starts_with("kind delete cluster --name harness-keep"))
        );
    }

    #[tokio::test]
    async fn docker_missing_is_exit_3_and_touches_nothing() {
        let b = bed();
        b.fakes.remove("docker");
        b.fakes.remove("kubectl");
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(msg.contains("not found: docker, kubectl"), "{msg}");
        assert!(
            msg.contains("https://docs.docker.com/engine/install/"),
            "{msg}"
        );
        assert!(b.fakes.calls().is_empty());
        assert!(state_entries(&b.env).is_empty());
    }

    #[tokio::test]
    async fn docker_daemon_down_is_exit_3_quoting_docker() {
        let b = bed();
        b.fakes.script(
        "docker",
        "printf 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\\n' >&2\nexit 1\n",
    );
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(msg.contains("Docker daemon is not reachable"), "{msg}");
        assert!(msg.contains("Is the docker daemon running?"), "{msg}");
        assert!(msg.contains("start Docker"), "{msg}");
        assert_eq!(
            b.fakes.calls(),
            ["docker info --format {{.ServerVersion}} {{.CgroupVersion}}"]
        );
        assert!(state_entries(&b.env).is_empty());
    }

    #[tokio::test]
    async fn an_old_kind_is_exit_3_naming_the_pinned_version() {
        let b = bed();
        b.fakes.script(
            "kind",
            &kind_script(&KIND.replace("kind v0.33.0 go1.25.1", "kind v0.27.0 go1.24.0")),
        );
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(
            msg.contains("older than v0.33.0")
                && msg.contains("go install sigs.k8s.io/kind@v0.33.0"),
            "{msg}"
        );
        assert!(state_entries(&b.env).is_empty());
    }

    #[tokio::test]
    async fn a_name_kind_already_has_is_exit_2_and_nothing_is_touched() {
        let b = bed();
        b.fakes.script(
            "kind",
            &kind_script(&KIND.replace(
                r#""get clusters") printf 'No kind clusters found.\n' >&2 ;;"#,
                r#""get clusters") printf 'kind\nharness-a\n' ;;"#,
            )),
        );
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(
            e.to_string()
                .contains("`kind get clusters` lists harness-a"),
            "{e}"
        );
        assert!(
            !b.fakes
                .calls()
                .iter()
                .any(|c| c.contains("create") || c.contains("delete"))
        );
        assert!(state_entries(&b.env).is_empty());
        // A cluster kind knows under a name that only starts the same is no clash.
        KindCluster::start(&spec("a-b"), &b.env)
            .await
            .unwrap()
            .down(false)
            .unwrap();
    }

    #[tokio::test]
    async fn a_name_with_state_is_exit_2_and_its_state_is_untouched() {
        let b = bed();
        let dir = b.env.cluster_dir("a");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("state.json"), "{\"provider\":\"local\"}").unwrap();
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("is taken"), "{e}");
        assert_eq!(
            std::fs::read_to_string(dir.join("state.json")).unwrap(),
            "{\"provider\":\"local\"}"
        );
        assert!(
            !b.fakes
                .calls()
                .iter()
                .any(|c| c.starts_with("kind get clusters"))
        );
    }

    #[tokio::test]
    async fn kind_create_failing_is_quoted_and_the_state_dir_removed() {
        let b = bed();
        b.fakes.script(
        "kind",
        &kind_script(&KIND.replace(
            r#""create cluster") printf 'Creating cluster "%s" ...\n' "$4" >&2 ;;"#,
            r#""create cluster") printf 'ERROR: failed to create cluster: could not find a log line that matches "Reached target .*Multi-User System.*"\n' >&2; exit 1 ;;"#,
        )),
    );
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 1);
        let msg = format!("{e:#}");
        assert!(msg.contains("kind could not create the cluster"), "{msg}");
        assert!(
            msg.contains("could not find a log line that matches"),
            "{msg}"
        );
        assert!(msg.contains("state dir removed"), "{msg}");
        let calls = b.fakes.calls();
        let n = calls.len();
        assert!(
            calls[n - 3].starts_with("kind delete cluster --name harness-a --kubeconfig "),
            "{calls:?}"
        );
        // Its network goes too: no other harness kind cluster is there.
        assert_eq!(calls[n - 1], "docker network rm harness-kind", "{calls:?}");
        assert!(state_entries(&b.env).is_empty());
    }

    /// The fake kind whose `create` fails, as kubeadm does when a wait ran out,
    /// the first `fails` times (counted in files beside the fakes).
    fn kind_failing_creates(b: &Bed, fails: u32) -> String {
        let mark = b.fakes.dir.join("failed-create");
        let mut test = String::new();
        for i in 0..fails {
            test.push_str(&format!(
            "if [ ! -e '{m}{i}' ]; then : > '{m}{i}'; printf 'error: error execution phase wait-control-plane: unable to create ClusterRoleBinding: context deadline exceeded\\n' >&2; exit 1; fi; ",
            m = mark.display()
        ));
        }
        kind_script(&KIND.replace(
            r#""create cluster") printf"#,
            &format!(r#""create cluster") {test}printf"#),
        ))
    }

    #[tokio::test]
    async fn a_create_that_ran_out_of_time_is_made_once_more_and_said() {
        let b = bed();
        b.fakes.script("kind", &kind_failing_creates(&b, 1));
        let c = KindCluster::start(&spec("a"), &b.env).await.unwrap();
        assert_eq!(
            c.state.failed_creates.len(),
            1,
            "{:?}",
            c.state.failed_creates
        );
        assert!(
            c.state.failed_creates[0].contains(
                "try 1 of 2 ran out of time (error: error execution phase wait-control-plane"
            ),
            "{:?}",
            c.state.failed_creates
        );
        let kind_calls: Vec<String> = b
            .fakes
            .calls()
            .into_iter()
            .filter(|c| c.starts_with("kind create") || c.starts_with("kind delete"))
            .map(|c| c.split(" --").next().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            kind_calls,
            [
                "kind create cluster",
                "kind delete cluster",
                "kind create cluster"
            ]
        );
        let saved = std::fs::read_to_string(c.root.join("state.json")).unwrap();
        assert!(saved.contains("failed_creates"), "{saved}");
        c.down(false).unwrap();
    }

    #[tokio::test]
    async fn a_create_that_runs_out_of_time_twice_fails_and_leaves_nothing() {
        let b = bed();
        b.fakes.script("kind", &kind_failing_creates(&b, 2));
        let e = KindCluster::start(&spec("a"), &b.env).await.unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("context deadline exceeded"), "{msg}");
        assert!(msg.contains("state dir removed"), "{msg}");
        let creates = b
            .fakes
            .calls()
            .iter()
            .filter(|c| c.starts_with("kind create"))
            .count();
        assert_eq!(creates, 2);
        assert!(state_entries(&b.env).is_empty());
    }

    #[tokio::test]
    async fn a_k8s_version_other_than_the_configs_is_exit_2_before_any_command() {
        let b = bed();
        let mut s = spec("a");
        s.k8s_version = Some("1.36".into());
        let e = KindCluster::start(&s, &b.env).await.unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("gang-1.37.yaml"), "{e}");
        assert!(b.fakes.calls().is_empty());
    }

    #[tokio::test]
    async fn a_stopped_node_container_is_named() {
        let b = bed();
        let c = KindCluster::start(&spec("s"), &b.env).await.unwrap();
        b.fakes.script("docker", "printf 'exited 0\\n'\n");
        let e = c.check_containers().unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("harness-s-control-plane: exited 0"), "{msg}");
        let h = c.health().await;
        assert!(!h[0].running && !h[0].healthy && h[0].pid.is_none());
        b.fakes.script("docker", "printf 'OCI runtime exec failed: exec: \"curl\": executable file not found in $PATH\\n' >&2\nexit 127\n");
        let e = c.etcd_metrics().await.unwrap_err();
        assert!(format!("{e:#}").contains("has no curl"), "{e:#}");
        c.down(false).unwrap();
    }
}
