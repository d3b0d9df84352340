//! Where a timed command's time went, read from what it printed: the
//! README's and the quick start's timing tables are rendered from
//! these records (`harness report timings`), never typed by hand.
//!
//! A log (ci/timed.sh writes one) is a command's stdout and stderr
//! with a few `# key: value` header lines first (`name`, `command`,
//! `commit`, `date`, `machine`) and GNU time's report last, in `time
//! -v`'s words. From it come the wall time, exit status, CPU time and
//! peak memory, and the phases the command itself reports: cargo's `Finished … in 2m 48s`, the harness's
//! `building X vV …: done (62.9 s)`, each test binary's `Running …` to
//! its `test result: … finished in 12.3s`, and `.ci/run`'s
//! `[.ci/run +123s] what` stamps.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::bad_input;

pub const SCHEMA: &str = "harness.timings/v1";

/// One recording: the commands of one run on one machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub schema: String,
    /// What was timed, e.g. "a fresh machine: every cache empty".
    pub title: String,
    pub commands: Vec<Command>,
}

/// One timed command.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Command {
    pub name: String,
    pub command: String,
    pub commit: String,
    pub date: String,
    pub machine: String,
    pub wall_s: f64,
    pub exit: i32,
    pub peak_rss_kib: u64,
    /// User + system CPU seconds of the command and its children.
    pub cpu_s: f64,
    pub phases: Vec<Phase>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A cargo build (`Finished \`dev\` profile … in …`).
    Cargo,
    /// A binary the harness built from Go modules (or a node image).
    Build,
    /// A test binary, `Running` to its `test result`.
    Tests,
    /// A `.ci/run` stage, from one stamp to the next.
    Stage,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    pub kind: Kind,
    pub what: String,
    pub seconds: f64,
}

/// Read one command's log (see the module's header).
pub fn parse(log: &str, origin: &str) -> Result<Command> {
    let header = |key: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
            .map(|v| v.trim().to_string())
            .ok_or_else(|| bad_input(format!("{origin}: no `# {key}: …` header line")))
    };
    let mut phases = Vec::new();
    let mut running: Option<String> = None;
    let mut stamps: Vec<(f64, String)> = Vec::new();
    let (mut wall_s, mut exit, mut peak) = (None, None, None);
    let (mut user, mut system) = (None, None);
    for line in log.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Finished `") {
            let profile = rest.split('`').next().unwrap_or("?");
            if let Some(s) = rest.rsplit(" in ").next().and_then(cargo_seconds) {
                phases.push(phase(Kind::Cargo, format!("`{profile}` build"), s));
            }
        } else if let Some(rest) = t.strip_prefix("Running ") {
            // `Running unittests src/lib.rs (target/…)`, `Running tests/x.rs (…)`;
            // not cargo run's `Running \`target/debug/harness …\``.
            if !rest.starts_with('`') {
                let what = rest.split(" (").next().unwrap_or(rest);
                running = Some(what.trim_start_matches("unittests ").to_string());
            }
        } else if t.starts_with("test result: ") {
            if let (Some(what), Some(s)) = (running.take(), finished_in(t)) {
                phases.push(phase(Kind::Tests, what, s));
            }
        } else if let Some(rest) = line.strip_prefix("harness: building ")
            && let Some((what, s)) = step_done(rest)
        {
            let what = what.split(" from ").next().unwrap_or(what);
            phases.push(phase(Kind::Build, what.to_string(), s));
        } else if let Some(rest) = t.strip_prefix("[.ci/run +")
            && let Some((secs, what)) = rest.split_once("s] ")
            && let Ok(at) = secs.parse::<f64>()
        {
            stamps.push((at, what.to_string()));
        } else if let Some(v) = t.strip_prefix("Elapsed (wall clock) time (h:mm:ss or m:ss): ") {
            wall_s = clock_seconds(v);
        } else if let Some(v) = t.strip_prefix("User time (seconds): ") {
            user = v.parse::<f64>().ok();
        } else if let Some(v) = t.strip_prefix("System time (seconds): ") {
            system = v.parse::<f64>().ok();
        } else if let Some(v) = t.strip_prefix("Exit status: ") {
            exit = v.parse().ok();
        } else if let Some(v) = t.strip_prefix("Maximum resident set size (kbytes): ") {
            peak = v.parse().ok();
        }
    }
    let missing = |what: &str| {
        bad_input(format!(
            "{origin}: no {what} (GNU time's report ends a timed log: ci/timed.sh)"
        ))
    };
    let wall_s = wall_s.ok_or_else(|| missing("wall clock time"))?;
    for (i, (at, what)) in stamps.iter().enumerate() {
        let end = stamps.get(i + 1).map_or(wall_s, |(next, _)| *next);
        phases.push(phase(Kind::Stage, what.clone(), (end - at).max(0.0)));
    }
    Ok(Command {
        name: header("name")?,
        command: header("command")?,
        commit: header("commit")?,
        date: header("date")?,
        machine: header("machine")?,
        wall_s,
        exit: exit.ok_or_else(|| missing("exit status"))?,
        peak_rss_kib: peak.ok_or_else(|| missing("maximum resident set size"))?,
        cpu_s: user.ok_or_else(|| missing("user time"))?
            + system.ok_or_else(|| missing("system time"))?,
        phases,
    })
}

fn phase(kind: Kind, what: String, seconds: f64) -> Phase {
    Phase {
        kind,
        what,
        seconds,
    }
}

/// cargo's "2m 48s", "21.68s", "1h 2m 3s".
fn cargo_seconds(v: &str) -> Option<f64> {
    let mut total = 0.0;
    for part in v.split_whitespace() {
        let (n, unit) = part.split_at(part.find(|c: char| c.is_ascii_alphabetic())?);
        let n: f64 = n.parse().ok()?;
        total += n * match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            _ => return None,
        };
    }
    Some(total)
}

/// libtest's "… finished in 1393.54s".
fn finished_in(line: &str) -> Option<f64> {
    line.rsplit("finished in ")
        .next()?
        .trim()
        .strip_suffix('s')?
        .parse()
        .ok()
}

/// A Step's last line, "LABEL: OUTCOME (12.3 s)": (label, seconds).
fn step_done(rest: &str) -> Option<(&str, f64)> {
    let open = rest.rfind(" (")?;
    let secs = rest[open + 2..].strip_suffix(" s)")?.parse().ok()?;
    let (label, _) = rest[..open].rsplit_once(": ")?;
    Some((label, secs))
}

/// GNU time's "1:02:03", "11:02.33".
fn clock_seconds(v: &str) -> Option<f64> {
    v.trim()
        .split(':')
        .try_fold(0.0, |acc, p| Some(acc * 60.0 + p.parse::<f64>().ok()?))
}

/// Record the commands of `logs` (each a timed log) under `title`.
pub fn record(title: &str, logs: &[&Path]) -> Result<Record> {
    if logs.is_empty() {
        return Err(bad_input("report timings --record: name at least one log"));
    }
    let commands = logs
        .iter()
        .map(|p| {
            let bytes = crate::input::bytes_flag("", p)?;
            parse(&String::from_utf8_lossy(&bytes), &p.display().to_string())
        })
        .collect::<Result<_>>()?;
    Ok(Record {
        schema: SCHEMA.into(),
        title: title.into(),
        commands,
    })
}

/// Load a recorded file; bad input names it.
pub fn load(path: &Path) -> Result<Record> {
    let text = crate::input::read(path)?;
    let r: Record =
        serde_json::from_str(&text).map_err(|e| bad_input(format!("{}: {e}", path.display())))?;
    if r.schema != SCHEMA {
        return Err(bad_input(format!(
            "{}: schema {:?}, expected {SCHEMA:?}",
            path.display(),
            r.schema
        )));
    }
    Ok(r)
}

/// "48 s", "2 min 48 s".
pub fn duration(s: f64) -> String {
    let s = s.round() as u64;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    }
}

/// The wall time a command's CPU-seconds would take with every core of
/// its machine ("2 cores, 24 GiB") busy throughout: no run of it on that
/// machine is shorter. "—" when the machine names no cores.
fn floor(c: &Command) -> String {
    let cores = c
        .machine
        .split_once(" cores")
        .and_then(|(n, _)| n.trim().parse::<f64>().ok())
        .filter(|n| *n > 0.0);
    match cores {
        Some(n) => duration(c.cpu_s / n),
        None => "—".into(),
    }
}

/// The Markdown table of a record: one row per command, its wall time, its
/// floor (CPU-seconds ÷ cores) and where it went.
pub fn markdown(r: &Record) -> String {
    let mut out = format!(
        "{}\n\n| command | wall | CPU busy | floor: CPU ÷ cores | peak RSS | where the time went |\n|---|---:|---:|---:|---:|---|\n",
        r.title
    );
    for c in &r.commands {
        let _ = writeln!(
            out,
            "| {}: `{}` ({}, {} at {}) | **{}**{} | {:.2} cores | {} | {:.1} GB | {} |",
            c.name,
            c.command,
            c.machine,
            c.date,
            c.commit,
            duration(c.wall_s),
            if c.exit == 0 {
                String::new()
            } else {
                format!(" (exit {})", c.exit)
            },
            c.cpu_s / c.wall_s.max(1e-9),
            floor(c),
            c.peak_rss_kib as f64 / 1024.0 / 1024.0,
            went(c)
        );
    }
    out
}

/// "cargo: `dev` build 2 min 48 s; Go builds 7 min 50 s (…); …; the rest 6 s".
fn went(c: &Command) -> String {
    let of = |k: Kind| c.phases.iter().filter(move |p| p.kind == k);
    // The longest first; past the eighth, or under a second, only summed.
    let list = |k: Kind| {
        let mut v: Vec<&Phase> = of(k).collect();
        v.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        let (shown, more) = v.split_at(v.iter().take(8).filter(|p| p.seconds >= 1.0).count());
        let mut out: Vec<String> = shown
            .iter()
            .map(|p| format!("{} {}", p.what, duration(p.seconds)))
            .collect();
        if !more.is_empty() {
            let rest: f64 = more.iter().map(|p| p.seconds).sum();
            out.push(format!("{} more {}", more.len(), duration(rest)));
        }
        out.join(", ")
    };
    let sum = |k: Kind| of(k).map(|p| p.seconds).sum::<f64>();
    let mut parts = Vec::new();
    let top: &[Kind] = if of(Kind::Stage).next().is_some() {
        // Stamps cover the whole run; the rest are inside them.
        &[Kind::Stage]
    } else if of(Kind::Tests).next().is_some() {
        // The tests build what they need as they go.
        &[Kind::Cargo, Kind::Tests]
    } else {
        &[Kind::Cargo, Kind::Build]
    };
    // Phases at the top that add up to more than the wall ran side by side
    // (the main job's two build lanes).
    let top_sum: f64 = top.iter().map(|k| sum(*k)).sum();
    let side_by_side = top_sum > c.wall_s + 0.5;
    for k in [Kind::Stage, Kind::Cargo, Kind::Build, Kind::Tests] {
        if of(k).next().is_none() {
            continue;
        }
        let label = match k {
            Kind::Stage => "stages",
            Kind::Cargo => "cargo",
            Kind::Build => "builds from Go modules",
            Kind::Tests => "test binaries",
        };
        let inside = if top.contains(&k) {
            ""
        } else {
            ", within the above"
        };
        if of(k).count() == 1 {
            parts.push(format!("{label}{inside}: {}", list(k)));
        } else if side_by_side && k == Kind::Build && inside.is_empty() {
            parts.push(format!(
                "{label}, side by side, {} of build time: {}",
                duration(sum(k)),
                list(k)
            ));
        } else {
            parts.push(format!("{label} {}{inside}: {}", duration(sum(k)), list(k)));
        }
    }
    let rest = c.wall_s - top_sum;
    if rest >= 0.5 {
        parts.push(format!("the rest {}", duration(rest)));
    }
    parts.join("; ")
}

/// Write a record as JSON.
pub fn write(path: &Path, r: &Record) -> Result<()> {
    let json = serde_json::to_string_pretty(r).context("serialising the timings")?;
    crate::output::write_atomic(path, json + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "# name: the main job\n# command: cargo run -p harness -- up\n# commit: 1234567\n# date: 2026-11-27\n# machine: 2 cores, 24 GiB\n";

    const TIME_V: &str = "\tCommand being timed: \"cargo run\"\n\tUser time (seconds): 1000.25\n\tSystem time (seconds): 100.00\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 11:02.50\n\tMaximum resident set size (kbytes): 2621440\n\tExit status: 0\n";

    #[test]
    fn a_first_commands_log_gives_its_builds_and_the_rest() {
        let log = format!(
            "{HEADER}   Compiling harness v0.1.0\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2m 48s\n     Running `target/debug/harness up`\n\
         harness: building etcd v3.6.16 from go.etcd.io/etcd/server/v3@v3.6.16 with go1.26.8 …\n\
         harness: building etcd v3.6.16 from go.etcd.io/etcd/server/v3@v3.6.16 with go1.26.8: done, 20.5 s of it resolving modules (62.9 s)\n\
         harness: building kube-apiserver v1.37.1 from k8s.io/kubernetes@v1.37.1 with go1.26.8: done (201.0 s)\n\
         harness: waiting for nodes to be Ready: ready (0.0 s)\n{TIME_V}"
        );
        let c = parse(&log, "first.log").unwrap();
        assert_eq!(c.name, "the main job");
        assert_eq!(c.wall_s, 662.5);
        assert_eq!((c.exit, c.peak_rss_kib), (0, 2621440));
        let c_cpu = c.cpu_s;
        let got: Vec<(Kind, &str, f64)> = c
            .phases
            .iter()
            .map(|p| (p.kind, p.what.as_str(), p.seconds))
            .collect();
        assert_eq!(
            got,
            [
                (Kind::Cargo, "`dev` build", 168.0),
                (Kind::Build, "etcd v3.6.16", 62.9),
                (Kind::Build, "kube-apiserver v1.37.1", 201.0),
            ]
        );
        let unnamed = Command {
            machine: "a machine".into(),
            ..c.clone()
        };
        assert_eq!(floor(&unnamed), "—");
        let md = markdown(&Record {
            schema: SCHEMA.into(),
            title: "t".into(),
            commands: vec![c],
        });
        // 662.5 − 168 − 263.9 = 230.6 s not in a phase.
        assert_eq!(c_cpu, 1100.25);
        // 1100.25 CPU-seconds on 2 cores: no run under 9 min 10 s.
        assert!(
            md.contains("| **11 min 3 s** | 1.66 cores | 9 min 10 s | 2.5 GB |"),
            "{md}"
        );
        assert!(
        md.contains("builds from Go modules 4 min 24 s: kube-apiserver v1.37.1 3 min 21 s, etcd v3.6.16 1 min 3 s; the rest 3 min 51 s"),
        "{md}"
    );
    }

    #[test]
    fn builds_side_by_side_are_said_to_be() {
        let log = format!(
            "{HEADER}    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2m 0s\n\
         harness: building kube-apiserver v1.37.1 from k8s.io/kubernetes@v1.37.1 with go1.26.8: done (400.0 s)\n\
         harness: building etcd v3.6.16 from go.etcd.io/etcd/server/v3@v3.6.16 with go1.26.8: done (250.0 s)\n{TIME_V}"
        );
        let md = markdown(&Record {
            schema: SCHEMA.into(),
            title: "t".into(),
            commands: vec![parse(&log, "first.log").unwrap()],
        });
        // 120 + 650 s of phases in 662.5 s of wall.
        assert!(
        md.contains("builds from Go modules, side by side, 10 min 50 s of build time: kube-apiserver v1.37.1 6 min 40 s, etcd v3.6.16 4 min 10 s |"),
        "{md}"
    );
    }

    #[test]
    fn test_binaries_run_from_running_to_their_result_and_hold_the_builds() {
        let log = format!(
            "{HEADER}    Finished `test` profile [unoptimized + debuginfo] target(s) in 21.68s\n     Running unittests src/lib.rs (target/debug/deps/harness-1)\n\
         test result: ok. 366 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 40.50s\n\
         \x20    Running tests/all.rs (target/debug/deps/all-2)\n\
         harness: building kueue-controller v0.19.2 from sigs.k8s.io/kueue@v0.19.2 with go1.26.8: done (150.0 s)\n\
         test result: FAILED. 174 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1393.54s\n{}",
            TIME_V
                .replace("11:02.50", "25:00")
                .replace("Exit status: 0", "Exit status: 101")
        );
        let c = parse(&log, "tests.log").unwrap();
        assert_eq!(c.exit, 101);
        let md = markdown(&Record {
            schema: SCHEMA.into(),
            title: "t".into(),
            commands: vec![c],
        });
        assert!(md.contains("**25 min 0 s** (exit 101)"), "{md}");
        assert!(
            md.contains("test binaries 23 min 54 s: tests/all.rs 23 min 14 s, src/lib.rs 41 s"),
            "{md}"
        );
        assert!(
            md.contains(
                "builds from Go modules, within the above: kueue-controller v0.19.2 2 min 30 s"
            ),
            "{md}"
        );
    }

    #[test]
    fn ci_stamps_are_stages_up_to_the_next_stamp_or_the_end() {
        let log = format!(
            "{HEADER}[.ci/run +0s] toolchains\n[.ci/run +12s] cargo fmt --check\n[.ci/run +100s] tests\n{TIME_V}"
        );
        let c = parse(&log, "ci.log").unwrap();
        let stages: Vec<(&str, f64)> = c
            .phases
            .iter()
            .filter(|p| p.kind == Kind::Stage)
            .map(|p| (p.what.as_str(), p.seconds))
            .collect();
        assert_eq!(
            stages,
            [
                ("toolchains", 12.0),
                ("cargo fmt --check", 88.0),
                ("tests", 562.5)
            ]
        );
    }

    #[test]
    fn a_log_without_its_headers_or_times_report_is_refused_by_name() {
        let e = parse(TIME_V, "x.log").unwrap_err().to_string();
        assert!(e.contains("x.log: no `# name: …` header line"), "{e}");
        let e = parse(HEADER, "y.log").unwrap_err().to_string();
        assert!(e.contains("y.log: no wall clock time"), "{e}");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(48.4), "48 s");
        assert_eq!(duration(168.0), "2 min 48 s");
        assert_eq!(duration(3725.0), "1 h 2 min");
    }
}
