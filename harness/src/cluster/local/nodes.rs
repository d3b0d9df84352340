//! The local provider's fake nodes through the API: kwok nodes sized to a
//! `NodeSpec`, extra pools added and removed for the gang and queue suites.
//! kwok (`kwok.rs`) makes them Ready and runs their pods.

use std::time::Duration;

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

use crate::cluster::kwok;
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
    let missing: Vec<Node> = (0..spec.count)
        .filter(|i| !have.contains(i))
        .map(|i| kwok::node(i, spec))
        .collect();
    create_all(&nodes, missing).await
}

/// How many node creations are in flight at once: a thousand nodes are
/// created in seconds, not one round trip after another.
const CREATE_CONCURRENCY: usize = 32;

async fn create_all(nodes: &Api<Node>, all: Vec<Node>) -> Result<()> {
    futures::stream::iter(all.into_iter().map(|node| async move {
        let name = node.metadata.name.clone().unwrap_or_default();
        nodes
            .create(&PostParams::default(), &node)
            .await
            .with_context(|| format!("creating node {name}"))
            .map(|_| ())
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .map(|_| ())
}

pub async fn add_pool(
    client: kube::Client,
    pool: &NodePool,
    alive: impl Fn() -> Result<()> + Send + Sync,
) -> Result<Vec<String>> {
    let nodes: Api<Node> = Api::all(client);
    let names = pool.names();
    let template = kwok::node(0, &pool.spec());
    let dressed: Vec<Node> = names
        .iter()
        .map(|n| pool.dress(template.clone(), n))
        .collect();
    create_all(&nodes, dressed).await?;
    // Schedulable once kwok reports them Ready: one LIST of the pool per
    // round, however many nodes it has.
    let selector: Vec<String> = pool
        .selector()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let list = ListParams::default().labels(&selector.join(","));
    let timeout = Duration::from_secs(60 + names.len() as u64 / 20);
    Poll::new(format!("{} pool nodes Ready", names.len()), timeout)
        .alive(&alive)
        .until_state(|| async {
            let have = nodes.list(&list).await.context("listing pool nodes")?;
            let ready = have.items.iter().filter(|n| node_ready(n)).count();
            Ok(match ready >= names.len() {
                true => Ok(()),
                false => Err(format!("{ready} of {} Ready", names.len())),
            })
        })
        .await?;
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
