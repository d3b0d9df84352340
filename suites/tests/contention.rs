//! `cargo test -p suites --test contention [FILTER]`: the contention suite alone
//! (`suites::suite::contention`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::contention::suite])
}
