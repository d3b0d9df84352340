//! Pod networking on kind clusters whose node image is built here.
//! kind's default CNI, kindnetd, is a nested Go module the module proxy
//! does not serve, so it cannot be built here; instead each node gets the
//! CNI reference plugins' bridge (built with the node's runtime) with
//! host-local addresses from the pod subnet kube-controller-manager gave
//! the node (`spec.podCIDR`, kind's `podSubnet` split per node), and a
//! route on every node to every other node's pod subnet through that
//! node's address on the docker network. Pods then reach each other and
//! Services (kube-proxy) across nodes with no encapsulation and no NAT —
//! what kindnetd does with its routes, minus its network policies.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::cluster::kind::commands::KindTools;
use crate::poll::Poll;
use crate::tools::command::{self, Cmd};

/// Where the conflist goes in each node.
pub const CONFLIST: &str = "/etc/cni/net.d/10-harness-bridge.conflist";

/// A node's name (its container's), pod subnet and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeNet {
    pub name: String,
    pub pod_cidr: String,
    pub ip: String,
}

/// The bridge conflist of a node whose pods take addresses from `cidr`.
pub fn conflist(cidr: &str) -> String {
    json!({
        "cniVersion": "1.0.0",
        "name": "harness-pods",
        "plugins": [{
            "type": "bridge",
            "bridge": "cni0",
            "isGateway": true,
            "ipMasq": false,
            "hairpinMode": true,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": cidr}]],
                "routes": [{"dst": "0.0.0.0/0"}],
            },
        }],
    })
    .to_string()
}

/// The routes node `me` needs: every other node's pod subnet via its IP.
pub fn routes(me: &NodeNet, all: &[NodeNet]) -> Vec<(String, String)> {
    all.iter()
        .filter(|n| n.name != me.name)
        .map(|n| (n.pod_cidr.clone(), n.ip.clone()))
        .collect()
}

fn node_net(n: &Node) -> Option<NodeNet> {
    let name = n.metadata.name.clone()?;
    let pod_cidr = n.spec.as_ref()?.pod_cidr.clone()?;
    let ip = n
        .status
        .as_ref()?
        .addresses
        .as_ref()?
        .iter()
        .find(|a| a.type_ == "InternalIP" && !a.address.contains(':'))?
        .address
        .clone();
    Some(NodeNet { name, pod_cidr, ip })
}

/// Wait for every node's pod subnet, then write each node's conflist and
/// routes.
pub async fn setup(
    client: kube::Client,
    nodes: &[String],
    tools: &KindTools,
    alive: impl FnMut() -> Result<()> + Send,
) -> Result<Vec<NodeNet>> {
    let api: Api<Node> = Api::all(client);
    let want = nodes.len();
    let nets = Poll::new("every node's pod subnet", Duration::from_secs(180))
        .every(Duration::from_secs(1))
        .alive(alive)
        .until_state(|| async {
            let list = match api.list(&ListParams::default()).await {
                Ok(l) => l,
                Err(e) => return Ok(Err(format!("listing nodes: {e}"))),
            };
            let nets: Vec<NodeNet> = list.items.iter().filter_map(node_net).collect();
            Ok(if nets.len() >= want {
                Ok(nets)
            } else {
                Err(format!(
                    "{} of {want} nodes have a pod subnet and an address",
                    nets.len()
                ))
            })
        })
        .await?;
    for me in &nets {
        if !nodes.contains(&me.name) {
            bail!(
                "node {} is not one of the cluster's containers ({})",
                me.name,
                nodes.join(", ")
            );
        }
        let mut script = String::from(
            "set -e; mkdir -p /etc/cni/net.d; printf '%s' \"$1\" > \"$2\"; shift 2\n\
             while [ $# -gt 0 ]; do ip route replace \"$1\" via \"$2\"; shift 2; done",
        );
        script.push('\n');
        let list = conflist(&me.pod_cidr);
        let mut args: Vec<String> = vec![
            "exec".into(),
            me.name.clone(),
            "sh".into(),
            "-c".into(),
            script,
            "sh".into(),
            list,
            CONFLIST.into(),
        ];
        for (cidr, via) in routes(me, &nets) {
            args.push(cidr);
            args.push(via);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        command::run(&Cmd::new(&tools.docker, &refs))
            .await
            .with_context(|| format!("setting up pod networking on node {}", me.name))?;
    }
    Ok(nets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(name: &str, cidr: &str, ip: &str) -> NodeNet {
        NodeNet {
            name: name.into(),
            pod_cidr: cidr.into(),
            ip: ip.into(),
        }
    }

    #[test]
    fn each_node_routes_to_the_others_subnets_only() {
        let all = [
            n("a-control-plane", "10.244.0.0/24", "172.18.0.2"),
            n("a-worker", "10.244.1.0/24", "172.18.0.3"),
            n("a-worker2", "10.244.2.0/24", "172.18.0.4"),
        ];
        assert_eq!(
            routes(&all[1], &all),
            [
                ("10.244.0.0/24".to_string(), "172.18.0.2".to_string()),
                ("10.244.2.0/24".to_string(), "172.18.0.4".to_string())
            ]
        );
        let v: serde_json::Value = serde_json::from_str(&conflist("10.244.1.0/24")).unwrap();
        let p = &v["plugins"][0];
        assert_eq!(p["type"], "bridge");
        assert_eq!(p["isGateway"], true);
        assert_eq!(p["ipam"]["ranges"][0][0]["subnet"], "10.244.1.0/24");
    }
}
