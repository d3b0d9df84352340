//! Which cgroup driver a kind node's containerd and kubelet use. kind
//! makes every cluster of Kubernetes 1.24 or later with the systemd
//! driver (kind `pkg/cluster/internal/kubeadm/config.go`, `Derive`:
//! `cgroupDriver: systemd`; its base image's containerd config:
//! `SystemdCgroup = true`) and older ones with cgroupfs (the same file's
//! `< v1.24.0` branch; `pkg/build/nodeimage/containerd.go` patches
//! containerd to `SystemdCgroup = false` for them).
//!
//! On a cgroup v1 host the systemd driver freezes a container's cgroup
//! before it sets the container's device rules (opencontainers/cgroups
//! `systemd/devices.go`, `freezeBeforeSet`, for every container that is
//! not a pod's own cgroup), and a cgroup v1 freeze of processes that are
//! busy on a loaded machine may not complete within runc's retries
//! (`fs/freezer.go`, `FreezerGroup.Set`: "unable to freeze"; its own
//! comment says the real fix is the kernel's, cgroup v2's). The container
//! then never starts: the kubelet reports it `StartError`, exit 128, and a
//! Job with no retries fails. CI met this twice, on HPCC's compile Job in
//! a kind node, with three kind clusters side by side on 2 cores. The
//! cgroupfs driver sets device rules without a freeze (`fs/fs.go`: its
//! `Set` freezes nothing), so on a cgroup v1 host the harness makes kind's
//! nodes as kind made them before 1.24, through kind's own config: a
//! containerd patch and a kubelet one. What the control plane is asked
//! does not change with the driver: the kubelet's API requests are the
//! same (the real node, `cluster/local/realnode`, has always used
//! cgroupfs). On a cgroup v2 host nothing is changed.

use serde_json::{Value, json};

use crate::cluster::kind::patches;

/// The cgroup version `docker info --format {{.CgroupVersion}}` printed:
/// v1 when it says "1"; anything else (v2, an engine too old to say)
/// leaves kind's defaults.
pub fn host_is_v1(cgroup_version: &str) -> bool {
    cgroup_version.trim() == "1"
}

/// kind's containerd runtimes whose options carry `SystemdCgroup` (its
/// base image's `/etc/containerd/config.toml`: the default runtime and the
/// runtime class tests' handler).
const RUNTIMES: [&str; 2] = ["runc", "test-handler"];

/// Make the nodes of kind config `doc` use the cgroupfs driver: a
/// containerd patch per runtime of [`RUNTIMES`] and a kubelet one.
pub fn use_cgroupfs(doc: &mut Value) {
    let containerd: String = RUNTIMES
        .iter()
        .map(|r| {
            format!(
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.{r}.options]\n  SystemdCgroup = false\n"
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    match doc
        .get_mut("containerdConfigPatches")
        .and_then(Value::as_array_mut)
    {
        Some(list) => list.push(json!(containerd)),
        None => doc["containerdConfigPatches"] = json!([containerd]),
    }
    patches::add(
        doc,
        [
            "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: cgroupfs\n"
                .to_string(),
        ],
    );
}

/// What the harness says when it changed the driver.
pub const SAID: &str = "cgroupfs driver: the Docker host has cgroup v1, where the systemd driver's freeze can keep a container from starting on a loaded machine";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_v1_host_is_v1() {
        assert!(host_is_v1("1\n"));
        assert!(!host_is_v1("2"));
        assert!(!host_is_v1(""));
        assert!(!host_is_v1("<no value>"));
    }

    #[test]
    fn cgroupfs_patches_containerd_and_the_kubelet_and_keeps_the_profiles_own() {
        let mut doc = json!({
            "kind": "Cluster",
            "containerdConfigPatches": ["[plugins.x]\n  a = 1\n"],
            "kubeadmConfigPatches": ["kind: ClusterConfiguration\n"],
        });
        use_cgroupfs(&mut doc);
        let c = doc["containerdConfigPatches"].as_array().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0], "[plugins.x]\n  a = 1\n");
        let added = c[1].as_str().unwrap();
        for r in RUNTIMES {
            assert!(
                added.contains(&format!(
                    "containerd.runtimes.{r}.options]\n  SystemdCgroup = false"
                )),
                "{added}"
            );
        }
        let k = doc["kubeadmConfigPatches"].as_array().unwrap();
        assert_eq!(k.len(), 2);
        assert!(k[1].as_str().unwrap().contains("cgroupDriver: cgroupfs"));

        let mut bare = json!({"kind": "Cluster"});
        use_cgroupfs(&mut bare);
        assert_eq!(bare["containerdConfigPatches"].as_array().unwrap().len(), 1);
        assert_eq!(bare["kubeadmConfigPatches"].as_array().unwrap().len(), 1);
    }
}
