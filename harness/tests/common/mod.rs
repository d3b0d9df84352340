//! Helpers shared by the binary-level tests (cli.rs, kind.rs).

use std::process::Output;

/// Exit code, stdout and stderr of a run, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Assert the exit code; the run's text, for further checks.
pub fn assert_code(o: &Output, code: i32) -> String {
    let t = text(o);
    assert_eq!(o.status.code(), Some(code), "{t}");
    t
}
