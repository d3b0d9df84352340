//! inotify instances: the kernel's per-user limit
//! (`fs.inotify.max_user_instances`, 128 by default) and how many this
//! user holds. Every certificate file a Kubernetes component watches
//! (client-go's `dynamic_cafile_content`, controller-runtime's
//! `certwatcher`), containerd's CNI configuration watch and a kind node's
//! systemd each take one; processes in a kind node's container run as the
//! same root, so they count against the same limit. When it runs out the
//! component fails at start-up with "too many open files" — containerd
//! without its CRI service ("unknown service runtime.v1.RuntimeService"),
//! the JobSet controller stopping at once — which reads like a bug of the
//! component. `up` checks the room first (`check_room`) and the suite
//! runner waits for it (`free`).

use std::path::Path;

use crate::error::env_missing;

/// Where the limit is.
pub const LIMIT_FILE: &str = "/proc/sys/fs/inotify/max_user_instances";

/// The limit kind's known issues advise ("Pod errors due to too many open
/// files"), and what the kind suite wants beside the local suites.
pub const ADVISED: u64 = 512;

/// The command that sets it.
pub fn raise() -> String {
    format!("sysctl -w fs.inotify.max_user_instances={ADVISED}")
}

/// What a cluster takes. The counts below were measured on this machine
/// (2026-11-27, Kubernetes 1.37.1: the descriptors `held_by` counts, per
/// process, once the cluster was ready); `harness doctor` prints them
/// beside the room left.
pub struct Need {
    pub what: &'static str,
    pub instances: u64,
}

/// A local cluster of the default profile: kube-apiserver 3 (its
/// certificate files), kube-controller-manager 6, kube-scheduler 1, the
/// JobSet controller 2; etcd and kwok none.
pub const LOCAL: Need = Need {
    what: "a local cluster",
    instances: 12,
};

/// What Kueue's controller adds to a local cluster (its webhook
/// server's and its visibility server's certificate watches).
pub const KUEUE: u64 = 4;

/// What a real node adds: the kubelet 6, containerd 2 (with cgroup v1 a
/// container's shim watches OOM through eventfd, not inotify).
pub const REAL_NODE: u64 = 8;

/// A kind cluster's control-plane node: systemd 4, dbus 1, containerd 2,
/// kubelet 7 and the control plane's components (kube-apiserver 6,
/// kube-controller-manager 7, kube-proxy 1).
pub const KIND_CONTROL_PLANE: u64 = 28;

/// A kind worker node: systemd 4, dbus 1, containerd 2, kubelet 7,
/// kube-proxy 1 and one more from a controller pod.
pub const KIND_WORKER: u64 = 16;

/// What a local cluster of this shape takes.
pub fn local_need(kueue: bool, real_node: bool) -> Need {
    Need {
        what: "a local cluster",
        instances: LOCAL.instances
            + if kueue { KUEUE } else { 0 }
            + if real_node { REAL_NODE } else { 0 },
    }
}

/// What a kind cluster of `nodes` nodes (one control plane, the rest
/// workers) takes.
pub fn kind_need(nodes: usize) -> Need {
    Need {
        what: "a kind cluster",
        instances: KIND_CONTROL_PLANE + KIND_WORKER * nodes.saturating_sub(1) as u64,
    }
}

/// The limit and this user's instances now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instances {
    pub limit: u64,
    pub in_use: u64,
}

impl Instances {
    /// How many more can be made.
    pub fn free(&self) -> u64 {
        self.limit.saturating_sub(self.in_use)
    }
}

/// The limit and this user's instances now; None where the kernel does
/// not say (no /proc, not Linux).
pub fn instances() -> Option<Instances> {
    let limit = std::fs::read_to_string(LIMIT_FILE)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    Some(Instances {
        limit,
        in_use: held_by(Path::new("/proc"), uid),
    })
}

/// How many more instances this user can make now (None: unknown).
pub fn free() -> Option<u64> {
    instances().map(|i| i.free())
}

/// inotify descriptors held by the processes of `uid` under `proc`. A
/// descriptor shared by two processes (inherited) counts twice, so this
/// errs high, on the side of waiting; processes that end while they are
/// read are skipped.
pub fn held_by(proc: &Path, uid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(proc) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let dir = e.path();
        if std::fs::metadata(&dir).map(|m| m.uid()).ok() != Some(uid) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            continue;
        };
        n += fds
            .flatten()
            .filter(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:inotify")
            })
            .count() as u64;
    }
    n
}

/// `Ok` when `need` more instances can be made now (or the kernel does not
/// say); otherwise the environment error (exit 3) that names the limit,
/// who holds the instances and the fix.
pub fn check_room(need: &Need) -> anyhow::Result<()> {
    match instances() {
        Some(i) => judge(i, need),
        None => Ok(()),
    }
}

fn judge(i: Instances, need: &Need) -> anyhow::Result<()> {
    if i.free() >= need.instances {
        return Ok(());
    }
    Err(env_missing(
        format!(
            "{} needs about {} inotify instances and {} of this user's {} are free \
             (the limit is fs.inotify.max_user_instances; {} in use)",
            need.what,
            need.instances,
            i.free(),
            i.limit,
            i.in_use
        ),
        format!(
            "raise the limit (`{}`, what kind's known issues advise) or stop other \
             clusters (`harness status`); without room components fail at start with \
             \"too many open files\"",
            raise()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_made_here_is_counted() {
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let before = held_by(Path::new("/proc"), uid);
        // SAFETY: a plain system call; the descriptor is closed below.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        assert!(fd >= 0, "inotify_init1 failed");
        let during = held_by(Path::new("/proc"), uid);
        // SAFETY: fd is ours and open.
        unsafe { libc::close(fd) };
        // Other tests of this binary run beside it and may hold one too.
        assert!(during > before, "{before} before, {during} with one more");
        assert_eq!(held_by(Path::new("/proc"), uid.wrapping_add(7777)), 0);
    }

    #[test]
    fn the_engine_script_raises_the_limit_to_the_advised_value() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/ensure-docker.sh");
        let text = std::fs::read_to_string(&script).expect("ci/ensure-docker.sh");
        let want = format!("max_user_instances:{ADVISED} ");
        assert!(text.contains(&want), "{} lacks {want:?}", script.display());
    }

    #[test]
    fn room_is_judged_against_the_need_with_the_fix_named() {
        let need = Need {
            what: "a kind cluster",
            instances: 40,
        };
        let roomy = Instances {
            limit: 512,
            in_use: 100,
        };
        assert!(judge(roomy, &need).is_ok());
        let full = Instances {
            limit: 128,
            in_use: 100,
        };
        let e = judge(full, &need).unwrap_err();
        let text = format!("{e:#}");
        assert!(text.contains("28 of this user's 128 are free"), "{text}");
        assert!(text.contains("max_user_instances=512"), "{text}");
        assert_eq!(crate::error::exit_code(&e), 3, "{text}");
    }
}
