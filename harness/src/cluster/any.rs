//! A cluster of whichever provider made it, found by name. `down`,
//! `status` and suites that attach to a running cluster go through here;
//! each provider keeps its own `state.json` under the cluster's state dir,
//! whose `provider` field says which loader to use.

use std::path::Path;

use anyhow::Result;

use crate::cluster::kind::KindCluster;
use crate::cluster::local::LocalCluster;
use crate::cluster::pool::NodePool;
use crate::cluster::provider::{Cluster, Processes};
use crate::cluster::spec::ComponentHealth;
use crate::cluster::spec::NodeSpec;
use crate::cluster::state::provider_of;
use crate::error::bad_input;
use std::path::PathBuf;

/// One variant per provider.
pub enum AnyCluster {
    Local(LocalCluster),
    Kind(KindCluster),
}

impl AnyCluster {
    /// Attach to the cluster called `name`, whatever its provider.
    pub fn load(name: &str) -> Result<AnyCluster> {
        match provider_of(name)?.as_str() {
            "local" => Ok(AnyCluster::Local(LocalCluster::load(name)?)),
            crate::cluster::kind::PROVIDER => Ok(AnyCluster::Kind(KindCluster::load(name)?)),
            other => Err(bad_input(format!(
                "cluster {name:?} was made by provider {other:?}, which this harness does not know"
            ))),
        }
    }

    pub fn provider(&self) -> &'static str {
        match self {
            AnyCluster::Local(_) => "local",
            AnyCluster::Kind(_) => crate::cluster::kind::PROVIDER,
        }
    }

    /// The server version the cluster runs, e.g. "1.37.1".
    pub fn k8s_version(&self) -> &str {
        match self {
            AnyCluster::Local(c) => &c.state.k8s_version,
            AnyCluster::Kind(c) => &c.state.k8s_version,
        }
    }

    /// Err describing what is broken (dead processes with their log tails,
    /// a missing container), Ok when the provider sees nothing wrong.
    pub fn diagnose(&self) -> Result<()> {
        match self {
            AnyCluster::Local(c) => c.check_processes(),
            AnyCluster::Kind(c) => c.check_containers(),
        }
    }
}

/// Delegate a trait method to the variant.
macro_rules! each {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyCluster::Local($c) => $e,
            AnyCluster::Kind($c) => $e,
        }
    };
}

impl Cluster for AnyCluster {
    fn name(&self) -> &str {
        each!(self, c => c.name())
    }
    fn kubeconfig(&self) -> &Path {
        each!(self, c => c.kubeconfig())
    }
    async fn client(&self) -> Result<kube::Client> {
        each!(self, c => c.client().await)
    }
    async fn debug_get(&self, component: &str, path: &str) -> Result<Vec<u8>> {
        each!(self, c => c.debug_get(component, path).await)
    }
    async fn etcd_metrics(&self) -> Result<String> {
        each!(self, c => c.etcd_metrics().await)
    }
    async fn scheduler_metrics(&self) -> Result<Option<String>> {
        each!(self, c => c.scheduler_metrics().await)
    }
    async fn controller_manager_metrics(&self) -> Result<Option<String>> {
        each!(self, c => c.controller_manager_metrics().await)
    }
    fn processes(&self) -> Processes {
        each!(self, c => c.processes())
    }
    fn harness_users(&self) -> Vec<String> {
        each!(self, c => c.harness_users())
    }
    fn check_alive(&self) -> Result<()> {
        each!(self, c => c.check_alive())
    }
    async fn explain_failure(&self) -> Option<String> {
        each!(self, c => c.explain_failure().await)
    }
    fn audit_log(&self) -> Option<PathBuf> {
        each!(self, c => c.audit_log())
    }
    async fn set_capacity(&self, nodes: &NodeSpec) -> Result<()> {
        each!(self, c => c.set_capacity(nodes).await)
    }
    async fn add_pool(&self, pool: &NodePool) -> Result<Vec<String>> {
        each!(self, c => c.add_pool(pool).await)
    }
    async fn remove_nodes(&self, names: &[String]) -> Result<()> {
        each!(self, c => c.remove_nodes(names).await)
    }
    async fn health(&self) -> Vec<ComponentHealth> {
        each!(self, c => c.health().await)
    }
    fn down(self, keep: bool) -> Result<()> {
        each!(self, c => c.down(keep))
    }
}
