//! `cargo test -p suites --test local [FILTER]`: the local suite alone
//! (`suites::suite::local`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::local::suite])
}
