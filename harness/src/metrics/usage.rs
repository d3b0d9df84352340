//! CPU seconds and resident memory per control-plane component inside a
//! measurement window, from /proc (metrics::procfs): each component is the
//! process group the provider started it in; the harness is this process;
//! "kubectl" is the driver's forked kubectl processes — their CPU from
//! this process's waited-for children time (cutime + cstime), their
//! memory summed over those alive at each sample. On kind the components
//! run inside the node containers (`metrics::node_procs`): told apart by
//! command name and summed over the nodes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cluster::provider::Processes;
use crate::metrics::node_procs::NodeReader;
use crate::metrics::procfs::{self, ProcStat};

/// The harness process itself.
pub const HARNESS: &str = "harness";
/// The kubectl processes the harness forks (HPCC's drivers).
pub const KUBECTL: &str = "kubectl";
/// Everything else the machine's CPUs did (/proc/stat's busy time less
/// every row above): other processes, a build, another test's cluster.
/// Its CPU says whether the machine was quiet while latencies were
/// measured; it has no memory figure.
pub const OTHERS: &str = "others";

/// One component's use of the machine in a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User + system CPU seconds.
    pub cpu_s: f64,
    /// Resident memory, the highest and the mean of the samples (MiB).
    pub rss_peak_mib: f64,
    pub rss_mean_mib: f64,
    /// How many samples the memory figures rest on.
    pub samples: u32,
}

pub use crate::metrics::procfs::Point;

/// Samples the processes of named process groups, this process and its
/// kubectl children.
#[derive(Debug, Clone)]
pub struct UsageTracker {
    source: Processes,
    me: i32,
    ticks_per_s: f64,
    /// Each name's CPU ticks in the first sample it was in: a container
    /// that could not be read at the first sample (docker exec past its
    /// 5 s on a loaded machine) counts from its first read, not as 0.
    first: BTreeMap<String, u64>,
    last: Option<Point>,
    rss: BTreeMap<String, (u64, u64, u32)>,
    /// Where each node container's processes are read (kind).
    nodes: NodeReader,
}

/// What one scan of the process table says about each watched name.
pub fn point(table: &BTreeMap<i32, ProcStat>, groups: &[(String, i32)], me: i32) -> Point {
    let mut p = Point::new();
    for (name, pgid) in groups {
        let (ticks, rss) = table
            .values()
            .filter(|s| s.pgrp == *pgid)
            .fold((0, 0), |(t, r), s| (t + s.cpu_ticks, r + s.rss_kib));
        p.insert(name.clone(), (ticks, rss));
    }
    if let Some(s) = table.get(&me) {
        p.insert(HARNESS.into(), (s.cpu_ticks, s.rss_kib));
        let component = |g: i32| groups.iter().any(|(_, pg)| *pg == g);
        let kids_rss = table
            .values()
            .filter(|c| c.ppid == me && !component(c.pgrp))
            .map(|c| c.rss_kib)
            .sum();
        p.insert(KUBECTL.into(), (s.children_ticks, kids_rss));
    }
    p
}

/// Add the [`OTHERS`] row: the machine's busy ticks less every watched
/// row's (cumulative, like theirs; the window's difference is what they
/// used meanwhile).
pub fn with_others(p: &mut Point, machine_busy: u64) {
    let ours: u64 = p
        .iter()
        .filter(|(n, _)| *n != OTHERS)
        .map(|(_, v)| v.0)
        .sum();
    p.insert(OTHERS.into(), (machine_busy.saturating_sub(ours), 0));
}

impl UsageTracker {
    /// Watch what `source` says (the harness and its kubectls always).
    pub fn new(source: Processes) -> UsageTracker {
        UsageTracker {
            source,
            me: std::process::id() as i32,
            ticks_per_s: procfs::ticks_per_second(),
            first: BTreeMap::new(),
            last: None,
            rss: BTreeMap::new(),
            nodes: NodeReader::default(),
        }
    }

    pub fn ticks_per_s(&self) -> f64 {
        self.ticks_per_s
    }

    /// Read the process tables once and record them. A container that
    /// cannot be read leaves its components out of this sample.
    pub async fn sample(&mut self) -> Point {
        let groups = match &self.source {
            Processes::Groups(g) => g.as_slice(),
            _ => &[],
        };
        let table = procfs::scan();
        let mut p = point(&table, groups, self.me);
        if let Processes::InContainers { docker, containers } = &self.source {
            let nodes = self.nodes.point(docker, containers, &table).await;
            for (name, (ticks, kib)) in nodes {
                procfs::add(&mut p, &name, ticks, kib);
            }
        }
        if let Some(busy) = crate::machine::busy_ticks() {
            with_others(&mut p, busy);
        }
        self.record(p.clone());
        p
    }

    /// How many node containers are read from this machine's /proc
    /// rather than with `docker exec` (metrics::node_procs).
    pub fn nodes_read_here(&self) -> usize {
        self.nodes.read_here()
    }

    /// Record a point (from `sample`, or captured in tests).
    pub fn record(&mut self, p: Point) {
        for (name, &(_, kib)) in &p {
            let e = self.rss.entry(name.clone()).or_default();
            *e = (e.0.max(kib), e.1 + kib, e.2 + 1);
        }
        for (name, &(ticks, _)) in &p {
            self.first.entry(name.clone()).or_insert(ticks);
        }
        self.last = Some(p);
    }

    /// Usage per name between the first sample it was in and the last.
    pub fn figures(&self) -> BTreeMap<String, Usage> {
        let (first, Some(last)) = (&self.first, &self.last) else {
            return BTreeMap::new();
        };
        let mib = |kib: u64| kib as f64 / 1024.0;
        last.iter()
            .map(|(name, &(ticks, _))| {
                let start = first.get(name).copied().unwrap_or(ticks);
                let (peak, sum, n) = self.rss.get(name).copied().unwrap_or_default();
                let usage = Usage {
                    cpu_s: ticks.saturating_sub(start) as f64 / self.ticks_per_s,
                    rss_peak_mib: mib(peak),
                    rss_mean_mib: if n > 0 { mib(sum) / f64::from(n) } else { 0.0 },
                    samples: n,
                };
                (name.clone(), usage)
            })
            .collect()
    }
}

/// Give back to the system the heap the harness freed (glibc keeps it
/// otherwise): after a window's audit log is parsed, so the harness's RSS
/// in the next window is that window's, not the last parse's.
pub fn release_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::cluster::provider::Processes;
    use crate::metrics::node_procs::tests::NODE;
    use crate::metrics::procfs::ProcStat;
    use crate::metrics::usage::{HARNESS, KUBECTL, OTHERS, UsageTracker, point, with_others};

    fn p(pid: i32, ppid: i32, pgrp: i32, ticks: u64, kids: u64, rss: u64) -> (i32, ProcStat) {
        let s = ProcStat {
            pid,
            ppid,
            pgrp,
            comm: String::new(),
            cpu_ticks: ticks,
            children_ticks: kids,
            rss_kib: rss,
        };
        (pid, s)
    }

    #[test]
    fn groups_sum_their_members_and_the_harness_its_kubectl_children() {
        let groups = vec![("etcd".to_string(), 10), ("kwok".to_string(), 20)];
        let table: BTreeMap<_, _> = [
            p(10, 5, 10, 300, 0, 50_000),
            p(20, 5, 20, 40, 0, 30_000),
            p(21, 20, 20, 10, 0, 2_048),
            p(5, 1, 5, 500, 70, 100_000),
            // a kubectl child of the harness, and a component it started
            p(30, 5, 5, 3, 0, 40_000),
            p(100, 99, 77, 9, 0, 1),
        ]
        .into();
        let pt = point(&table, &groups, 5);
        assert_eq!(pt["etcd"], (300, 50_000));
        assert_eq!(pt["kwok"], (50, 32_048));
        assert_eq!(pt[HARNESS], (500, 100_000));
        assert_eq!(pt[KUBECTL], (70, 40_000));
    }

    #[test]
    fn others_is_the_machine_less_every_watched_row() {
        let mut t = UsageTracker::new(Processes::Unseen);
        let at = |etcd: u64, busy: u64| {
            let mut p: super::Point = [("etcd".to_string(), (etcd, 1024))].into();
            with_others(&mut p, busy);
            p
        };
        t.record(at(1000, 50_000));
        // etcd used 100 ticks, the machine 130: 30 were someone else's.
        t.record(at(1100, 50_130));
        let f = t.figures();
        let per_s = t.ticks_per_s();
        assert!((f[OTHERS].cpu_s - 30.0 / per_s).abs() < 1e-9, "{f:?}");
        assert!((f["etcd"].cpu_s - 100.0 / per_s).abs() < 1e-9);
        assert_eq!(f[OTHERS].rss_peak_mib, 0.0);
    }

    #[test]
    fn cpu_is_the_difference_and_memory_peak_and_mean() {
        let mut t = UsageTracker::new(Processes::Unseen);
        let at =
            |ticks: u64, kib: u64| -> super::Point { [("etcd".to_string(), (ticks, kib))].into() };
        t.record(at(1000, 1024));
        t.record(at(1100, 3072));
        t.record(at(1250, 2048));
        let u = &t.figures()["etcd"];
        assert!((u.cpu_s - 250.0 / t.ticks_per_s()).abs() < 1e-9);
        assert_eq!((u.rss_peak_mib, u.rss_mean_mib, u.samples), (3.0, 2.0, 3));
        assert!(UsageTracker::new(Processes::Unseen).figures().is_empty());
    }

    /// A container docker could not read at the first sample counts from
    /// the first sample it was in (it was 0 CPU: CI of aa174f3).
    #[test]
    fn a_name_missing_from_the_first_sample_counts_from_its_first() {
        let mut t = UsageTracker::new(Processes::Unseen);
        t.record([("etcd".to_string(), (100, 1))].into());
        t.record(
            [
                ("etcd".to_string(), (150, 1)),
                ("api".to_string(), (400, 1)),
            ]
            .into(),
        );
        t.record(
            [
                ("etcd".to_string(), (200, 1)),
                ("api".to_string(), (460, 1)),
            ]
            .into(),
        );
        let f = t.figures();
        let per_s = t.ticks_per_s();
        assert!((f["api"].cpu_s - 60.0 / per_s).abs() < 1e-9, "{f:?}");
        assert_eq!(f["api"].samples, 2);
        assert!((f["etcd"].cpu_s - 100.0 / per_s).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn a_restarted_component_counts_no_negative_time() {
        let mut t = UsageTracker::new(Processes::Unseen);
        t.record([("x".to_string(), (500, 1))].into());
        t.record([("x".to_string(), (20, 1))].into());
        assert_eq!(t.figures()["x"].cpu_s, 0.0);
    }

    #[tokio::test]
    async fn this_process_is_seen() {
        let mut t = UsageTracker::new(Processes::Unseen);
        let pt = t.sample().await;
        assert!(pt[HARNESS].1 > 0, "{pt:?}");
    }

    #[tokio::test]
    async fn containers_are_read_with_docker_exec_and_summed_over_nodes() {
        let (_tmp, fakes) = crate::cluster::kind::fakes::FakeCommands::healthy_in_temp_dir();
        // The fake engine's inspect prints no pid: the nodes are read
        // with docker exec.
        fakes.script("docker", &format!("printf '%s' '{NODE}'\n"));
        let mut t = UsageTracker::new(Processes::InContainers {
            docker: fakes.dir.join("docker"),
            containers: vec!["c-control-plane".into(), "c-worker".into()],
        });
        let pt = t.sample().await;
        let kib = crate::metrics::procfs::page_kib();
        assert_eq!(pt["kubelet"], (2400, 2 * 25_000 * kib), "{pt:?}");
        assert!(pt[HARNESS].1 > 0);
        // The two reads run at once: their logged words may interleave.
        let log = fakes.calls().join("\n");
        assert_eq!(log.matches("exec").count(), 2, "{log}");
        assert_eq!(log.matches("cat /proc/[0-9]*/stat").count(), 2, "{log}");
        assert!(
            log.contains("c-worker") && log.contains("c-control-plane"),
            "{log}"
        );
        // A node docker cannot read leaves its components out.
        fakes.script("docker", "exit 1\n");
        let pt = t.sample().await;
        assert!(!pt.contains_key("kubelet"), "{pt:?}");
    }
}
