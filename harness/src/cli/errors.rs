//! The one way every command says an error (the book:
//! docs/src/troubleshooting.md, "Exit codes"): `error: ` and the chain,
//! outermost context first, on stderr.

/// Print `e` as every command prints an error, without raw control
/// characters (values from files and flags travel in errors); its exit
/// code.
pub fn report(e: &anyhow::Error) -> i32 {
    eprintln!(
        "error: {}",
        harness::output::terminal_safe(&format!("{e:#}"))
    );
    harness::error::exit_code(e)
}
