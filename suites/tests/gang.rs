//! `cargo test -p suites --test gang [FILTER]`: the gang suite alone
//! (`suites::suite::gang`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::gang::suite])
}
