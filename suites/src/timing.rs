//! Where a suite run's time went: each trial's wait for its turn and its
//! own time, each serial lane's span, each suite's `after`. Printed when
//! the run ends (`cargo test` shows it after the trial lines), so a slow
//! run says which chain made it slow — the way `cargo nextest` lists
//! slow tests. The same, with each lane's critical path (the chain of
//! trials that set the lane's end), is written as a Markdown report
//! beside CI's other reports ([`report_path`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One finished trial, or one suite's `after`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `[suite] name`, or `[suite] after`.
    pub name: String,
    pub lane: Option<&'static str>,
    /// From the run's start to the trial's turn.
    pub started: Duration,
    /// Its turn to its end.
    pub took: Duration,
}

/// The run's clock and what finished.
pub struct Timings {
    t0: Instant,
    rows: Mutex<Vec<Row>>,
}

/// How many of the longest trials the summary names.
pub const SHOWN: usize = 12;

impl Default for Timings {
    fn default() -> Self {
        Timings {
            t0: Instant::now(),
            rows: Mutex::new(Vec::new()),
        }
    }
}

impl Timings {
    /// Now, on the run's clock.
    pub fn now(&self) -> Duration {
        self.t0.elapsed()
    }

    /// A trial (or `after`) that got its turn at `started` ended now.
    pub fn done(&self, name: String, lane: Option<&'static str>, started: Duration) {
        let took = self.now().saturating_sub(started);
        let row = Row {
            name,
            lane,
            started,
            took,
        };
        self.rows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(row);
    }

    /// The summary of what finished so far.
    pub fn summary(&self) -> String {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        summary(&rows, self.now())
    }

    /// Write the report of what finished ([`report`]) to `path`; nothing
    /// when nothing finished (a listing). Said on stderr either way.
    pub fn write_report(&self, path: &Path) {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        if rows.is_empty() {
            return;
        }
        let text = report(&rows, self.now());
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, text));
        match written {
            Ok(()) => eprintln!("suites: timing report in {}", path.display()),
            Err(e) => eprintln!("suites: writing {}: {e}", path.display()),
        }
    }
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 {
        format!("{} min {:02} s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!("{s:.1} s")
    }
}

/// The run's length, its longest trials (with when they started) and
/// each serial lane's span, first turn to last end.
pub fn summary(rows: &[Row], wall: Duration) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "suites: {} trials and afters in {}; the longest {}:\n",
        rows.len(),
        secs(wall),
        SHOWN.min(rows.len())
    );
    let mut by_took: Vec<&Row> = rows.iter().collect();
    by_took.sort_by(|a, b| b.took.cmp(&a.took).then(a.name.cmp(&b.name)));
    for r in by_took.iter().take(SHOWN) {
        let lane = r.lane.map(|l| format!(", lane {l}")).unwrap_or_default();
        out += &format!(
            "  {:>10}  {} (from {}{lane})\n",
            secs(r.took),
            r.name,
            secs(r.started)
        );
    }
    for lane in lanes(rows) {
        out += &format!("  lane {}\n", lane.said());
    }
    out
}

/// When a row ended, on the run's clock.
fn end(r: &Row) -> Duration {
    r.started + r.took
}

/// One lane's trials: first turn to last end, and their own time.
struct Span<'a> {
    lane: &'static str,
    rows: Vec<&'a Row>,
    first: Duration,
    last: Duration,
    busy: Duration,
}

impl Span<'_> {
    /// `kind-1.37: 2 trials, 5 min 20 s from 10.0 s to 5 min 30 s (...)`
    fn said(&self) -> String {
        format!(
            "{}: {} trials, {} from {} to {} ({} of them running)",
            self.lane,
            self.rows.len(),
            secs(self.last.saturating_sub(self.first)),
            secs(self.first),
            secs(self.last),
            secs(self.busy)
        )
    }
}

/// Each lane's span, by lane name.
fn lanes(rows: &[Row]) -> Vec<Span<'_>> {
    let mut names: Vec<&'static str> = rows.iter().filter_map(|r| r.lane).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|lane| {
            let of: Vec<&Row> = rows.iter().filter(|r| r.lane == Some(lane)).collect();
            Span {
                lane,
                first: of.iter().map(|r| r.started).min().unwrap_or_default(),
                last: of.iter().map(|r| end(r)).max().unwrap_or_default(),
                busy: of.iter().map(|r| r.took).sum(),
                rows: of,
            }
        })
        .collect()
}

/// One trial of a lane's critical path, and the wait before its turn:
/// from the end of the path's trial before it (or the run's start), with
/// the last trial of the run to end within that wait, if any — what it
/// likely waited for (a build, a slot).
#[derive(Debug)]
pub struct Link<'a> {
    pub row: &'a Row,
    pub waited: Duration,
    pub after: Option<&'a Row>,
}

/// The lane's critical path, first to last: the trial that ended the lane
/// last, the lane's trial that ended last before it began, and so on back
/// to a trial with none before it. Its trials' time and waits add up to
/// the lane's end.
pub fn critical_path<'a>(rows: &'a [Row], lane: &str) -> Vec<Link<'a>> {
    let of: Vec<&Row> = rows.iter().filter(|r| r.lane == Some(lane)).collect();
    // Each step back goes strictly earlier, so the chain ends.
    let key = |r: &Row| (end(r), r.started);
    let mut chain = Vec::new();
    let mut cur = latest(of.iter().copied());
    while let Some(row) = cur {
        let before = latest(
            of.iter()
                .copied()
                .filter(|r| end(r) <= row.started && key(r) < key(row)),
        );
        let since = before.map(end).unwrap_or_default();
        let after = latest(
            rows.iter()
                .filter(|r| end(r) > since && end(r) <= row.started && r.lane != Some(lane)),
        );
        chain.push(Link {
            row,
            waited: row.started.saturating_sub(since),
            after,
        });
        cur = before;
    }
    chain.reverse();
    chain
}

/// The row that ended last (of two, the later to start).
fn latest<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<&'a Row> {
    rows.max_by(|a, b| end(a).cmp(&end(b)).then(a.started.cmp(&b.started)))
}

/// The Markdown report: the run's length, its longest trials, each
/// lane's span and critical path.
pub fn report(rows: &[Row], wall: Duration) -> String {
    let mut by_took: Vec<&Row> = rows.iter().collect();
    by_took.sort_by(|a, b| b.took.cmp(&a.took).then(a.name.cmp(&b.name)));
    let mut out = format!(
        "# Where the suite run's time went\n\n{} trials and afters in {}.\n\n## The longest {}\n\n| took | trial | from | lane |\n|---:|---|---:|---|\n",
        rows.len(),
        secs(wall),
        SHOWN.min(rows.len())
    );
    for r in by_took.iter().take(SHOWN) {
        out += &format!(
            "| {} | {} | {} | {} |\n",
            secs(r.took),
            cell(&r.name),
            secs(r.started),
            r.lane.unwrap_or("")
        );
    }
    for lane in lanes(rows) {
        out += &format!(
            "\n## Lane {}\n\nWhat it proves: {}.\n\n{}.\n\nCritical path, the chain of trials that set the lane's end:\n\n| from | took | trial | waited before it |\n|---:|---:|---|---|\n",
            lane.lane,
            crate::lane::proves(lane.lane),
            lane.said()
        );
        for link in critical_path(rows, lane.lane) {
            let after = link
                .after
                .map(|a| format!(" (the last to end before it: {})", cell(&a.name)))
                .unwrap_or_default();
            out += &format!(
                "| {} | {} | {} | {}{after} |\n",
                secs(link.row.started),
                secs(link.row.took),
                cell(&link.row.name),
                secs(link.waited)
            );
        }
    }
    out
}

/// Text safe in a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Where the report of test binary `binary` goes:
/// `suites-timing-<binary>.md` in `$REPORTS` (`reports`: the directory
/// CI uploads, beside the benchmark's junit.xml; ci/local-suites.sh) or
/// else in `target/suites-report/`, as the case suites' reports go to
/// `target/<suite>-report/`. A relative `$REPORTS` is the repository's:
/// cargo runs a test binary in its crate's directory.
pub fn report_path(reports: Option<OsString>, binary: &str) -> PathBuf {
    let root = crate::repo_root();
    let dir = reports
        .filter(|d| !d.is_empty())
        .map(|d| root.join(d))
        .unwrap_or_else(|| root.join("target/suites-report"));
    dir.join(format!("suites-timing-{binary}.md"))
}

/// The test binary's name without cargo's hash: `all` of
/// `all-0123456789abcdef`.
pub fn binary_name(file_stem: &str) -> &str {
    match file_stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            name
        }
        _ => file_stem,
    }
}

#[cfg(test)]
mod tests {
    use crate::timing::{Row, Timings, binary_name, critical_path, report, report_path, summary};
    use std::time::Duration;

    fn row(name: &str, lane: Option<&'static str>, started: u64, took: u64) -> Row {
        Row {
            name: name.into(),
            lane,
            started: Duration::from_secs(started),
            took: Duration::from_secs(took),
        }
    }

    #[test]
    fn longest_first_and_lane_spans() {
        let rows = [
            row("[a] short", None, 0, 5),
            row("[kind] one", Some("kind-1.37"), 10, 100),
            row("[kind] two", Some("kind-1.37"), 130, 200),
            row("[a] after", None, 400, 2),
        ];
        let s = summary(&rows, Duration::from_secs(402));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "suites: 4 trials and afters in 6 min 42 s; the longest 4:"
        );
        assert!(lines[1].contains("3 min 20 s  [kind] two (from 2 min 10 s, lane kind-1.37)"));
        assert!(lines[2].contains("[kind] one"), "{s}");
        assert!(lines[4].contains("[a] after"), "{s}");
        assert_eq!(
            lines[5],
            "  lane kind-1.37: 2 trials, 5 min 20 s from 10.0 s to 5 min 30 s (5 min 00 s of them running)"
        );
    }

    #[test]
    fn nothing_finished_says_nothing() {
        assert_eq!(summary(&[], Duration::from_secs(1)), "");
        assert_eq!(Timings::default().summary(), "");
    }

    #[test]
    fn a_done_trial_is_timed_from_its_turn() {
        let t = Timings::default();
        t.done("[x] y".into(), None, Duration::ZERO);
        let s = t.summary();
        assert!(s.starts_with("suites: 1 trials and afters in "), "{s}");
        assert!(s.contains("[x] y (from 0.0 s)"), "{s}");
    }

    /// A synthetic run: a lane of three trials where the third waited for
    /// a build, a lane of one, and trials of no lane.
    fn synthetic() -> Vec<Row> {
        vec![
            row("[build] kube-apiserver v1.36.4", Some("build"), 0, 300),
            row("[kind] create", Some("kind-1.36"), 5, 60),
            row("[kind] early", Some("kind-1.36"), 65, 20),
            row("[kind] needs 1.36", Some("kind-1.36"), 310, 100),
            row("[kind] lone", Some("kind-1.37"), 0, 50),
            row("[a] short", None, 0, 1),
            row("[a] after", None, 420, 2),
        ]
    }

    #[test]
    fn a_lanes_critical_path_is_its_chain_back_from_its_last_end() {
        let rows = synthetic();
        let path = critical_path(&rows, "kind-1.36");
        let names: Vec<&str> = path.iter().map(|l| l.row.name.as_str()).collect();
        assert_eq!(
            names,
            ["[kind] create", "[kind] early", "[kind] needs 1.36"]
        );
        let waits: Vec<u64> = path.iter().map(|l| l.waited.as_secs()).collect();
        assert_eq!(waits, [5, 0, 225]);
        // What it waited for: the build that ended within the wait.
        assert_eq!(
            path[2].after.map(|r| r.name.as_str()),
            Some("[build] kube-apiserver v1.36.4")
        );
        assert!(path[1].after.is_none());
        // Its waits and trials add up to the lane's end: 410 s.
        let total: u64 = path.iter().map(|l| (l.waited + l.row.took).as_secs()).sum();
        assert_eq!(total, 410);
        assert_eq!(critical_path(&rows, "kind-1.37").len(), 1);
        assert!(critical_path(&rows, "nowhere").is_empty());
    }

    #[test]
    fn trials_at_one_instant_end_the_chain() {
        let rows = [row("x", Some("l"), 3, 0), row("y", Some("l"), 3, 0)];
        assert_eq!(critical_path(&rows, "l").len(), 1);
    }

    #[test]
    fn the_report_has_the_longest_trials_and_each_lanes_span_and_path() {
        let s = report(&synthetic(), Duration::from_secs(422));
        assert!(
            s.starts_with(
                "# Where the suite run's time went\n\n7 trials and afters in 7 min 02 s.\n"
            ),
            "{s}"
        );
        assert!(
            s.contains("| 5 min 00 s | [build] kube-apiserver v1.36.4 | 0.0 s | build |\n"),
            "{s}"
        );
        assert!(
            s.contains("## Lane kind-1.36\n\nWhat it proves: a kind cluster of that minor")
                && s.contains("gates: the gang cases on real kubelets")
                && s.contains(".\n\nkind-1.36: 3 trials, 6 min 45 s from 5.0 s to 6 min 50 s (3 min 00 s of them running).\n"),
            "{s}"
        );
        assert!(
            s.contains("| 5 min 10 s | 1 min 40 s | [kind] needs 1.36 | 3 min 45 s (the last to end before it: [build] kube-apiserver v1.36.4) |\n"),
            "{s}"
        );
        assert!(
            s.contains("| 1 min 05 s | 20.0 s | [kind] early | 0.0 s |\n"),
            "{s}"
        );
        assert!(s.contains("## Lane build\n") && s.contains("## Lane kind-1.37\n"));
    }

    #[test]
    fn the_report_goes_to_ci_reports_or_target() {
        let root = crate::repo_root();
        assert_eq!(
            report_path(Some("reports/local".into()), "all"),
            root.join("reports/local/suites-timing-all.md")
        );
        assert_eq!(
            report_path(Some("/tmp/r".into()), "gang"),
            std::path::Path::new("/tmp/r/suites-timing-gang.md")
        );
        assert_eq!(
            report_path(None, "all"),
            root.join("target/suites-report/suites-timing-all.md")
        );
        assert_eq!(
            report_path(Some("".into()), "all"),
            report_path(None, "all")
        );
        assert_eq!(binary_name("all-0123456789abcdef"), "all");
        assert_eq!(binary_name("kind"), "kind");
        assert_eq!(binary_name("real-node"), "real-node");
        assert_eq!(binary_name("kind-e2e"), "kind-e2e");
    }

    #[test]
    fn the_report_file_is_written_and_nothing_finished_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r/suites-timing-x.md");
        Timings::default().write_report(&path);
        assert!(!path.exists());
        let t = Timings::default();
        t.done("[x] y".into(), Some("l"), Duration::ZERO);
        t.write_report(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("## Lane l\n"), "{text}");
    }
}
