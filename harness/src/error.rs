//! Error kinds that map to the CLI's exit codes (the book:
//! docs/src/troubleshooting.md, "Exit codes"): 0 ok, 1 a check or comparison failed, 2 bad input or usage,
//! 3 the environment is missing something, 4 a comparison could not
//! judge everything on this machine (nothing regressed).
//!
//! Errors travel as `anyhow::Error`; the kinds below are markers placed at
//! the root of a chain so that `exit_code` can find them under any context.

use std::fmt;

/// Something the environment lacks: a binary, a toolchain, a daemon.
/// `fix` says exactly what to install or which variable to set.
#[derive(Debug)]
pub struct EnvMissing {
    pub what: String,
    pub fix: String,
}

impl fmt::Display for EnvMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\n  to fix: {}", self.what, self.fix)
    }
}

impl std::error::Error for EnvMissing {}

/// Input the user gave us that cannot be used: a flag, a file, a name.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

pub fn env_missing(what: impl Into<String>, fix: impl Into<String>) -> anyhow::Error {
    EnvMissing {
        what: what.into(),
        fix: fix.into(),
    }
    .into()
}

pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    BadInput(msg.into()).into()
}

pub const EXIT_FAILED: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_ENV: i32 = 3;
/// A comparison that found no regression but could not judge everything
/// it was asked to on this machine (`bench::core::policy::Comparison`).
pub const EXIT_UNJUDGED: i32 = 4;

/// The exit code for an error: the first marker found in its chain wins.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if cause.downcast_ref::<EnvMissing>().is_some() {
            return EXIT_ENV;
        }
        if cause.downcast_ref::<BadInput>().is_some() {
            return EXIT_USAGE;
        }
    }
    EXIT_FAILED
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn exit_codes_survive_context() {
        let e: anyhow::Result<()> = Err(env_missing("go not found", "install Go"));
        let e = e.context("building kube-apiserver").unwrap_err();
        assert_eq!(exit_code(&e), EXIT_ENV);
        let e: anyhow::Result<()> = Err(bad_input("bad flag"));
        let e = e.context("parsing").context("outer").unwrap_err();
        assert_eq!(exit_code(&e), EXIT_USAGE);
        assert_eq!(exit_code(&anyhow::anyhow!("plain")), EXIT_FAILED);
        assert!(format!("{e:#}").contains("bad flag"));
    }
}
