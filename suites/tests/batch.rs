//! `cargo test -p suites --test batch [FILTER]`: the batch suite alone
//! (`suites::suite::batch`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::batch::suite])
}
