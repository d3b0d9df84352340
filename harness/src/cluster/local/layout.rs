//! What lives where in a cluster's state directory, and the ports it uses.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The per-cluster state directory (mode 0700).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Layout {
        Layout { root: root.into() }
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
    pub fn pki(&self, name: &str) -> PathBuf {
        self.root.join("pki").join(name)
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.pki("ca.crt")
    }
    pub fn log(&self, component: &str) -> PathBuf {
        self.root.join("logs").join(format!("{component}.log"))
    }
    /// The kubeconfig of one identity; `admin` is the one users get.
    pub fn kubeconfig(&self, identity: &str) -> PathBuf {
        self.root
            .join("kubeconfigs")
            .join(format!("{identity}.kubeconfig"))
    }
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.root.join("kubeconfig")
    }
    pub fn etcd_data(&self) -> PathBuf {
        self.root.join("etcd")
    }
    pub fn audit_log(&self) -> PathBuf {
        self.root.join("audit.log")
    }
    pub fn audit_policy(&self) -> PathBuf {
        self.root.join("audit-policy.yaml")
    }
    pub fn state_file(&self) -> PathBuf {
        self.root.join("state.json")
    }
    pub fn jobset_config(&self) -> PathBuf {
        self.root.join("jobset-config.yaml")
    }
    pub fn jobset_cert_dir(&self) -> PathBuf {
        self.root.join("jobset-certs")
    }
    pub fn kueue_config(&self) -> PathBuf {
        self.root.join("kueue-config.yaml")
    }
    pub fn kueue_cert_dir(&self) -> PathBuf {
        self.root.join("kueue-certs")
    }
    /// Laid over the Kueue process's /etc (cluster/local/kueue.rs).
    pub fn kueue_etc(&self) -> PathBuf {
        self.root.join("kueue-etc")
    }
    pub fn kwok_config(&self) -> PathBuf {
        self.root.join("kwok.yaml")
    }
    /// The file kwok serves as every container's log.
    pub fn kwok_log(&self) -> PathBuf {
        self.root.join("kwok-logs").join("container.log")
    }
    pub fn display(&self) -> std::path::Display<'_> {
        self.root.display()
    }
    pub fn path(&self) -> &Path {
        &self.root
    }
}

/// Every port a local cluster listens on, all on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    pub etcd_client: u16,
    pub etcd_peer: u16,
    pub apiserver: u16,
    pub controller_manager: u16,
    pub scheduler: u16,
    pub jobset_webhook: u16,
    pub jobset_health: u16,
    pub jobset_metrics: u16,
    pub kwok: u16,
    /// Kueue's webhooks, health, metrics and visibility server (allocated
    /// on every cluster; 0 in the state of clusters from before Kueue).
    #[serde(default)]
    pub kueue_webhook: u16,
    #[serde(default)]
    pub kueue_health: u16,
    #[serde(default)]
    pub kueue_metrics: u16,
    #[serde(default)]
    pub kueue_visibility: u16,
    /// A real node's kubelet: its server and healthz (allocated on every
    /// cluster; 0 in the state of clusters from before real nodes).
    #[serde(default)]
    pub kubelet: u16,
    #[serde(default)]
    pub kubelet_healthz: u16,
}

impl Ports {
    pub const COUNT: usize = 15;

    pub fn from_list(p: &[u16]) -> Ports {
        assert_eq!(p.len(), Self::COUNT, "one port per endpoint");
        Ports {
            etcd_client: p[0],
            etcd_peer: p[1],
            apiserver: p[2],
            controller_manager: p[3],
            scheduler: p[4],
            jobset_webhook: p[5],
            jobset_health: p[6],
            jobset_metrics: p[7],
            kwok: p[8],
            kueue_webhook: p[9],
            kueue_health: p[10],
            kueue_metrics: p[11],
            kueue_visibility: p[12],
            kubelet: p[13],
            kubelet_healthz: p[14],
        }
    }

    pub fn etcd_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.etcd_client)
    }
    pub fn apiserver_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.apiserver)
    }
}
