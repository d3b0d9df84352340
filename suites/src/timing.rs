//! Where a suite run's time went: each trial's wait for its turn and its
//! own time, each serial lane's span, each suite's `after`. Printed when
//! the run ends (`cargo test` shows it after the trial lines), so a slow
//! run says which chain made it slow — the way `cargo nextest` lists
//! slow tests.

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
    let mut lanes: Vec<&'static str> = rows.iter().filter_map(|r| r.lane).collect();
    lanes.sort_unstable();
    lanes.dedup();
    for lane in lanes {
        let of: Vec<&Row> = rows.iter().filter(|r| r.lane == Some(lane)).collect();
        let first = of.iter().map(|r| r.started).min().unwrap_or_default();
        let last = of
            .iter()
            .map(|r| r.started + r.took)
            .max()
            .unwrap_or_default();
        let busy: Duration = of.iter().map(|r| r.took).sum();
        out += &format!(
            "  lane {lane}: {} trials, {} from {} to {} ({} of them running)\n",
            of.len(),
            secs(last.saturating_sub(first)),
            secs(first),
            secs(last),
            secs(busy)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::timing::{Row, Timings, summary};
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
}
