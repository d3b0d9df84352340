//! `cargo test -p suites --test faults [FILTER]`: the faults suite alone
//! (`suites::suite::faults`, through the `harness` binary: build it first
//! with `cargo build -p harness`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::faults::suite])
}
