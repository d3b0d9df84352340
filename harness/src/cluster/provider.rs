//! The one trait every provider implements: what workloads and commands
//! may ask of a running cluster, whichever provider made it.

use std::future::Future;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cluster::audit::AuditEvent;
use crate::cluster::pool::NodePool;
use crate::cluster::spec::{ComponentHealth, NodeSpec};

/// Where a provider's control-plane processes can be seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processes {
    /// Not from this machine.
    Unseen,
    /// Process groups on this machine: (component name, process group id).
    Groups(Vec<(String, i32)>),
    /// Inside these containers on this machine (kind's nodes), read with
    /// `docker exec`; components are told apart by their command names.
    InContainers {
        docker: PathBuf,
        containers: Vec<String>,
    },
}

/// A running cluster, whichever provider made it.
pub trait Cluster: Sync {
    fn name(&self) -> &str;
    fn kubeconfig(&self) -> &Path;
    /// A client with the cluster-admin identity. Fails, naming the
    /// component, when part of the control plane is down.
    fn client(&self) -> impl Future<Output = Result<kube::Client>> + Send;
    /// The API server's Prometheus metrics text, read through the admin
    /// client (so a provider's `client` checks apply).
    fn apiserver_metrics(&self) -> impl Future<Output = Result<String>> + Send {
        async move { crate::cluster::client::client_get(&self.client().await?, "/metrics").await }
    }
    /// GET a debug endpoint (pprof) of a control-plane component, the body
    /// as bytes: the API server's through the admin client; others only
    /// where the provider can reach them.
    fn debug_get(
        &self,
        component: &str,
        path: &str,
    ) -> impl Future<Output = Result<Vec<u8>>> + Send {
        let (component, path) = (component.to_string(), path.to_string());
        async move {
            match component.as_str() {
                "kube-apiserver" => {
                    crate::cluster::client::client_get_bytes(&self.client().await?, &path).await
                }
                other => {
                    anyhow::bail!("{other}'s debug endpoints are not reachable on this provider")
                }
            }
        }
    }
    /// etcd's Prometheus metrics text.
    fn etcd_metrics(&self) -> impl Future<Output = Result<String>> + Send;
    /// Whether etcd's metrics can be read at all (a cluster the harness
    /// did not start may not say where they are): when not, windows
    /// report etcd's figures as not measured instead of failing.
    fn measures_etcd(&self) -> bool {
        true
    }
    /// kube-scheduler's Prometheus metrics text, when the provider can
    /// reach it (None otherwise).
    fn scheduler_metrics(&self) -> impl Future<Output = Result<Option<String>>> + Send {
        async { Ok(None) }
    }
    /// kube-controller-manager's Prometheus metrics text, when the
    /// provider serves it to the harness (None otherwise).
    fn controller_manager_metrics(&self) -> impl Future<Output = Result<Option<String>>> + Send {
        async { Ok(None) }
    }
    /// Where the control-plane processes can be seen, for CPU and memory
    /// per component (metrics::usage).
    fn processes(&self) -> Processes {
        Processes::Unseen
    }
    /// The user names the harness itself acts as on this cluster (its
    /// setup, watches, scrapes): measurement counts their requests apart.
    fn harness_users(&self) -> Vec<String>;
    /// The API server's audit log (JSON lines) on this machine; None when
    /// the provider cannot reach it.
    fn audit_log(&self) -> Option<PathBuf>;
    /// Each audit event written since byte `offset` of the audit log, in
    /// order, none kept; the offset to read from next time.
    fn visit_audit(&self, offset: u64, each: &mut dyn FnMut(AuditEvent)) -> Result<u64> {
        self.visit_audit_until(offset, u64::MAX, each)
    }
    /// `visit_audit`, up to byte `until` (a window's end, from
    /// `audit_end`) at most.
    fn visit_audit_until(
        &self,
        offset: u64,
        until: u64,
        each: &mut dyn FnMut(AuditEvent),
    ) -> Result<u64> {
        match self.audit_log() {
            Some(path) => crate::cluster::audit::visit_between(&path, offset, until, each),
            None => Err(no_audit_log(self.name())),
        }
    }
    /// Audit events written since byte `offset`, and the offset to read
    /// from next time.
    fn audit_events(&self, offset: u64) -> Result<(Vec<AuditEvent>, u64)> {
        let mut events = Vec::new();
        let end = self.visit_audit(offset, &mut |e| events.push(e))?;
        Ok((events, end))
    }
    /// The audit log's current end (after its last complete event).
    fn audit_end(&self) -> Result<u64> {
        match self.audit_log() {
            Some(path) => crate::cluster::audit::end_offset(&path),
            None => Err(no_audit_log(self.name())),
        }
    }
    /// Labels everything a workload creates on this cluster carries
    /// (namespaces, pool nodes): the run id on clusters the harness did
    /// not start, so cleanup finds what is left by it.
    fn run_labels(&self) -> std::collections::BTreeMap<String, String> {
        Default::default()
    }
    /// Make the cluster's schedulable capacity exactly `nodes`.
    fn set_capacity(&self, nodes: &NodeSpec) -> impl Future<Output = Result<()>> + Send;
    /// Add a pool of nodes for one workload and wait until they are Ready;
    /// their names. Providers whose nodes are not fake refuse (exit 2).
    fn add_pool(&self, pool: &NodePool) -> impl Future<Output = Result<Vec<String>>> + Send {
        let name = self.name().to_string();
        let n = pool.count;
        async move {
            Err(crate::error::bad_input(format!(
                "cluster {name:?} cannot add nodes (asked for {n}): its provider runs real nodes"
            )))
        }
    }
    /// Import an image archive (OCI or docker, a file on this machine)
    /// into every node's container runtime, where the kubelet finds it:
    /// how images built here reach nodes that no registry serves. With
    /// `content_named` (the image's reference, when its tag is a digest of
    /// its content), a node that has it already is skipped. A provider
    /// whose nodes cannot take one refuses (exit 2). How many nodes it
    /// was loaded into.
    fn load_image_archive(
        &self,
        archive: &Path,
        content_named: Option<&str>,
    ) -> impl Future<Output = Result<usize>> + Send {
        let _ = content_named;
        let name = self.name().to_string();
        let archive = archive.display().to_string();
        async move {
            Err(crate::error::bad_input(format!(
                "cluster {name:?} cannot load the image archive {archive} into its nodes: its provider has no node containers to import it into"
            )))
        }
    }
    /// Remove nodes a pool added.
    fn remove_nodes(&self, names: &[String]) -> impl Future<Output = Result<()>> + Send {
        let n = names.len();
        async move {
            if n == 0 {
                Ok(())
            } else {
                Err(crate::error::bad_input("this provider adds no nodes"))
            }
        }
    }
    /// Err naming every part of the cluster that has died (with its log's
    /// tail where there is one); Ok when the provider sees nothing wrong.
    /// Cheap: commands check it while they run.
    fn check_alive(&self) -> Result<()> {
        Ok(())
    }
    /// What the provider can add about a failure while every part still
    /// runs: for kind, the control-plane components the node's kubelet
    /// restarted (kind/restarts.rs). None when it sees nothing to add.
    fn explain_failure(&self) -> impl Future<Output = Option<String>> + Send {
        async { None }
    }
    /// Per-component health.
    fn health(&self) -> impl Future<Output = Vec<ComponentHealth>> + Send;
    /// Stop everything; keep the state directory when `keep`.
    fn down(self, keep: bool) -> Result<()>;
}

fn no_audit_log(cluster: &str) -> anyhow::Error {
    anyhow::anyhow!("cluster {cluster:?}: its API server's audit log is not readable from here")
}
