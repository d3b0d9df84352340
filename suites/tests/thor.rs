//! `cargo test -p suites --test thor [FILTER]`: the thor suite alone
//! (`suites::suite::thor`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::thor::suite])
}
