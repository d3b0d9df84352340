//! The processes of kind's node containers, for `metrics::usage`: the
//! components are told apart by command name (`IN_NODE_COMMANDS`) and
//! summed over the nodes. Where the engine runs its containers in this
//! machine's PID namespace (a local Docker engine), a node's processes are
//! the descendants of its init in this machine's /proc — the scan
//! `usage` makes anyway, with no process started per sample. Elsewhere (an
//! engine in a VM) each sample runs `docker exec … cat /proc/*/stat` per
//! node. Under the test command's load those execs could all take past
//! their 5 s: every sample of a kind cluster's API server was missed in
//! the CI of 81ce7a7, and the execs themselves cost the machine what is
//! being measured.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::metrics::procfs::{self, Point, ProcStat};

/// Command names in kind's node containers (/proc/PID/stat's, at most 15
/// characters) → the component. The JobSet and Kueue controllers' binaries
/// are both `/manager`: one row for both.
pub const IN_NODE_COMMANDS: &[(&str, &str)] = &[
    ("kube-apiserver", "kube-apiserver"),
    ("etcd", "etcd"),
    ("kube-controller", "kube-controller-manager"),
    ("kube-scheduler", "kube-scheduler"),
    ("kubelet", "kubelet"),
    ("containerd", "containerd"),
    ("manager", "jobset/kueue controller"),
];

/// How long one `docker inspect` or `docker exec` may take.
pub const DOCKER_TIMEOUT: Duration = Duration::from_secs(5);

fn add(p: &mut Point, comm: &str, ticks: u64, kib: u64) {
    if let Some((_, name)) = IN_NODE_COMMANDS.iter().find(|(c, _)| *c == comm) {
        procfs::add(p, name, ticks, kib);
    }
}

/// What one container's `/proc/*/stat` lines say about each component of
/// `IN_NODE_COMMANDS` (processes of other names are left out).
pub fn point_in_container(stat_lines: &str, page_kib: u64) -> Point {
    let mut p = Point::new();
    for (comm, ticks, pages) in stat_lines.lines().filter_map(procfs::parse_stat_named) {
        add(&mut p, &comm, ticks, pages * page_kib);
    }
    p
}

/// The components among the descendants of `roots` (node containers'
/// init processes, by pid) in this machine's process table.
pub fn point_under(table: &BTreeMap<i32, ProcStat>, roots: &[i32]) -> Point {
    let mut p = Point::new();
    // Each process's verdict, once walked: is it under one of the roots?
    let mut under: BTreeMap<i32, bool> = roots.iter().map(|&r| (r, true)).collect();
    for s in table.values() {
        let mut chain = vec![];
        let mut pid = s.pid;
        let found = loop {
            if let Some(&v) = under.get(&pid) {
                break v;
            }
            chain.push(pid);
            match table.get(&pid) {
                Some(t) if t.ppid > 0 && t.ppid != pid && chain.len() <= table.len() => {
                    pid = t.ppid
                }
                _ => break false,
            }
        };
        for c in chain {
            under.insert(c, found);
        }
        if found && !roots.contains(&s.pid) {
            add(&mut p, &s.comm, s.cpu_ticks, s.rss_kib);
        }
    }
    p
}

/// Every process's stat line inside `container`; None when docker fails
/// or takes past [`DOCKER_TIMEOUT`].
pub async fn container_stats(docker: &Path, container: &str) -> Option<String> {
    docker_output(
        docker,
        &[
            "exec",
            container,
            "sh",
            "-c",
            "cat /proc/[0-9]*/stat 2>/dev/null; true",
        ],
    )
    .await
}

async fn docker_output(docker: &Path, args: &[&str]) -> Option<String> {
    let run = tokio::process::Command::new(docker)
        .envs(crate::tools::engine::env())
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(DOCKER_TIMEOUT, run).await {
        Ok(Ok(out)) if out.status.success() => String::from_utf8(out.stdout).ok(),
        _ => None,
    }
}

/// Where a node container's processes can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// Its init is this pid in this machine's /proc.
    Here(i32),
    /// Not in this machine's PID namespace: read with `docker exec`.
    Elsewhere,
}

/// `docker inspect`'s "PID ID" of a container → its root, given how to
/// read a pid's /proc/PID/cgroup here: the pid is the container's only
/// if its cgroup path names the container's id (a pid of another
/// namespace may be another process here).
pub fn root_from(inspect: &str, cgroup_of: impl Fn(i32) -> Option<String>) -> Option<Root> {
    let mut words = inspect.split_whitespace();
    let pid: i32 = words.next()?.parse().ok()?;
    let id = words.next()?;
    if pid <= 0 || id.len() < 12 {
        return None;
    }
    Some(match cgroup_of(pid) {
        Some(cg) if cg.contains(id) => Root::Here(pid),
        _ => Root::Elsewhere,
    })
}

/// Where each node container's processes are read, asked once per
/// container (again when its init is gone: the container restarted).
#[derive(Debug, Clone, Default)]
pub struct NodeReader {
    roots: BTreeMap<String, Root>,
}

impl NodeReader {
    /// The node containers' components: from `table` (this machine's
    /// process table) for the nodes whose init is in it, with `docker
    /// exec` for the rest. A node docker cannot read this time is left out
    /// of this sample.
    pub async fn point(
        &mut self,
        docker: &Path,
        containers: &[String],
        table: &BTreeMap<i32, ProcStat>,
    ) -> Point {
        self.roots.retain(|_, r| match r {
            Root::Here(pid) => table.contains_key(pid),
            Root::Elsewhere => true,
        });
        let unknown: Vec<&String> = containers
            .iter()
            .filter(|c| !self.roots.contains_key(*c))
            .collect();
        let asked = futures::future::join_all(unknown.iter().map(|c| root_of(docker, c))).await;
        for (c, root) in unknown.into_iter().zip(asked) {
            if let Some(r) = root {
                self.roots.insert(c.clone(), r);
            }
        }
        let here = |c: &String| match self.roots.get(c) {
            Some(Root::Here(pid)) => Some(*pid),
            _ => None,
        };
        let roots: Vec<i32> = containers.iter().filter_map(here).collect();
        let mut p = point_under(table, &roots);
        let elsewhere = containers.iter().filter(|c| here(c).is_none());
        let reads = elsewhere.map(|c| container_stats(docker, c));
        let page_kib = procfs::page_kib();
        for text in futures::future::join_all(reads).await.into_iter().flatten() {
            for (name, (ticks, kib)) in point_in_container(&text, page_kib) {
                procfs::add(&mut p, &name, ticks, kib);
            }
        }
        p
    }

    /// How many node containers are read from this machine's /proc
    /// rather than with `docker exec`.
    pub fn read_here(&self) -> usize {
        self.roots
            .values()
            .filter(|r| matches!(r, Root::Here(_)))
            .count()
    }
}

/// Where `container`'s processes can be read; None when docker could not
/// say (asked again at the next sample).
pub async fn root_of(docker: &Path, container: &str) -> Option<Root> {
    let out = docker_output(
        docker,
        &["inspect", "--format", "{{.State.Pid}} {{.Id}}", container],
    )
    .await?;
    root_from(&out, |pid| {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn proc(pid: i32, ppid: i32, comm: &str, ticks: u64, rss: u64) -> (i32, ProcStat) {
        (
            pid,
            ProcStat {
                pid,
                ppid,
                pgrp: pid,
                comm: comm.into(),
                cpu_ticks: ticks,
                children_ticks: 0,
                rss_kib: rss,
            },
        )
    }

    #[test]
    fn a_nodes_components_are_its_inits_descendants() {
        let table: BTreeMap<i32, ProcStat> = [
            proc(1, 0, "systemd", 5, 10),
            // The engine and a node's shim on this machine.
            proc(50, 1, "containerd", 100, 1000),
            proc(60, 50, "containerd-shim", 1, 10),
            // Node A: its init (systemd), containerd, a kubelet, etcd
            // under a shim of the node's containerd.
            proc(100, 60, "systemd", 3, 30),
            proc(110, 100, "containerd", 40, 400),
            proc(120, 100, "kubelet", 90, 900),
            proc(130, 110, "containerd-shim", 1, 10),
            proc(140, 130, "etcd", 200, 2000),
            // Node B: a kubelet.
            proc(200, 60, "systemd", 3, 30),
            proc(220, 200, "kubelet", 70, 700),
            // Not in a node: the harness's own kubelet-named process.
            proc(300, 1, "kubelet", 1000, 10_000),
        ]
        .into_iter()
        .collect();
        let p = point_under(&table, &[100, 200]);
        assert_eq!(p["kubelet"], (160, 1600));
        assert_eq!(p["etcd"], (200, 2000));
        // The node's containerd, not the engine's.
        assert_eq!(p["containerd"], (40, 400));
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(point_under(&table, &[]).is_empty());
    }

    #[test]
    fn a_pid_is_a_containers_only_when_its_cgroup_names_it() {
        let id = "3f2a9c0d1e4b5a6978877665544332211aabbccddeeff00112233445566778899";
        let cg = |pid: i32| {
            (pid == 4242).then(|| format!("12:cpu,cpuacct:/docker/{id}\n0::/docker/{id}\n"))
        };
        assert_eq!(
            root_from(&format!("4242 {id}\n"), cg),
            Some(Root::Here(4242))
        );
        // Another namespace's pid: here it is another process, or none.
        assert_eq!(root_from(&format!("77 {id}"), cg), Some(Root::Elsewhere));
        assert_eq!(root_from(&format!("0 {id}"), cg), None, "not running");
        assert_eq!(root_from("garbage", cg), None);
    }

    // Captured shapes of a kind control-plane node's /proc/*/stat (fields
    // after the resident pages cut): systemd, containerd, kubelet,
    // kube-controller-manager (its name cut at 15), etcd, a shell.
    pub const NODE: &str =
        "1 (systemd) S 0 1 1 0 -1 4194560 900 0 0 0 30 20 0 0 20 0 1 0 10 20000000 2000
120 (containerd) S 1 120 120 0 -1 0 0 0 0 0 400 100 0 0 20 0 30 0 50 900000000 12000
300 (kubelet) S 1 300 300 0 -1 0 0 0 0 0 900 300 0 0 20 0 20 0 60 1900000000 25000
410 (kube-controller) S 390 410 410 0 -1 0 0 0 0 0 700 100 0 0 20 0 10 0 80 1300000000 20000
420 (etcd) S 395 420 420 0 -1 0 0 0 0 0 1500 500 0 0 20 0 12 0 81 11000000000 30000
999 (sh) R 0 999 999 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9999 3000000 200
";

    #[test]
    fn components_in_a_node_are_told_by_command_name() {
        let p = point_in_container(NODE, 4);
        assert_eq!(p["etcd"], (2000, 120_000));
        assert_eq!(p["kube-controller-manager"], (800, 80_000));
        assert_eq!(p["kubelet"], (1200, 100_000));
        assert_eq!(p["containerd"], (500, 48_000));
        assert!(!p.contains_key("systemd") && !p.contains_key("sh"), "{p:?}");
    }
}
