//! What a real node leaves when its kubelet and containerd stop: the runc
//! shims (their own sessions, so stopping containerd's process group does
//! not reach them) with the containers under them, the kubelet's and
//! containerd's mounts (volumes, sandbox network namespaces, overlay
//! root filesystems), the bridge and the log links in /var/log/containers.
//! `cleanup` removes all of it, after the processes were stopped.

use std::path::Path;

use anyhow::{Result, bail};

use crate::cluster::local::layout::Layout;
use crate::cluster::local::realnode::names::{BRIDGE, CNI_NETWORK};

/// Where containerd's shims listen, whatever containerd's own directories.
const SHIM_SOCKETS: &str = "/run/containerd/s";
/// libcni's result cache (`<network>-<sandbox id>-<interface>`).
const CNI_RESULTS: &str = "/var/lib/cni/results";
/// The kubelet's device-plugin socket, fixed by the kubelet.
const DEVICE_PLUGIN_SOCKET: &str = "/var/lib/kubelet/device-plugins/kubelet.sock";

/// Remove `path` if it is a socket nothing listens on.
fn remove_stale_socket(path: &Path) {
    if std::os::unix::net::UnixStream::connect(path).is_err() {
        let _ = std::fs::remove_file(path);
    }
}

/// libcni's cached results of this node's sandboxes: those of its network
/// and the loopback results of the same sandboxes.
fn remove_cni_results() {
    let Ok(entries) = std::fs::read_dir(CNI_RESULTS) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let ours = format!("{CNI_NETWORK}-");
    let sandboxes: Vec<&str> = names
        .iter()
        .filter_map(|n| n.strip_prefix(&ours)?.split('-').next())
        .collect();
    for n in &names {
        let id = n
            .strip_prefix(&ours)
            .or_else(|| n.strip_prefix("cni-loopback-"));
        if id.is_some_and(|id| sandboxes.iter().any(|s| id.starts_with(s))) {
            let _ = std::fs::remove_file(Path::new(CNI_RESULTS).join(n));
        }
    }
}

/// Every process's pid and command line.
pub fn processes() -> Vec<(i32, Vec<String>)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let argv = raw
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, argv))
        })
        .collect()
}

/// The parent of `pid`, from /proc/<pid>/stat (after the command's ")").
fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `roots` and every descendant of theirs.
fn with_descendants(roots: &[i32]) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = processes()
        .into_iter()
        .filter_map(|(pid, _)| Some((pid, parent(pid)?)))
        .collect();
    let mut out = roots.to_vec();
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        let children: Vec<i32> = parents
            .iter()
            .filter(|(c, pp)| *pp == p && !out.contains(c))
            .map(|(c, _)| *c)
            .collect();
        out.extend(children);
        i += 1;
    }
    out
}

/// The shims of the containerd listening on `socket` (each started with
/// `-address <socket>`; its argv[0] is the binary the link resolves to,
/// `containerd-shim-runc-v2-<version>` in the harness's cache).
fn shims(socket: &Path) -> Vec<i32> {
    let socket = socket.display().to_string();
    processes()
        .into_iter()
        .filter(|(_, argv)| {
            argv.first()
                .is_some_and(|a| a.contains("containerd-shim-runc-v2"))
                && argv
                    .windows(2)
                    .any(|w| w[0] == "-address" && w[1] == socket)
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// Mount points at or under `dir`, deepest first (from mountinfo's fifth
/// field, where a space in a path is written `\040`).
fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out: Vec<String> = info
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|m| m.replace("\\040", " "))
        .filter(|m| Path::new(m).starts_with(dir))
        .collect();
    out.sort_by_key(|m| std::cmp::Reverse(m.len()));
    out.dedup();
    out
}

fn unmount(point: &str) -> std::io::Result<()> {
    let c = std::ffi::CString::new(point).map_err(std::io::Error::other)?;
    // SAFETY: a NUL-terminated path; MNT_DETACH needs nothing else.
    match unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Remove what the node left (module doc). Run once its kubelet and
/// containerd are stopped; each part is tried, and the errors reported
/// together.
pub fn cleanup(l: &Layout) -> Result<()> {
    let d = l.node();
    if !d.root().exists() {
        return Ok(());
    }
    let mut errors = vec![];
    // Shims and their containers: containers first would let a shim
    // report them, which nothing listens for any more.
    let doomed = with_descendants(&shims(&d.socket()));
    for pid in doomed.iter().rev() {
        // SAFETY: plain kill(2) of a pid found a moment ago.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    let t = std::time::Instant::now();
    while doomed
        .iter()
        .any(|p| Path::new(&format!("/proc/{p}")).exists() && parent(*p).is_some())
        && t.elapsed() < std::time::Duration::from_secs(5)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for m in mounts_under(d.root()) {
        if let Err(e) = unmount(&m) {
            errors.push(format!("unmounting {m}: {e}"));
        }
    }
    // The shims' sockets (`/run/containerd/s/<hash>`, fixed by containerd):
    // those nothing listens on any more.
    if let Ok(socks) = std::fs::read_dir(SHIM_SOCKETS) {
        for s in socks.flatten() {
            remove_stale_socket(&s.path());
        }
    }
    remove_stale_socket(Path::new(DEVICE_PLUGIN_SOCKET));
    remove_cni_results();
    match crate::cluster::local::realnode::host::restore(
        &crate::cluster::local::realnode::host::proc_sys(),
        &d.host_before(),
    ) {
        Ok(changed) if !changed.is_empty() => {
            tracing::info!("the host's settings put back: {}", changed.join(", "))
        }
        Ok(_) => {}
        Err(e) => errors.push(format!("{e:#}")),
    }
    if Path::new("/sys/class/net").join(BRIDGE).exists() {
        match std::process::Command::new("ip")
            .args(["link", "delete", BRIDGE])
            .output()
        {
            Ok(o) if o.status.success() => {}
            Ok(o) => errors.push(format!(
                "ip link delete {BRIDGE}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => errors.push(format!("running ip link delete {BRIDGE}: {e}")),
        }
    }
    // The kubelet links /var/log/containers/<pod>_<ns>_<ctr>-<id>.log to
    // the pod logs directory.
    if let Ok(links) = std::fs::read_dir("/var/log/containers") {
        for link in links.flatten() {
            let to = std::fs::read_link(link.path()).unwrap_or_default();
            if to.starts_with(d.pod_logs()) {
                let _ = std::fs::remove_file(link.path());
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        bail!(
            "the real node of {} left: {}",
            l.display(),
            errors.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_under_its_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = std::process::id() as i32;
        let all = with_descendants(&[me]);
        assert!(all.contains(&(child.id() as i32)), "{all:?}");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn no_mounts_under_a_fresh_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(mounts_under(dir.path()).is_empty());
        assert!(mounts_under(Path::new("/")).iter().any(|m| m == "/"));
    }
}
