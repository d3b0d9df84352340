//! The host settings a real node changes, recorded before it starts and
//! put back when it is cleaned up. The CNI bridge plugin, configured with
//! `isGateway` (realnode::cni_conflist), turns on `net.ipv4.ip_forward`
//! (containernetworking/plugins `plugins/main/bridge`: `enableIPForward`
//! when the bridge is a gateway). The bridge link itself is deleted by
//! cleanup; nothing else on the host is changed (no masquerading, no
//! iptables rules: `ipMasq: false`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The sysctls a real node may change, as paths under /proc/sys.
pub const SYSCTLS: &[&str] = &["net/ipv4/ip_forward"];

/// What the host had before the node: sysctl path → value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostBefore {
    pub sysctls: std::collections::BTreeMap<String, String>,
}

/// Where /proc/sys is (tests use a directory of their own).
pub fn proc_sys() -> PathBuf {
    PathBuf::from("/proc/sys")
}

/// Read the sysctls now, under `sys`.
pub fn read(sys: &Path) -> HostBefore {
    HostBefore {
        sysctls: SYSCTLS
            .iter()
            .filter_map(|k| {
                let v = std::fs::read_to_string(sys.join(k)).ok()?;
                Some((k.to_string(), v.trim().to_string()))
            })
            .collect(),
    }
}

/// Record the host's settings in `file` unless a record is there already
/// (a node restarted within one cluster keeps the first, true, one).
pub fn record(sys: &Path, file: &Path) -> Result<()> {
    if file.exists() {
        return Ok(());
    }
    let text = serde_json::to_string_pretty(&read(sys))?;
    crate::output::write_atomic(file, text + "\n")
        .with_context(|| format!("recording the host's settings in {}", file.display()))
}

/// Put back what `file` recorded where it differs now; what was changed
/// back is returned ("net/ipv4/ip_forward 1 → 0").
pub fn restore(sys: &Path, file: &Path) -> Result<Vec<String>> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(Vec::new());
    };
    let before: HostBefore = serde_json::from_str(&text)
        .with_context(|| format!("reading the host's recorded settings {}", file.display()))?;
    let now = read(sys);
    let mut changed = Vec::new();
    for (k, was) in &before.sysctls {
        match now.sysctls.get(k) {
            Some(is) if is != was => {
                std::fs::write(sys.join(k), format!("{was}\n"))
                    .with_context(|| format!("restoring {k} to {was}"))?;
                changed.push(format!("{k} {is} → {was}"));
            }
            _ => {}
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sys_with(v: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("net/ipv4")).unwrap();
        std::fs::write(d.path().join("net/ipv4/ip_forward"), v).unwrap();
        d
    }

    #[test]
    fn what_the_node_turned_on_is_turned_off_again() {
        let sys = sys_with("0\n");
        let rec = tempfile::tempdir().unwrap();
        let file = rec.path().join("host-before.json");
        record(sys.path(), &file).unwrap();
        // The bridge plugin turns forwarding on; a second record (a node
        // restart) keeps the first.
        std::fs::write(sys.path().join("net/ipv4/ip_forward"), "1\n").unwrap();
        record(sys.path(), &file).unwrap();
        let changed = restore(sys.path(), &file).unwrap();
        assert_eq!(changed, vec!["net/ipv4/ip_forward 1 → 0"]);
        let now = std::fs::read_to_string(sys.path().join("net/ipv4/ip_forward")).unwrap();
        assert_eq!(now.trim(), "0");
        // Nothing to do the second time, nor without a record.
        assert!(restore(sys.path(), &file).unwrap().is_empty());
        assert!(
            restore(sys.path(), &rec.path().join("none"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_host_that_forwarded_already_is_left_as_it_was() {
        let sys = sys_with("1\n");
        let rec = tempfile::tempdir().unwrap();
        let file = rec.path().join("host-before.json");
        record(sys.path(), &file).unwrap();
        assert!(restore(sys.path(), &file).unwrap().is_empty());
        let now = std::fs::read_to_string(sys.path().join("net/ipv4/ip_forward")).unwrap();
        assert_eq!(now.trim(), "1");
    }
}
