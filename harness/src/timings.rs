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

/// The Markdown table of a record: one row per command, its wall time and
/// where it went.
pub fn markdown(r: &Record) -> String {
    let mut out = format!(
        "{}\n\n| command | wall | CPU busy | peak RSS | where the time went |\n|---|---:|---:|---:|---|\n",
        r.title
    );
    for c in &r.commands {
        let _ = writeln!(
            out,
            "| {}: `{}` ({}, {} at {}) | **{}**{} | {:.2} cores | {:.1} GB | {} |",
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
mod tests;
