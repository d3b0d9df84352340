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

/// Resolves on SIGINT or SIGTERM, naming the signal.
pub async fn interrupted() -> &'static str {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "interrupted";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted",
        _ = term.recv() => "terminated",
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

/// For test binaries, whose trials run on threads of their own: on SIGINT
/// or SIGTERM, print `what`, run `teardown`, and exit with 130 (SIGINT) or
/// 143 (SIGTERM). Installed once per process.
pub fn exit_on_interrupt(what: String, teardown: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let sig = rt.block_on(interrupted());
        eprintln!("{sig}: {what}");
        teardown();
        std::process::exit(exit_code_of(sig));
    });
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
