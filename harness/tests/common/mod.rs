//! Helpers shared by the integration tests (cli.rs, kind.rs, validate.rs).

#![allow(dead_code)] // each test binary uses its own subset

pub mod capped;

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository these tests belong to.
pub fn repo_root() -> PathBuf {
    harness::paths::repo_root(Path::new(env!("CARGO_MANIFEST_DIR")))
        .expect("harness/ sits inside the repository")
}

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

/// Every Rust source file under `dir`, sorted.
pub fn rust_sources(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}
