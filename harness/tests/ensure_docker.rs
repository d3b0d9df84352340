//! `ci/ensure-docker.sh stop` puts back what a start changed from the
//! record the start wrote, whether or not the engine's pidfile is there
//! (a start whose engine died, or never wrote it, left the raised limits
//! behind before). Run against a record in a temporary exec root
//! (`HARNESS_DOCKER_EXEC_ROOT`) holding the values the machine has now,
//! so restoring changes nothing on the machine.

mod common;

use std::process::Command;

#[test]
fn stop_restores_from_the_record_without_a_pidfile() {
    let root = common::repo_root();
    let dir = tempfile::tempdir().expect("temp dir");
    let exec_root = dir.path();
    let sysctl = "/proc/sys/fs/inotify/max_user_instances";
    let now = std::fs::read_to_string(sysctl).expect("read the inotify limit");
    let writable = std::fs::OpenOptions::new().write(true).open(sysctl).is_ok();
    let record = exec_root.join("inotify-max_user_instances-before");
    std::fs::write(&record, &now).expect("write the record");
    // A bridge list of the host "before": every link it has now, so no
    // link is deleted.
    let links = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split(": ").nth(1))
                .map(|n| n.split('@').next().unwrap_or(n).to_string() + "\n")
                .collect::<String>()
        })
        .unwrap_or_default();
    std::fs::write(exec_root.join("links-before"), links).expect("write links");
    assert!(!exec_root.join("dockerd.pid").exists());
    let out = Command::new("bash")
        .arg(root.join("ci/ensure-docker.sh"))
        .arg("stop")
        .env("HARNESS_DOCKER_EXEC_ROOT", exec_root)
        .output()
        .expect("run ensure-docker.sh stop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(
        !exec_root.join("links-before").exists(),
        "the link record is still there: {stderr}"
    );
    if writable {
        assert!(
            !record.exists(),
            "the inotify record is still there: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "put fs.inotify.max_user_instances back to {}",
                now.trim()
            )),
            "{stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(sysctl).unwrap(), now);
}
