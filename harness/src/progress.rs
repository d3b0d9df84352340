//! Progress display for long steps. On a terminal it is an indicatif
//! spinner with elapsed time; elsewhere (CI logs, test output) it prints one
//! line when a step starts and one when it ends, so logs show durations.
//! Steps may run at once (two builds): one spinner shows at a time, and
//! the others' lines, like every line said through [`say`], are printed
//! above it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// The spinner on screen, if any, and the number of its step.
static SHOWN: Mutex<Option<(u64, ProgressBar)>> = Mutex::new(None);
static STEPS: AtomicU64 = AtomicU64::new(0);

fn shown() -> MutexGuard<'static, Option<(u64, ProgressBar)>> {
    SHOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Print a line on stderr, above the spinner when one shows.
pub fn say(line: &str) {
    match shown().as_ref() {
        Some((_, bar)) => bar.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

pub struct Step {
    bar: Option<ProgressBar>,
    id: u64,
    label: String,
    started: Instant,
}

impl Step {
    pub fn start(label: impl Into<String>) -> Step {
        let label = label.into();
        let id = STEPS.fetch_add(1, Ordering::Relaxed);
        let mut on_screen = shown();
        let bar = if std::io::stderr().is_terminal()
            && std::env::var_os("HARNESS_NO_PROGRESS").is_none()
            && on_screen.is_none()
        {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_message(label.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            *on_screen = Some((id, bar.clone()));
            Some(bar)
        } else {
            drop(on_screen);
            say(&format!("harness: {label} …"));
            None
        };
        Step {
            bar,
            id,
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
            Some(bar) => {
                bar.finish_with_message(line);
                off_screen(self.id);
            }
            None => say(&format!("harness: {line}")),
        }
        took
    }
}

/// Step `id`'s spinner no longer shows: the next step may show its own.
fn off_screen(id: u64) {
    let mut on_screen = shown();
    if on_screen.as_ref().is_some_and(|(shown, _)| *shown == id) {
        *on_screen = None;
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            if !bar.is_finished() {
                bar.abandon();
            }
            off_screen(self.id);
        }
    }
}
