//! The one way to be interrupted: run something until it finishes or
//! SIGINT/SIGTERM arrives; the caller then tears down what it started and
//! exits with `EXIT_INTERRUPTED`.

use std::future::Future;

/// The exit code after Ctrl-C or SIGTERM (128 + SIGINT), as shells report.
pub const EXIT_INTERRUPTED: i32 = 130;

/// The exit code after SIGTERM (128 + 15), for runners that tell the two
/// apart (the suite runner).
pub const EXIT_TERMINATED: i32 = 143;

/// The exit code for a signal `interrupted` named: 130 after SIGINT, 143
/// after SIGTERM.
pub fn exit_code_of(sig: &str) -> i32 {
    if sig == "terminated" {
        EXIT_TERMINATED
    } else {
        EXIT_INTERRUPTED
    }
}

/// What a raced future came to.
#[derive(Debug)]
pub enum Raced<T> {
    Finished(T),
    /// A signal arrived first ("interrupted" or "terminated"); the future
    /// was dropped.
    Interrupted(&'static str),
}

/// SIGINT and SIGTERM, listened for from the moment `listen` returns:
/// one that arrives after it is not lost, however late `next` is polled.
pub struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    /// Start listening (inside a Tokio runtime).
    pub fn listen() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next signal, named: "interrupted" (SIGINT) or "terminated".
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "interrupted",
            _ = self.term.recv() => "terminated",
        }
    }
}

/// Resolves on SIGINT or SIGTERM, naming the signal.
pub async fn interrupted() -> &'static str {
    match Signals::listen() {
        Ok(mut s) => s.next().await,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "interrupted"
        }
    }
}

/// How long `race` listens, after its future finished, for a signal that
/// arrived while the future was busy without yielding (a blocking
/// teardown): the signal driver only reads it when the runtime parks.
const LATE_SIGNAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Run `fut` until it finishes or a signal arrives (then `fut` is dropped,
/// which kills any child process it holds with `kill_on_drop`). A signal
/// that came in while `fut` was finishing still counts: Ctrl-C during a
/// final teardown is not lost.
pub async fn race<T>(fut: impl Future<Output = T>) -> Raced<T> {
    let sig = interrupted();
    tokio::pin!(sig);
    let v = tokio::select! {
        biased;
        sig = &mut sig => return Raced::Interrupted(sig),
        v = fut => v,
    };
    match tokio::time::timeout(LATE_SIGNAL, &mut sig).await {
        Ok(sig) => Raced::Interrupted(sig),
        Err(_) => Raced::Finished(v),
    }
}

/// How long `exit_on_interrupt` waits for its thread to listen.
const LISTENING_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// For test binaries, whose trials run on threads of their own: on SIGINT
/// or SIGTERM, print `what`, run `teardown` (given the signal's name), and
/// exit with 130 (SIGINT) or 143 (SIGTERM). Returns once the signals are
/// listened for, so that a signal sent as soon as a trial has started is
/// never the default action's (death without a teardown).
pub fn exit_on_interrupt(what: String, teardown: impl FnOnce(&'static str) + Send + 'static) {
    let (listening, ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let signals = {
            let _in = rt.enter();
            Signals::listen()
        };
        let _ = listening.send(());
        let sig = match signals {
            Ok(mut s) => rt.block_on(s.next()),
            Err(_) => rt.block_on(interrupted()),
        };
        eprintln!("{sig}: {what}");
        teardown(sig);
        std::process::exit(exit_code_of(sig));
    });
    let _ = ready.recv_timeout(LISTENING_WITHIN);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_tell_the_signals_apart() {
        assert_eq!(exit_code_of("interrupted"), 130);
        assert_eq!(exit_code_of("terminated"), 143);
    }

    #[tokio::test]
    async fn a_finished_future_wins() {
        match race(async { 5 }).await {
            Raced::Finished(v) => assert_eq!(v, 5),
            Raced::Interrupted(s) => panic!("interrupted by {s}"),
        }
    }
}
