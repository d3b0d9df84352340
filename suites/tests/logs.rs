//! `cargo test -p suites --test logs [FILTER]`: the logs suite alone
//! (`suites::suite::logs`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::logs::suite])
}
