//! Why each failed trial failed, said again as the run's last lines.
//! libtest prints a failed trial's whole message in its "failures:"
//! section, long before the run ends; a CI page or a terminal that keeps
//! only the end of a run's output (GitHub's log tail, `tail`) then shows
//! which trials failed but not why. The summary repeats the first lines
//! of each message, each line cut short, after the timing summary.

use std::sync::Mutex;

use libtest_mimic::Failed;

/// The first lines kept of a trial's message.
pub const LINES: usize = 8;
/// The characters kept of each of them.
pub const WIDTH: usize = 300;

/// The failed trials, in the order they ended.
#[derive(Default)]
pub struct Failures {
    failed: Mutex<Vec<(String, String)>>,
}

impl Failures {
    /// Keep `outcome`'s message when the trial `name` failed.
    pub fn note(&self, name: &str, outcome: &Result<(), Failed>) {
        if let Err(f) = outcome {
            let message = f.message().unwrap_or("(no message)").to_string();
            self.failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((name.to_string(), message));
        }
    }

    /// Nothing when every trial passed; else a heading and, per failed
    /// trial, its name and its message's first [`LINES`] lines.
    pub fn summary(&self) -> String {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_empty() {
            return String::new();
        }
        let mut s = format!(
            "why {} trial(s) failed (the first {LINES} lines of each message; the whole one is above):\n",
            failed.len()
        );
        for (name, message) in failed.iter() {
            s.push_str(&format!("  {name}\n"));
            let lines: Vec<&str> = message.lines().collect();
            for line in lines.iter().take(LINES) {
                s.push_str(&format!("    {}\n", cut(line)));
            }
            if lines.len() > LINES {
                s.push_str(&format!("    … {} more line(s)\n", lines.len() - LINES));
            }
        }
        s
    }
}

fn cut(line: &str) -> String {
    match line.char_indices().nth(WIDTH) {
        Some((at, _)) => format!("{} …", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_trial_is_named_with_its_first_lines_cut_short() {
        let f = Failures::default();
        f.note("[kind] passes", &Ok(()));
        assert_eq!(f.summary(), "");
        let long = "x".repeat(WIDTH + 5);
        let message: Vec<String> = (0..LINES + 3)
            .map(|i| {
                if i == 0 {
                    long.clone()
                } else {
                    format!("line {i}")
                }
            })
            .collect();
        f.note("[kind] fails", &Err(message.join("\n").into()));
        let s = f.summary();
        assert!(s.starts_with("why 1 trial(s) failed"), "{s}");
        assert!(s.contains("  [kind] fails\n"), "{s}");
        assert!(!s.contains("passes"), "{s}");
        assert!(s.contains(&format!("    {} …\n", "x".repeat(WIDTH))), "{s}");
        assert!(s.contains(&format!("line {}", LINES - 1)), "{s}");
        assert!(!s.contains(&format!("line {LINES}\n")), "{s}");
        assert!(s.ends_with("    … 3 more line(s)\n"), "{s}");
    }
}
