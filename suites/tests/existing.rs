//! `cargo test -p suites --test existing [FILTER]`: the existing suite alone
//! (`suites::suite::existing`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::existing::suite])
}
