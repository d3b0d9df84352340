//! `cargo test -p suites --test kubectl [FILTER]`: the kubectl suite alone
//! (`suites::suite::kubectl`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::kubectl::suite])
}
