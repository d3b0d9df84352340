//! `cargo test -p suites --test kind [FILTER]`: the kind suite alone
//! (`suites::suite::kind`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::kind::suite])
}
