//! The identity a measured workload acts as on a fresh cluster. On the
//! local provider: the `workload` user its CA certifies (a cluster
//! admin). On kind: the ServiceAccount `harness-workload` of the namespace
//! `harness-measure`, bound to cluster-admin, through a token kubeconfig —
//! as `bench thor --provider kind` gives HPCC's identities
//! (cluster/existing/site.rs). On an existing cluster, a namespace's
//! admin only (lifecycle::measured::existing). The identity is made before the
//! window opens, so its requests are not the workload's.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;

use crate::cluster::local::identity::WORKLOAD_USER;
use crate::cluster::{AnyCluster, Cluster};

/// The workload's ServiceAccount on kind (and, in its run's namespace,
/// on an existing cluster: existing.rs).
const NAMESPACE: &str = "harness-measure";
pub const ACCOUNT: &str = "harness-workload";

/// The workload's identity on a cluster: its kubeconfig and a client.
pub struct Identity {
    pub kubeconfig: PathBuf,
    pub client: kube::Client,
}

/// Make (on kind) or find (locally) the workload's identity; a kind
/// token lives `ttl` and its kubeconfig is written into the cluster's
/// state dir, removed with the cluster.
pub async fn identity(cluster: &AnyCluster, ttl: Duration) -> Result<Identity> {
    match cluster {
        AnyCluster::Local(c) => Ok(Identity {
            kubeconfig: c.kubeconfig_of(WORKLOAD_USER),
            client: c.client_as(WORKLOAD_USER).await?,
        }),
        AnyCluster::Existing(_) => Err(crate::error::bad_input(
            "on an existing cluster a run's identity is its namespace's (lifecycle::measured::existing::site)",
        )),
        AnyCluster::Kind(c) => {
            let admin = c.client().await?;
            crate::install::apply::apply_all(&admin, &service_account_objects())
                .await
                .context("the workload's namespace and its cluster-admin binding")?;
            let (kubeconfig, _) = crate::cluster::existing::site::service_account_kubeconfig(
                &admin,
                &c.state.kubeconfig,
                None,
                NAMESPACE,
                ACCOUNT,
                &c.root,
                ttl,
            )
            .await?;
            let client = crate::cluster::client::client_from_kubeconfig(&kubeconfig).await?;
            Ok(Identity { kubeconfig, client })
        }
    }
}

/// The namespace and the binding of the workload's ServiceAccount (the
/// account itself is made with its token).
fn service_account_objects() -> Vec<serde_json::Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{NAMESPACE}-{ACCOUNT}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_account_is_bound_to_cluster_admin() {
        let objs = service_account_objects();
        assert_eq!(objs[0]["metadata"]["name"], NAMESPACE);
        assert_eq!(objs[1]["roleRef"]["name"], "cluster-admin");
        assert_eq!(objs[1]["subjects"][0]["name"], ACCOUNT);
        assert_eq!(objs[1]["subjects"][0]["namespace"], NAMESPACE);
    }
}
