//! CPU time and resident memory of processes, read from Linux's /proc
//! (proc(5)): `/proc/PID/stat` for the process group, the CPU ticks it has
//! used (utime + stime) and those of its waited-for children (cutime +
//! cstime); `/proc/PID/status` for VmRSS. Parsing is pure (tested on
//! captured text); `scan` reads the whole process table once.

use std::collections::BTreeMap;

/// One sample of watched names: name → (cumulative CPU ticks, resident
/// KiB).
pub type Point = BTreeMap<String, (u64, u64)>;

/// Add `ticks` and `kib` to `name`'s entry of `p`.
pub fn add(p: &mut Point, name: &str, ticks: u64, kib: u64) {
    let e = p.entry(name.to_string()).or_default();
    *e = (e.0 + ticks, e.1 + kib);
}

/// The command name of a `/proc/PID/stat` line: between the first '('
/// and the last ')' (it may hold either).
fn comm(text: &str) -> Option<&str> {
    text.get(text.find('(')? + 1..text.rfind(')')?)
}

/// One process, as /proc showed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// The command name (at most 15 characters).
    pub comm: String,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    /// cutime + cstime: the CPU of children it has waited for.
    pub children_ticks: u64,
    /// Resident set size (VmRSS) in KiB; 0 for kernel threads and zombies.
    pub rss_kib: u64,
}

/// `/proc/PID/stat`: (ppid, pgrp, utime+stime, cutime+cstime). The
/// command name may hold spaces and parentheses: fields are counted after
/// its last ')'. Zombies (state Z, X) give None.
pub fn parse_stat(text: &str) -> Option<(i32, i32, u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Overall fields 3 (state), 4 (ppid), 5 (pgrp), 14–17 (utime, stime,
    // cutime, cstime) are indexes 0, 1, 2 and 11–14 here.
    if matches!(f.first()?.chars().next()?, 'Z' | 'X') {
        return None;
    }
    let n = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some((
        f.get(1)?.parse().ok()?,
        f.get(2)?.parse().ok()?,
        n(11)? + n(12)?,
        n(13)? + n(14)?,
    ))
}

/// `/proc/PID/stat` for processes seen elsewhere (inside a container,
/// where /proc/PID/status would cost a second read): (command name,
/// utime+stime, resident pages (field 24)). Zombies give None.
pub fn parse_stat_named(text: &str) -> Option<(String, u64, u64)> {
    let comm = comm(text)?.to_string();
    let close = text.rfind(')')?;
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    if matches!(f.first()?.chars().next()?, 'Z' | 'X') {
        return None;
    }
    let n = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some((comm, n(11)? + n(12)?, n(21)?))
}

/// The memory page size in KiB (sysconf(_SC_PAGESIZE)); containers share
/// the machine's kernel and so its page size.
pub fn page_kib() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 / 1024 } else { 4 }
}

/// VmRSS in KiB from `/proc/PID/status` (None for kernel threads).
pub fn parse_status_rss(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Clock ticks per second (sysconf(_SC_CLK_TCK), 100 on Linux).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// One process now, None when it is gone or a zombie.
pub fn read(pid: i32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (ppid, pgrp, cpu_ticks, children_ticks) = parse_stat(&stat)?;
    let comm = comm(&stat).unwrap_or_default().to_string();
    let rss_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| parse_status_rss(&s))
        .unwrap_or(0);
    Some(ProcStat {
        pid,
        ppid,
        pgrp,
        comm,
        cpu_ticks,
        children_ticks,
        rss_kib,
    })
}

/// Every live process, by pid.
pub fn scan() -> BTreeMap<i32, ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| read(pid).map(|s| (pid, s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::metrics::procfs::{page_kib, parse_stat, parse_stat_named, parse_status_rss};

    // Captured from an etcd process on Linux 6.x (fields after starttime cut).
    const ETCD_STAT: &str = "41234 (etcd) S 41200 41234 41200 0 -1 4194560 8821 0 0 0 1520 377 12 9 20 0 14 0 5012345 11877335040 12289";

    #[test]
    fn stat_gives_group_and_ticks() {
        assert_eq!(parse_stat(ETCD_STAT), Some((41200, 41234, 1897, 21)));
    }

    #[test]
    fn stat_named_gives_command_ticks_and_resident_pages() {
        assert_eq!(
            parse_stat_named(ETCD_STAT),
            Some(("etcd".to_string(), 1897, 12289))
        );
        let s = "77 (kube (api) server) R 1 77 77 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 99 0 321";
        assert_eq!(
            parse_stat_named(s),
            Some(("kube (api) server".to_string(), 11, 321))
        );
        let z = "9 (kubectl) Z 8 8 8 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 99 0 0";
        assert_eq!(parse_stat_named(z), None);
        assert_eq!(parse_stat_named("1 (x) S 1 2"), None);
        assert!(page_kib() >= 4);
    }

    #[test]
    fn stat_with_parentheses_and_spaces_in_the_name() {
        let s = "77 (kube (api) server) R 1 77 77 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 99 0 0";
        assert_eq!(parse_stat(s), Some((1, 77, 11, 15)));
    }

    #[test]
    fn zombies_and_garbage_are_none() {
        let z = "9 (kubectl) Z 8 8 8 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 99 0 0";
        assert_eq!(parse_stat(z), None);
        assert_eq!(parse_stat("no parentheses here"), None);
        assert_eq!(parse_stat("1 (x) S 1 2"), None);
    }

    #[test]
    fn status_rss() {
        let s = "Name:\tetcd\nVmPeak:\t 1000 kB\nVmHWM:\t   90000 kB\nVmRSS:\t   81234 kB\nThreads:\t14\n";
        assert_eq!(parse_status_rss(s), Some(81234));
        assert_eq!(parse_status_rss("Name:\tkthreadd\nThreads:\t1\n"), None);
    }
}
