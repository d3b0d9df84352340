//! Storage on the local provider: a default StorageClass served by the
//! controller manager's built-in hostPath provisioner
//! (`--enable-hostpath-provisioner`, kubernetes.io/host-path), so a claim
//! of the default class is provisioned and bound by real Kubernetes code —
//! the persistent-volume-binder controller, attributed to its own service
//! account — and its volume deleted with it.

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::install::apply::apply_all;

/// The default StorageClass of a local cluster.
pub const STORAGE_CLASS: &str = "harness-hostpath";
/// The in-tree hostPath provisioner's name.
pub const PROVISIONER: &str = "kubernetes.io/host-path";

/// The StorageClass object: default class, Delete reclaim, Immediate binding
/// (pods on fake nodes never mount anything, so there is no node to wait
/// for).
pub fn storage_class() -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    })
}

/// Create the default StorageClass.
pub async fn install(client: &kube::Client) -> Result<()> {
    apply_all(client, &[storage_class()])
        .await
        .context("creating the default StorageClass")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_is_the_default_and_uses_the_in_tree_provisioner() {
        let sc = storage_class();
        assert_eq!(
            sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
            "true"
        );
        assert_eq!(sc["provisioner"], PROVISIONER);
        assert_eq!(sc["reclaimPolicy"], "Delete");
    }
}
