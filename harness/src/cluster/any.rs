//! A running cluster of whichever provider: one made here (found by name:
//! `down`, `status` and suites that attach to a running cluster go
//! through here; each provider keeps its own `state.json` under the
//! cluster's state dir, whose `provider` field says which loader to use)
//! or one the harness did not start. Every method of the `Cluster` trait
//! is passed to the provider's own — none falls back to the trait's
//! default here (a test reads both and checks it).

use std::path::Path;

use anyhow::Result;

use crate::cluster::audit::AuditEvent;
use crate::cluster::existing::ExistingCluster;
use crate::cluster::kind::KindCluster;
use crate::cluster::local::LocalCluster;
use crate::cluster::pool::NodePool;
use crate::cluster::provider::{Cluster, Processes};
use crate::cluster::spec::ComponentHealth;
use crate::cluster::spec::NodeSpec;
use crate::cluster::state::provider_of;
use crate::error::bad_input;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One variant per provider.
pub enum AnyCluster {
    Local(LocalCluster),
    Kind(KindCluster),
    Existing(ExistingCluster),
}

impl AnyCluster {
    /// Attach to the cluster called `name` the harness made, whatever its
    /// provider.
    pub fn load(name: &str) -> Result<AnyCluster> {
        match provider_of(name)?.as_str() {
            crate::cluster::local::PROVIDER => Ok(AnyCluster::Local(LocalCluster::load(name)?)),
            crate::cluster::kind::PROVIDER => Ok(AnyCluster::Kind(KindCluster::load(name)?)),
            other => Err(bad_input(format!(
                "cluster {name:?} was made by provider {other:?}, which this harness does not know"
            ))),
        }
    }

    pub fn provider(&self) -> &'static str {
        match self {
            AnyCluster::Local(_) => crate::cluster::local::PROVIDER,
            AnyCluster::Kind(_) => crate::cluster::kind::PROVIDER,
            AnyCluster::Existing(_) => crate::cluster::existing::PROVIDER,
        }
    }

    /// The server version the cluster runs, e.g. "1.37.1" (an existing
    /// cluster's is its probe's: empty until probed).
    pub fn k8s_version(&self) -> &str {
        match self {
            AnyCluster::Local(c) => &c.state.k8s_version,
            AnyCluster::Kind(c) => &c.state.k8s_version,
            AnyCluster::Existing(_) => "",
        }
    }

    /// The harness's own local cluster (None for the other providers).
    pub fn as_local(&self) -> Option<&LocalCluster> {
        match self {
            AnyCluster::Local(c) => Some(c),
            AnyCluster::Kind(_) => None,
            AnyCluster::Existing(_) => None,
        }
    }

    /// The release a fresh cluster's nodes turned out to run, where it may
    /// differ from the one asked for (kind: a pulled node image may be
    /// another patch); None where the asked release is what runs (local:
    /// the binaries resolved for it) or the harness started nothing
    /// (existing: the probe says).
    pub fn nodes_release(&self) -> Option<&str> {
        match self {
            AnyCluster::Kind(c) => Some(&c.state.k8s_version),
            AnyCluster::Local(_) => None,
            AnyCluster::Existing(_) => None,
        }
    }

    /// Where a failed run's state and logs are kept (None: a cluster the
    /// harness did not start keeps nothing of the harness's).
    pub fn state_dir(&self) -> Option<&Path> {
        match self {
            AnyCluster::Local(c) => Some(&c.layout.root),
            AnyCluster::Kind(c) => Some(&c.root),
            AnyCluster::Existing(_) => None,
        }
    }

    /// Err describing what is broken (dead processes with their log tails,
    /// a missing container), Ok when the provider sees nothing wrong.
    pub fn diagnose(&self) -> Result<()> {
        match self {
            AnyCluster::Local(c) => c.check_processes(),
            AnyCluster::Kind(c) => c.check_containers(),
            AnyCluster::Existing(c) => c.check_alive(),
        }
    }
}

/// Delegate a trait method to the variant.
macro_rules! each {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyCluster::Local($c) => $e,
            AnyCluster::Kind($c) => $e,
            AnyCluster::Existing($c) => $e,
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
    async fn apiserver_metrics(&self) -> Result<String> {
        each!(self, c => c.apiserver_metrics().await)
    }
    async fn debug_get(&self, component: &str, path: &str) -> Result<Vec<u8>> {
        each!(self, c => c.debug_get(component, path).await)
    }
    async fn etcd_metrics(&self) -> Result<String> {
        each!(self, c => c.etcd_metrics().await)
    }
    fn measures_etcd(&self) -> bool {
        each!(self, c => c.measures_etcd())
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
    fn audit_log(&self) -> Option<PathBuf> {
        each!(self, c => c.audit_log())
    }
    fn visit_audit(&self, offset: u64, each: &mut dyn FnMut(AuditEvent)) -> Result<u64> {
        each!(self, c => c.visit_audit(offset, each))
    }
    fn visit_audit_until(
        &self,
        offset: u64,
        until: u64,
        each: &mut dyn FnMut(AuditEvent),
    ) -> Result<u64> {
        each!(self, c => c.visit_audit_until(offset, until, each))
    }
    fn audit_events(&self, offset: u64) -> Result<(Vec<AuditEvent>, u64)> {
        each!(self, c => c.audit_events(offset))
    }
    fn audit_end(&self) -> Result<u64> {
        each!(self, c => c.audit_end())
    }
    fn run_labels(&self) -> BTreeMap<String, String> {
        each!(self, c => c.run_labels())
    }
    async fn set_capacity(&self, nodes: &NodeSpec) -> Result<()> {
        each!(self, c => c.set_capacity(nodes).await)
    }
    async fn add_pool(&self, pool: &NodePool) -> Result<Vec<String>> {
        each!(self, c => c.add_pool(pool).await)
    }
    async fn load_image_archive(
        &self,
        archive: &Path,
        content_named: Option<&str>,
    ) -> Result<usize> {
        each!(self, c => c.load_image_archive(archive, content_named).await)
    }
    async fn remove_nodes(&self, names: &[String]) -> Result<()> {
        each!(self, c => c.remove_nodes(names).await)
    }
    fn check_alive(&self) -> Result<()> {
        each!(self, c => c.check_alive())
    }
    async fn explain_failure(&self) -> Option<String> {
        each!(self, c => c.explain_failure().await)
    }
    async fn health(&self) -> Vec<ComponentHealth> {
        each!(self, c => c.health().await)
    }
    fn down(self, keep: bool) -> Result<()> {
        each!(self, c => c.down(keep))
    }
}

#[cfg(test)]
mod tests {
    /// The `fn` names declared in `text` (trait or impl), in order.
    fn fns(text: &str) -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let l = l.strip_prefix("async ").unwrap_or(l);
                let rest = l.strip_prefix("fn ")?;
                Some(rest.split(['(', '<']).next()?.to_string())
            })
            .collect()
    }

    #[test]
    fn every_method_of_the_trait_is_passed_to_the_provider() {
        let trait_src = include_str!("provider.rs");
        let start = trait_src.find("pub trait Cluster").expect("the trait");
        let end = start + trait_src[start..].find("\n}\n").expect("its end");
        let mut wanted = fns(&trait_src[start..end]);
        let any = include_str!("any.rs");
        let start = any.find("impl Cluster for AnyCluster").expect("the impl");
        let end = start + any[start..].find("\n}\n").expect("its end");
        let mut passed = fns(&any[start..end]);
        wanted.sort();
        passed.sort();
        assert!(wanted.len() >= 24, "{wanted:?}");
        assert_eq!(passed, wanted, "AnyCluster must pass every method on");
    }
}
