//! The machine a run was measured on, as far as its latencies care: how
//! many CPUs, which CPU, how much memory (Linux's /proc/cpuinfo and
//! /proc/meminfo), and how busy the whole machine was (/proc/stat). A
//! latency or CPU figure recorded on one machine says nothing about
//! another: a baseline keeps its machine, and `--compare` judges those
//! figures only on a machine alike (`alike`) that was quiet while it ran
//! (`bench::core::gate::machine_gate`).

use serde::{Deserialize, Serialize};

/// What identifies a machine's class, and which machine it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    /// Online CPUs (`processor` entries of /proc/cpuinfo).
    pub cpus: u32,
    /// /proc/cpuinfo's first `model name`.
    pub cpu_model: String,
    /// /proc/meminfo's MemTotal, in whole GiB.
    pub memory_gib: u32,
    /// Which machine, as booted: the start of the kernel's boot ID
    /// (/proc/sys/kernel/random/boot_id, random at every boot). Two run
    /// sets with the same one ran on one machine; machines of one model
    /// differ in it. Absent where it was not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
}

/// The speed probe's score at one moment (the `probe` crate): millions of
/// its fixed steps a second on one core, whatever else the machine was
/// doing then included. Scores of different probe versions are not
/// compared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Speed {
    pub msteps_per_s: f64,
    pub version: u32,
}

impl Speed {
    /// Run the probe now (about a tenth of a second of one core, idle).
    pub fn now() -> Speed {
        Speed {
            msteps_per_s: probe::run().msteps_per_s,
            version: probe::VERSION,
        }
    }

    /// The median score of `speeds` of this probe's version; None when
    /// there are none.
    pub fn median_of(speeds: impl Iterator<Item = Speed>) -> Option<f64> {
        let v: Vec<f64> = speeds
            .filter(|s| s.version == probe::VERSION)
            .map(|s| s.msteps_per_s)
            .collect();
        (!v.is_empty()).then(|| crate::stats::median(&v))
    }
}

/// How many characters of the boot ID a machine keeps: enough to tell
/// machines apart, no more.
const BOOT_CHARS: usize = 8;

/// How far two machines' memory may differ and still be alike: VMs of one
/// size report MemTotal a few hundred MiB apart (kernel reservations).
pub const MEMORY_SLACK: f64 = 0.10;

impl Machine {
    /// This machine; None where /proc does not say (not Linux).
    pub fn this() -> Option<Machine> {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok();
        Some(Machine {
            boot: boot.as_deref().and_then(boot_of),
            ..parse(&cpuinfo, &meminfo)?
        })
    }

    /// Whether `self` and `other` are known to be one machine (the same
    /// boot); false where either did not record it.
    pub fn same_boot(&self, other: &Machine) -> bool {
        matches!((&self.boot, &other.boot), (Some(a), Some(b)) if a == b)
    }

    /// None when `self` and `other` are alike; otherwise why not.
    pub fn alike(&self, other: &Machine) -> Option<String> {
        let mem = f64::from(self.memory_gib.max(other.memory_gib));
        let mem_off = f64::from(self.memory_gib.abs_diff(other.memory_gib)) > MEMORY_SLACK * mem;
        (self.cpus != other.cpus || self.cpu_model != other.cpu_model || mem_off)
            .then(|| format!("{self} is not {other}"))
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} CPUs ({}), {} GiB",
            self.cpus, self.cpu_model, self.memory_gib
        )
    }
}

/// The kept start of a boot ID (hex digits only); None when it has none.
pub fn boot_of(boot_id: &str) -> Option<String> {
    let hex: String = boot_id
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(BOOT_CHARS)
        .collect();
    (hex.len() == BOOT_CHARS).then_some(hex)
}

/// The machine /proc/cpuinfo and /proc/meminfo describe (which boot, not).
pub fn parse(cpuinfo: &str, meminfo: &str) -> Option<Machine> {
    let field = |line: &str, key: &str| -> Option<String> {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    };
    let cpus = cpuinfo
        .lines()
        .filter(|l| field(l, "processor").is_some())
        .count() as u32;
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| field(l, "model name"))
        .unwrap_or_else(|| "unknown CPU".into());
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| field(l, "MemTotal"))?
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let memory_gib = (kib as f64 / (1024.0 * 1024.0)).round() as u32;
    (cpus > 0).then_some(Machine {
        cpus,
        cpu_model,
        memory_gib,
        boot: None,
    })
}

/// The CPU ticks (USER_HZ) every CPU of the machine has spent busy since
/// boot: /proc/stat's first line, user + nice + system + irq + softirq +
/// steal (idle and iowait left out; guest time is inside user already).
pub fn busy_ticks() -> Option<u64> {
    parse_busy(&std::fs::read_to_string("/proc/stat").ok()?)
}

pub fn parse_busy(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal …
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    (f.len() >= 4).then(|| at(0) + at(1) + at(2) + at(5) + at(6) + at(7))
}

#[cfg(test)]
mod tests {
    use crate::machine::{Machine, parse, parse_busy};

    const CPUINFO: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n";

    fn m(cpus: u32, model: &str, gib: u32) -> Machine {
        Machine {
            cpus,
            cpu_model: model.into(),
            memory_gib: gib,
            boot: None,
        }
    }

    #[test]
    fn a_boot_id_keeps_its_first_hex_digits_and_tells_machines_apart() {
        use crate::machine::boot_of;
        assert_eq!(
            boot_of("3f2a9c1e-77b0-4c1d-9e2f-0a1b2c3d4e5f\n").as_deref(),
            Some("3f2a9c1e")
        );
        assert_eq!(boot_of("3f2a"), None);
        let (mut a, mut b) = (m(2, "Intel Xeon", 24), m(2, "Intel Xeon", 24));
        assert!(!a.same_boot(&b), "unknown boots are not one machine");
        a.boot = Some("3f2a9c1e".into());
        b.boot = Some("3f2a9c1e".into());
        assert!(a.same_boot(&b));
        b.boot = Some("00aa11bb".into());
        assert!(!a.same_boot(&b));
        // Alike is the class: two boots of one model still are.
        assert_eq!(a.alike(&b), None);
    }

    #[test]
    fn cpus_model_and_memory_from_proc() {
        let got = parse(CPUINFO, "MemTotal:       24684084 kB\nMemFree: 1 kB\n").unwrap();
        assert_eq!(got, m(2, "AMD EPYC", 24));
        assert_eq!(got.to_string(), "2 CPUs (AMD EPYC), 24 GiB");
        assert_eq!(parse(CPUINFO, "MemFree: 1 kB\n"), None);
        assert_eq!(parse("", "MemTotal: 1024 kB\n"), None);
    }

    #[test]
    fn alike_needs_the_same_cpus_and_memory_within_the_slack() {
        assert_eq!(m(2, "AMD EPYC", 24).alike(&m(2, "AMD EPYC", 23)), None);
        let why = m(2, "AMD EPYC", 24).alike(&m(4, "AMD EPYC", 24)).unwrap();
        assert_eq!(
            why,
            "2 CPUs (AMD EPYC), 24 GiB is not 4 CPUs (AMD EPYC), 24 GiB"
        );
        assert!(
            m(2, "AMD EPYC", 24)
                .alike(&m(2, "Intel Xeon", 24))
                .is_some()
        );
        assert!(m(2, "AMD EPYC", 24).alike(&m(2, "AMD EPYC", 16)).is_some());
    }

    #[test]
    fn busy_is_everything_but_idle_and_iowait() {
        let stat = "cpu  100 2 30 5000 40 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_busy(stat), Some(100 + 2 + 30 + 6 + 7 + 8));
        assert_eq!(parse_busy("cpu0 1 2 3 4\n"), None);
        assert_eq!(parse_busy("cpu  1 x 3 4\n"), None);
    }
}
