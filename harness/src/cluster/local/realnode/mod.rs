//! A real node beside the kwok ones (`up --real-node`): the cluster's own
//! kubelet with containerd, runc and the CNI bridge, all built from Go
//! modules, running real containers of one image made here (image.rs).
//!
//! Everything lives under the cluster's `node/` directory except what the
//! programs fix themselves: the kubelet's device-plugin socket
//! (`/var/lib/kubelet/device-plugins`), its `/var/log/containers` links,
//! the shims' sockets (`/run/containerd/s`), libcni's result cache
//! (`/var/lib/cni`) and the bridge interface. Those make a real node one
//! per machine (`check_alone`); `cleanup` removes what a node left.
//!
//! Choices, each forced by what this kind of machine allows:
//! - cgroup v1 hierarchies: the kubelet runs with `failCgroupV1: false`
//!   (KubeletConfiguration; since 1.35 it refuses v1 by default) and the
//!   cgroupfs driver, without per-QoS cgroups;
//! - no CAP_SYS_RESOURCE: containerd's `restrict_oom_score_adj` keeps the
//!   kubelet's -998 for sandboxes from failing runc's write to
//!   oom_score_adj;
//! - no registry: the sandbox ("pause") image is pinned to the local image
//!   so containerd never pulls it, and pods use `imagePullPolicy: Never`.

pub mod cleanup;
pub mod host;
pub mod image;
pub mod names;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::cluster::local::layout::{Layout, Ports};
use crate::error::env_missing;
use crate::tools::{Component, Tools};

pub use names::{BRIDGE, CNI_NETWORK, CONTAINERD, KUBELET, NODE_NAME, NODE_USER};

/// Where the node sits on this machine: chosen when the cluster is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The machine's address the kubelet reports (`--node-ip`): the
    /// kubelet refuses loopback.
    pub node_ip: String,
    /// The pods' /24 on the bridge.
    pub pod_subnet: String,
}

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

/// containerd's configuration (version 3): everything under the node's
/// directory, runc and the CNI plugins linked there from the harness's
/// builds (link_binaries).
pub fn containerd_config(d: &NodeDirs, image: &str) -> String {
    let p = |p: PathBuf| p.display().to_string();
    let state = d.root.join("containerd-state");
    format!(
        r#"# Generated by the harness: a real node's containerd.
version = 3
root = "{root}"
state = "{state}"

[grpc]
  address = "{sock}"

[plugins.'io.containerd.internal.v1.opt']
  path = "{opt}"

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{image}"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{cni_bin}"]
    conf_dir = "{cni_conf}"
    max_conf_num = 1
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "{runc}"
      Root = "{runc_root}"
      SystemdCgroup = false
"#,
        root = p(d.root.join("containerd")),
        state = p(state.clone()),
        sock = p(d.socket()),
        opt = p(d.root.join("containerd-opt")),
        image = image,
        cni_bin = p(d.cni_bin()),
        cni_conf = p(d.cni_conf()),
        runc = p(d.bin().join("runc")),
        runc_root = p(state.join("runc")),
    )
}

/// The CNI network: a bridge with host-local addresses from `subnet`, and
/// loopback.
pub fn cni_conflist(d: &NodeDirs, subnet: &str) -> String {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": false,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "dataDir": d.root.join("cni-ipam").display().to_string(),
                },
            },
            {"type": "loopback"},
        ],
    })
    .to_string()
}

/// The kubelet's configuration file.
pub fn kubelet_config(l: &Layout, ports: &Ports, subnet: &str) -> String {
    let d = l.node();
    format!(
        r#"# Generated by the harness: a real node's kubelet.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://{sock}
port: {port}
healthzPort: {healthz}
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
tlsCertFile: {cert}
tlsPrivateKeyFile: {key}
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: {ca}}}
authorization:
  mode: AlwaysAllow
failSwapOn: false
podCIDR: {subnet}
podLogsDir: {logs}
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
resolvConf: ""
evictionHard: {{}}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
"#,
        sock = d.socket().display(),
        port = ports.kubelet,
        healthz = ports.kubelet_healthz,
        cert = l.pki("kubelet-serving.crt").display(),
        key = l.pki("kubelet-serving.key").display(),
        ca = l.ca_cert().display(),
        logs = d.pod_logs().display(),
    )
}

/// The kubelet's command line.
pub fn kubelet_args(l: &Layout, placement: &Placement) -> Vec<String> {
    let d = l.node();
    vec![
        format!("--config={}", d.kubelet_config().display()),
        format!("--kubeconfig={}", l.kubeconfig(KUBELET).display()),
        format!("--root-dir={}", d.kubelet_root().display()),
        format!("--cert-dir={}", d.root.join("kubelet-pki").display()),
        format!("--hostname-override={NODE_NAME}"),
        format!("--node-ip={}", placement.node_ip),
    ]
}

/// Make the node's directories and link the binaries under the names
/// containerd and CNI call them by.
fn link_binaries(d: &NodeDirs, shim: &Path, runc: &Path, cni: &[(&str, &Path)]) -> Result<()> {
    for dir in [
        d.bin(),
        d.cni_bin(),
        d.cni_conf(),
        d.socket().with_file_name(""),
    ] {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let link = |target: &Path, at: PathBuf| -> Result<()> {
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(target, &at)
            .with_context(|| format!("linking {} to {}", at.display(), target.display()))
    };
    link(shim, d.bin().join("containerd-shim-runc-v2"))?;
    link(runc, d.bin().join("runc"))?;
    for (name, path) in cni {
        link(path, d.cni_bin().join(name))?;
    }
    Ok(())
}

/// Before the node's containerd starts: its binaries linked under the
/// names they are called by, and its image archive.
pub fn lay_out(l: &Layout, tools: &Tools, k8s_version: &str) -> Result<()> {
    let d = l.node();
    std::fs::create_dir_all(d.root())
        .with_context(|| format!("creating {}", d.root().display()))?;
    host::record(&host::proc_sys(), &d.host_before())?;
    let cni = [
        ("bridge", tools.path(Component::CniBridge)?),
        ("host-local", tools.path(Component::CniHostLocal)?),
        ("loopback", tools.path(Component::CniLoopback)?),
    ];
    link_binaries(
        &d,
        tools.path(Component::ContainerdShim)?,
        tools.path(Component::Runc)?,
        &cni,
    )?;
    image::write_archive(
        tools.path(Component::Agnhost)?,
        &image::image_name(k8s_version),
        &d.image_archive(),
    )
}

/// `ctr images import` of the node's image into containerd's `k8s.io`
/// namespace, where the kubelet's CRI looks.
pub fn import_image(d: &NodeDirs, tools: &Tools) -> Result<()> {
    let ctr = tools.path(Component::Ctr)?;
    let out = std::process::Command::new(ctr)
        .arg(format!("--address={}", d.socket().display()))
        .args(["--namespace=k8s.io", "images", "import"])
        .arg(d.image_archive())
        .output()
        .with_context(|| format!("running {}", ctr.display()))?;
    if !out.status.success() {
        bail!(
            "importing the node's image into containerd failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_containerd_writes_is_under_the_node_directory() {
        let l = Layout::new("/state/c1");
        let text = containerd_config(&l.node(), "harness.local/x:v1");
        for line in text.lines() {
            if let Some((_, v)) = line.split_once(" = \"") {
                let v = v.trim_end_matches('"');
                if v.starts_with('/') {
                    assert!(v.starts_with("/state/c1/node/"), "{line}");
                }
            }
        }
        assert!(text.contains("restrict_oom_score_adj = true"));
        assert!(text.contains("sandbox = \"harness.local/x:v1\""));
    }

    #[test]
    fn the_pod_subnet_avoids_routed_ranges() {
        let s = free_pod_subnet().unwrap();
        assert!(s.starts_with("10.244.") && s.ends_with(".0/24"), "{s}");
    }
}
