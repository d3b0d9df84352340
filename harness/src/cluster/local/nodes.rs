//! The local provider's fake nodes through the API: kwok nodes sized to a
//! `NodeSpec`, extra pools added and removed for the gang and queue suites.
//! kwok (`kwok.rs`) makes them Ready and runs their pods.

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use crate::cluster::local::kwok;
use crate::cluster::pool::NodePool;
use crate::cluster::spec::{NodeSpec, node_ready};
use crate::poll::Poll;

/// Makes the kwok nodes exactly `spec`: patches the capacity of those that
/// stay, deletes the surplus, creates the missing.
pub async fn set_capacity(client: kube::Client, spec: &NodeSpec) -> Result<()> {
    let nodes: Api<Node> = Api::all(client);
    let existing = nodes
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .context("listing kwok nodes")?;
    let mut have = std::collections::BTreeSet::new();
    for n in existing.items {
        let name = n.metadata.name.clone().unwrap_or_default();
        let index = name
            .strip_prefix(kwok::NODE_PREFIX)
            .and_then(|i| i.parse::<usize>().ok());
        match index {
            Some(i) if i < spec.count => {
                let want = kwok::node(i, spec);
                let patch = serde_json::json!({"status": {
                    "capacity": want.status.as_ref().and_then(|s| s.capacity.clone()),
                    "allocatable": want.status.as_ref().and_then(|s| s.allocatable.clone()),
                }});
                nodes
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .with_context(|| format!("setting the capacity of node {name}"))?;
                have.insert(i);
            }
            _ => {
                nodes
                    .delete(&name, &DeleteParams::default())
                    .await
                    .with_context(|| format!("deleting node {name}"))?;
            }
        }
    }
    for i in (0..spec.count).filter(|i| !have.contains(i)) {
        let node = kwok::node(i, spec);
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating node {}{i}", kwok::NODE_PREFIX))?;
    }
    Ok(())
}

pub async fn add_pool(
    client: kube::Client,
    pool: &NodePool,
    alive: impl Fn() -> Result<()> + Send + Sync,
) -> Result<Vec<String>> {
    let nodes: Api<Node> = Api::all(client);
    let names = pool.names();
    for name in &names {
        let node = pool.dress(kwok::node(0, &pool.spec()), name);
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating pool node {name}"))?;
    }
    // Schedulable once kwok reports them Ready.
    for name in &names {
        Poll::new(format!("pool node {name} Ready"), Duration::from_secs(60))
            .alive(&alive)
            .until(|| async {
                let n = nodes
                    .get(name)
                    .await
                    .with_context(|| format!("reading node {name}"))?;
                Ok(node_ready(&n).then_some(()))
            })
            .await?;
    }
    Ok(names)
}

pub async fn remove(client: kube::Client, names: &[String]) -> Result<()> {
    let nodes: Api<Node> = Api::all(client);
    for n in names {
        nodes
            .delete(n, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting pool node {n}"))?;
    }
    Ok(())
}
