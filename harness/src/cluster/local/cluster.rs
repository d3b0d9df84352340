//! A local cluster: its state directory prepared, its components started
//! as processes and waited for (`LocalCluster::start`), attached by name
//! (`load`), checked, stopped in two waves — and the `Cluster` trait on it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::cluster::client::{client_from_kubeconfig, http_client, http_get};
use crate::cluster::controllers::WebhookEndpoint;
use crate::cluster::local::components::{self, ComponentDef, ETCD, Wait};
use crate::cluster::local::endpoints;
use crate::cluster::local::files;
use crate::cluster::local::flags::Gates;
use crate::cluster::local::health;
use crate::cluster::local::identity::ADMIN_USER;
use crate::cluster::local::kueue;
use crate::cluster::local::layout::{Layout, Ports};
use crate::cluster::local::nodes;
use crate::cluster::local::ports;
use crate::cluster::local::process::{self, Proc, log_tail};
use crate::cluster::local::realnode;
use crate::cluster::local::start_up;
use crate::cluster::local::state::State;
use crate::cluster::pool::NodePool;
use crate::cluster::provider::{Cluster, Processes};
use crate::cluster::spec::ClusterSpec;
use crate::cluster::spec::ComponentHealth;
use crate::cluster::spec::NodeSpec;
use crate::cluster::state::{NameLock, cluster_dir, validate_name};
use crate::error::bad_input;
use crate::k8s::K8sRelease;
use crate::tools::Tools;

pub struct LocalCluster {
    pub layout: Layout,
    pub state: State,
    /// Handles of processes this harness process started (to reap them).
    children: Mutex<Vec<Child>>,
    /// The name's lock while this process starts the cluster.
    lock: Option<NameLock>,
    client: tokio::sync::OnceCell<kube::Client>,
    kubeconfig: PathBuf,
}

impl LocalCluster {
    /// Start every component and wait until each answers its health check.
    /// Installing JobSet's CRDs and webhooks and creating the nodes are the
    /// caller's next steps (see `lifecycle::up`).
    pub async fn start(spec: &ClusterSpec, tools: &Tools) -> Result<LocalCluster> {
        let mut cluster = Self::prepare(spec, tools)?;
        cluster.launch(tools).await?;
        Ok(cluster)
    }

    /// Create the state directory with certificates, kubeconfigs and
    /// configuration files; start nothing.
    fn prepare(spec: &ClusterSpec, tools: &Tools) -> Result<LocalCluster> {
        validate_name(&spec.name)?;
        crate::inotify::check_room(&crate::inotify::local_need(
            spec.kueue.is_some(),
            spec.real_node,
        ))?;
        let lock = crate::cluster::state::lock(&spec.name)?;
        let k8s = K8sRelease::parse(&spec.k8s_minor)?;
        let root = cluster_dir(&spec.name);
        if root.exists() {
            match LocalCluster::load(&spec.name) {
                Ok(existing) if existing.state.procs.iter().any(Proc::is_running) => {
                    return Err(bad_input(format!(
                        "cluster {:?} is already running (state in {}); use another --name or `harness down --name {}`",
                        spec.name,
                        root.display(),
                        spec.name
                    )));
                }
                _ => {
                    // Left over from a run that died: nothing of it runs.
                    std::fs::remove_dir_all(&root).with_context(|| {
                        format!("removing the stale state directory {}", root.display())
                    })?;
                }
            }
        }
        let layout = Layout::new(&root);
        files::make_dirs(&layout)?;

        let ports = Ports::from_list(&ports::free_ports(Ports::COUNT)?);
        let real_node = match spec.real_node {
            true => Some(realnode::place(&root)?),
            false => None,
        };
        let mut binaries = BTreeMap::new();
        for (c, r) in &tools.bins {
            binaries.insert(
                c.name().to_string(),
                format!("{} (v{})", r.path.display(), r.version),
            );
        }
        let state = State {
            name: spec.name.clone(),
            provider: "local".into(),
            k8s_version: k8s.version.to_string(),
            spec: spec.clone(),
            ports,
            procs: Vec::new(),
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            binaries,
            ready: false,
            real_node,
        };
        let cluster = LocalCluster {
            kubeconfig: layout.admin_kubeconfig(),
            layout,
            state,
            children: Mutex::new(Vec::new()),
            client: tokio::sync::OnceCell::new(),
            lock: Some(lock),
        };
        cluster.save()?;
        files::write_files(
            &cluster.layout,
            spec,
            &ports,
            cluster.state.real_node.as_ref(),
        )?;
        Ok(cluster)
    }

    /// Start the processes (after `start` wrote the files). On error the
    /// processes started so far are stopped and their logs kept.
    async fn launch(&mut self, tools: &Tools) -> Result<()> {
        match self.launch_inner(tools).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.stop_processes();
                if let Err(left) = self.clean_up_node() {
                    tracing::warn!("{left:#}");
                }
                Err(e.context(format!(
                    "starting local cluster {:?} (logs kept in {}; `harness down --name {}` removes them)",
                    self.state.name,
                    self.layout.display(),
                    self.state.name
                )))
            }
        }
    }

    async fn launch_inner(&mut self, tools: &Tools) -> Result<()> {
        let list = self.components()?;
        // Before anything starts: a machine that cannot run Kueue says so.
        for dir in list.iter().filter_map(|c| c.etc_overlay.as_ref()) {
            kueue::check_namespaces(dir)?;
        }
        for c in list.iter().filter(|c| c.wait != Wait::StartAfterInstall) {
            if c.name == realnode::CONTAINERD {
                realnode::lay_out(&self.layout, tools, &self.state.k8s_version)?;
            }
            self.spawn_component(c, tools)?;
            if c.wait == Wait::Before {
                self.wait_until(c, tools).await?;
            }
            if c.name == realnode::CONTAINERD {
                let step = crate::progress::Step::start("importing the real node's image");
                realnode::import_image(&self.layout.node(), tools)?;
                step.done("done");
            }
        }
        for c in list.iter().filter(|c| c.wait == Wait::AfterAll) {
            self.wait_until(c, tools).await?;
        }
        Ok(())
    }

    /// Start the components that wait for `up`'s installs (JobSet,
    /// Kueue) all at once, then wait until each is healthy. On error the
    /// caller stops every process (logs kept).
    pub async fn start_after_install(&mut self, tools: &Tools) -> Result<()> {
        let list = self.components()?;
        let after: Vec<&ComponentDef> = list
            .iter()
            .filter(|c| c.wait == Wait::StartAfterInstall)
            .collect();
        for c in &after {
            self.spawn_component(c, tools)?;
        }
        for c in after {
            self.wait_until(c, tools).await?;
        }
        Ok(())
    }

    fn spawn_component(&mut self, c: &ComponentDef, tools: &Tools) -> Result<()> {
        let bin = tools.path(c.binary)?;
        match &c.etc_overlay {
            None => self.spawn(c.name, bin, &c.args, &c.env),
            Some(dir) => {
                let (wrapper, argv) = kueue::in_etc_overlay(dir, bin, &c.args);
                self.spawn(c.name, &wrapper, &argv, &c.env)
            }
        }
    }

    /// This cluster's components, from its state (the same list `up`
    /// started).
    pub fn components(&self) -> Result<Vec<ComponentDef>> {
        let k8s = K8sRelease::parse(&self.state.spec.k8s_minor)?;
        let gates = Gates {
            feature_gates: self.state.spec.feature_gates.clone(),
            runtime_config: self.state.spec.runtime_config.clone(),
        };
        Ok(components::components(
            k8s,
            &self.layout,
            &self.state.ports,
            &gates,
            &self.state.spec.control_plane.settings(),
            self.state.spec.kueue.as_ref(),
            self.state.real_node.as_ref(),
        ))
    }

    fn spawn(
        &mut self,
        name: &str,
        bin: &Path,
        args: &[String],
        env: &[(&str, String)],
    ) -> Result<()> {
        let (p, child) = process::spawn(name, bin, args, &self.layout.log(name), env)?;
        self.state.procs.push(p);
        self.children
            .lock()
            .map_err(|_| anyhow::anyhow!("child list poisoned"))?
            .push(child);
        self.save()
    }

    /// Wait until component `c` is healthy; start it once more when it
    /// exited during start-up on a slow etcd (`start_up`).
    async fn wait_until(&mut self, c: &ComponentDef, tools: &Tools) -> Result<()> {
        let log = self.layout.log(c.name);
        let mut started = 1;
        loop {
            let running = || {
                self.reap();
                self.proc(c.name).is_none_or(Proc::is_running)
            };
            match start_up::wait_for(c, &log, running).await {
                Err(e) if started < start_up::STARTS && start_up::exited_on_a_slow_store(&e) => {
                    started += 1;
                    start_up::say_started_again(c.name, &log, started);
                    self.state.procs.retain(|p| p.name != c.name);
                    self.spawn_component(c, tools)?;
                }
                other => return other,
            }
        }
    }

    fn reap(&self) {
        if let Ok(mut children) = self.children.lock() {
            for c in children.iter_mut() {
                let _ = c.try_wait();
            }
        }
    }

    fn save(&self) -> Result<()> {
        crate::output::write_atomic(
            &self.layout.state_file(),
            serde_json::to_vec_pretty(&self.state)?,
        )
    }

    /// Attach to a cluster started earlier (by this or another process).
    pub fn load(name: &str) -> Result<LocalCluster> {
        validate_name(name)?;
        let layout = Layout::new(cluster_dir(name));
        let path = layout.state_file();
        let text = crate::cluster::state::read_state_file(&path, "local cluster", name)?;
        let state: State = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a cluster state file", path.display()))?;
        Ok(LocalCluster {
            kubeconfig: layout.admin_kubeconfig(),
            layout,
            state,
            children: Mutex::new(Vec::new()),
            client: tokio::sync::OnceCell::new(),
            lock: None,
        })
    }

    /// `up` is done: record it and let go of the name's lock.
    pub fn mark_ready(&mut self) -> Result<()> {
        self.state.ready = true;
        self.save()?;
        self.lock = None;
        Ok(())
    }

    /// Components of the cluster's spec with no recorded process (a start
    /// that died half-way).
    pub fn missing_components(&self) -> Vec<&'static str> {
        self.components()
            .map(|list| {
                list.iter()
                    .map(|c| c.name)
                    .filter(|n| !self.state.procs.iter().any(|p| p.name == *n))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Err naming every component that is not running, with its log's tail.
    pub fn check_processes(&self) -> Result<()> {
        self.reap();
        let dead: Vec<&Proc> = self
            .state
            .procs
            .iter()
            .filter(|p| !p.is_running())
            .collect();
        if dead.is_empty() {
            return Ok(());
        }
        let mut msg = format!(
            "local cluster {:?} is broken: {} not running",
            self.state.name,
            dead.iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for p in dead {
            msg.push_str(&format!(
                "\n  {} (pid {}) has exited; last lines of {}:\n{}",
                p.name,
                p.pid,
                p.log,
                log_tail(Path::new(&p.log), 8)
            ));
        }
        Err(anyhow::anyhow!(msg))
    }

    pub fn proc(&self, name: &str) -> Option<&Proc> {
        self.state.procs.iter().find(|p| p.name == name)
    }

    /// Where the JobSet controller serves its webhooks.
    pub fn jobset_webhook(&self) -> Result<WebhookEndpoint> {
        endpoints::webhook(&self.layout, self.state.ports.jobset_webhook)
    }

    /// Where the Kueue controller serves its webhooks.
    pub fn kueue_webhook(&self) -> Result<WebhookEndpoint> {
        endpoints::webhook(&self.layout, self.state.ports.kueue_webhook)
    }

    /// kube-scheduler's Prometheus metrics (endpoints::component_metrics).
    pub async fn scheduler_metrics_text(&self) -> Result<String> {
        self.check_processes()?;
        endpoints::component_metrics(&self.layout, self.state.ports.scheduler, "kube-scheduler")
            .await
    }

    /// The kubeconfig of an identity of this cluster (its name in
    /// IDENTITIES).
    pub fn kubeconfig_of(&self, identity: &str) -> PathBuf {
        if identity == "admin" {
            self.layout.admin_kubeconfig()
        } else {
            self.layout.kubeconfig(identity)
        }
    }

    /// A client acting as another identity of this cluster.
    pub async fn client_as(&self, identity: &str) -> Result<kube::Client> {
        self.check_processes()?;
        client_from_kubeconfig(&self.kubeconfig_of(identity)).await
    }

    /// Stop in two waves: clients of the API server and the API server
    /// itself first, etcd last — an API server whose etcd is gone spends
    /// its whole grace period retrying it.
    fn stop_processes(&self) -> Vec<String> {
        let (store, rest): (Vec<Proc>, Vec<Proc>) = self
            .state
            .procs
            .iter()
            .cloned()
            .partition(|p| p.name == ETCD);
        let mut killed = process::stop_all(&rest, Duration::from_secs(10), || self.reap());
        killed.extend(process::stop_all(&store, Duration::from_secs(10), || {
            self.reap()
        }));
        killed
    }

    /// What the real node left once its processes stopped (realnode::cleanup).
    fn clean_up_node(&self) -> Result<()> {
        match self.state.real_node {
            Some(_) => realnode::cleanup::cleanup(&self.layout),
            None => Ok(()),
        }
    }
}

impl Cluster for LocalCluster {
    fn name(&self) -> &str {
        &self.state.name
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    async fn client(&self) -> Result<kube::Client> {
        self.check_processes()?;
        let path = self.layout.admin_kubeconfig();
        self.client
            .get_or_try_init(|| client_from_kubeconfig(&path))
            .await
            .cloned()
    }

    async fn debug_get(&self, component: &str, path: &str) -> Result<Vec<u8>> {
        self.check_processes()?;
        match component {
            components::ETCD => {
                let url = format!("{}{path}", self.state.ports.etcd_url());
                let resp = http_client()?
                    .get(&url)
                    .timeout(std::time::Duration::from_secs(600))
                    .send()
                    .await
                    .with_context(|| format!("GET {url}"))?
                    .error_for_status()
                    .with_context(|| format!("GET {url}"))?;
                Ok(resp.bytes().await?.to_vec())
            }
            components::APISERVER => {
                crate::cluster::client::client_get_bytes(&self.client().await?, path).await
            }
            other => anyhow::bail!("{other}'s debug endpoints are not served to the harness"),
        }
    }

    async fn etcd_metrics(&self) -> Result<String> {
        self.check_processes()?;
        http_get(&format!("{}/metrics", self.state.ports.etcd_url())).await
    }

    async fn scheduler_metrics(&self) -> Result<Option<String>> {
        self.scheduler_metrics_text().await.map(Some)
    }

    async fn controller_manager_metrics(&self) -> Result<Option<String>> {
        self.check_processes()?;
        endpoints::component_metrics(
            &self.layout,
            self.state.ports.controller_manager,
            "kube-controller-manager",
        )
        .await
        .map(Some)
    }

    fn processes(&self) -> Processes {
        // Each component leads its own process group (process::spawn).
        Processes::Groups(
            self.state
                .procs
                .iter()
                .map(|p| (p.name.clone(), p.pid))
                .collect(),
        )
    }

    fn harness_users(&self) -> Vec<String> {
        vec![ADMIN_USER.to_string()]
    }

    fn check_alive(&self) -> Result<()> {
        self.check_processes()
    }

    fn audit_log(&self) -> Option<PathBuf> {
        Some(self.layout.audit_log())
    }

    async fn set_capacity(&self, spec: &NodeSpec) -> Result<()> {
        nodes::set_capacity(self.client().await?, spec).await
    }

    async fn add_pool(&self, pool: &NodePool) -> Result<Vec<String>> {
        nodes::add_pool(self.client().await?, pool, || self.check_processes()).await
    }

    async fn remove_nodes(&self, names: &[String]) -> Result<()> {
        nodes::remove(self.client().await?, names).await
    }

    async fn health(&self) -> Vec<ComponentHealth> {
        self.reap();
        let defs = self.components().unwrap_or_default();
        health::report(
            &defs,
            &self.missing_components(),
            self.state.ready,
            &self.state.procs,
        )
        .await
    }

    fn down(self, keep: bool) -> Result<()> {
        // Stopping is this process's alone, unless it started the cluster
        // and holds the name already.
        let _lock = match &self.lock {
            Some(_) => None,
            None => Some(crate::cluster::state::lock(&self.state.name)?),
        };
        // A cluster whose state goes with it is killed at once: its logs,
        // its etcd data and what its processes would flush on SIGTERM
        // (klog flushes every 5 s) are removed next. Kept state, and a real
        // node (its kubelet and containerd leave containers and mounts the
        // cleanup then reads), stop gracefully.
        if keep || self.state.real_node.is_some() {
            let killed = self.stop_processes();
            if !killed.is_empty() {
                tracing::warn!("had to SIGKILL {}", killed.join(", "));
            }
        } else {
            let left = process::kill_all(&self.state.procs, || self.reap());
            if !left.is_empty() {
                tracing::warn!("still running after SIGKILL: {}", left.join(", "));
            }
        }
        let still: Vec<&str> = self
            .state
            .procs
            .iter()
            .filter(|p| p.is_running())
            .map(|p| p.name.as_str())
            .collect();
        if !still.is_empty() {
            bail!(
                "could not stop {} of cluster {:?}",
                still.join(", "),
                self.state.name
            );
        }
        // Mounts left under the state directory must go before it does.
        self.clean_up_node()?;
        if !keep {
            std::fs::remove_dir_all(&self.layout.root)
                .with_context(|| format!("removing {}", self.layout.display()))?;
        }
        Ok(())
    }
}
