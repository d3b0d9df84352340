//! The node's files under the cluster's state directory.

use std::path::{Path, PathBuf};

use crate::cluster::local::layout::Layout;

/// The node's files under the cluster's state directory.
pub struct NodeDirs {
    root: PathBuf,
}

impl Layout {
    pub fn node(&self) -> NodeDirs {
        NodeDirs {
            root: self.root.join("node"),
        }
    }
}

impl NodeDirs {
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// Links named as containerd looks them up on PATH (its shim).
    pub fn bin(&self) -> PathBuf {
        self.root.join("bin")
    }
    /// Links named as CNI plugins are called (bridge, host-local, loopback).
    pub fn cni_bin(&self) -> PathBuf {
        self.root.join("cni-bin")
    }
    pub fn cni_conf(&self) -> PathBuf {
        self.root.join("cni-conf")
    }
    pub fn containerd_config(&self) -> PathBuf {
        self.root.join("containerd.toml")
    }
    pub fn socket(&self) -> PathBuf {
        self.root.join("run").join("containerd.sock")
    }
    pub fn kubelet_config(&self) -> PathBuf {
        self.root.join("kubelet.yaml")
    }
    pub fn kubelet_root(&self) -> PathBuf {
        self.root.join("kubelet")
    }
    pub fn pod_logs(&self) -> PathBuf {
        self.root.join("pod-logs")
    }
    /// The host's settings before the node changed them (host.rs).
    pub fn host_before(&self) -> PathBuf {
        self.root.join("host-before.json")
    }
    pub fn image_archive(&self) -> PathBuf {
        self.root.join("image.tar")
    }
}
