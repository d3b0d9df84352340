//! Progress display for long steps. On a terminal it is an indicatif
//! spinner with elapsed time; elsewhere (CI logs, test output) it prints one
//! line when a step starts and one when it ends, so logs show durations.
//! Steps may run at once (builds side by side, `tools::side_by_side`):
//! their spinners share one [`MultiProgress`], each on its own line, and a
//! line said through [`say`] prints above them.

use std::io::IsTerminal;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// Every spinner on screen.
static SPINNERS: LazyLock<MultiProgress> = LazyLock::new(MultiProgress::new);

/// Print a line on stderr, above the spinners when any show.
pub fn say(line: &str) {
    SPINNERS.suspend(|| eprintln!("{line}"));
}

pub struct Step {
    bar: Option<ProgressBar>,
    label: String,
    started: Instant,
}

impl Step {
    pub fn start(label: impl Into<String>) -> Step {
        let label = label.into();
        let bar = if std::io::stderr().is_terminal()
            && std::env::var_os("HARNESS_NO_PROGRESS").is_none()
        {
            let bar = SPINNERS.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(label.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            Some(bar)
        } else {
            say(&format!("harness: {label} …"));
            None
        };
        Step {
            bar,
            label,
            started: Instant::now(),
        }
    }

    /// Replace the message (e.g. with the last line of a build log).
    pub fn update(&self, detail: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} — {}", self.label, detail));
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn done(self, outcome: &str) -> Duration {
        let took = self.started.elapsed();
        let line = format!("{}: {outcome} ({:.1} s)", self.label, took.as_secs_f64());
        match &self.bar {
            Some(bar) => bar.finish_with_message(line),
            None => say(&format!("harness: {line}")),
        }
        took
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar
            && !bar.is_finished()
        {
            bar.abandon();
        }
    }
}
