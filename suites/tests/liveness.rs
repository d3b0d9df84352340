//! `cargo test -p suites --test liveness [FILTER]`: the liveness suite alone
//! (`suites::suite::liveness`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::liveness::suite])
}
