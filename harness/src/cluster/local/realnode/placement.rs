//! Where a real node sits on this machine (its address, its pods' /24),
//! chosen when the cluster is made, and what the machine must allow
//! first: root, and no other real node (the paths the kubelet and
//! containerd fix cannot be shared; realnode's module doc).

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cluster::local::realnode::cleanup;
use crate::cluster::local::realnode::names::NODE_NAME;
use crate::error::env_missing;

/// Where the node sits on this machine: chosen when the cluster is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The machine's address the kubelet reports (`--node-ip`): the
    /// kubelet refuses loopback.
    pub node_ip: String,
    /// The pods' /24 on the bridge.
    pub pod_subnet: String,
}

/// The machine's own IPv4 address: the source of its route to the outside
/// (a UDP socket is connected, nothing is sent). Err when there is only
/// loopback.
pub fn host_ip() -> Result<String> {
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").context("opening a UDP socket")?;
    let ip = sock
        .connect("10.255.255.254:9")
        .and_then(|_| sock.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    match ip {
        Some(ip) => Ok(ip.to_string()),
        None => Err(env_missing(
            "a real node needs an IPv4 address other than loopback (the kubelet refuses 127.0.0.1 as its node IP), and this machine has no route to pick one from",
            "give the machine a network interface with an address, or run without --real-node",
        )),
    }
}

/// The first 10.244.N.0/24 no route of this machine covers.
pub fn free_pod_subnet() -> Result<String> {
    let routes = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let taken: Vec<(u32, u32)> = routes
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dest = u32::from_str_radix(f.get(1)?, 16).ok()?.swap_bytes();
            let mask = u32::from_str_radix(f.get(7)?, 16).ok()?.swap_bytes();
            (mask != 0).then_some((dest, mask))
        })
        .collect();
    (0..=255u32)
        .map(|n| (10 << 24) | (244 << 16) | (n << 8))
        .find(|net| {
            taken
                .iter()
                .all(|(dest, mask)| (net & mask) != *dest && (dest & 0xffff_ff00) != *net)
        })
        .map(|net| format!("10.244.{}.0/24", (net >> 8) & 0xff))
        .context("every 10.244.N.0/24 is routed on this machine already")
}

/// Where this machine can put a real node (after `check_machine`).
pub fn place(cluster_dir: &Path) -> Result<Placement> {
    check_machine(cluster_dir)?;
    Ok(Placement {
        node_ip: host_ip()?,
        pod_subnet: free_pod_subnet()?,
    })
}

/// Refuse what cannot run a real node: a user other than root (containerd
/// and runc mount, make namespaces and cgroups, the CNI bridge plugin
/// makes interfaces), or a second real node on this machine.
pub fn check_machine(mine: &Path) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(env_missing(
            "a real node needs root: containerd and runc mount file systems and make namespaces and cgroups, and the CNI bridge plugin makes network interfaces",
            "run `harness up --real-node` as root, or without --real-node",
        ));
    }
    check_alone(mine)
}

/// Refuse a second real node on this machine: the paths the kubelet and
/// containerd fix (module doc) cannot be shared. Found by the command line
/// of a running kubelet started by a harness for another cluster.
fn check_alone(mine: &Path) -> Result<()> {
    let marker = format!("--hostname-override={NODE_NAME}");
    for (pid, argv) in cleanup::processes() {
        if !argv.iter().any(|a| a == &marker) {
            continue;
        }
        let root = argv
            .iter()
            .find_map(|a| a.strip_prefix("--root-dir="))
            .unwrap_or("?");
        if !Path::new(root).starts_with(mine) {
            return Err(env_missing(
                format!(
                    "another cluster runs a real node on this machine (kubelet pid {pid}, {root}): one real node per machine, since the kubelet's device-plugin socket and /var/log/containers are fixed paths"
                ),
                "stop that cluster first (harness down --name …), or run this one without --real-node",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pod_subnet_avoids_routed_ranges() {
        let s = free_pod_subnet().unwrap();
        assert!(s.starts_with("10.244.") && s.ends_with(".0/24"), "{s}");
    }
}
