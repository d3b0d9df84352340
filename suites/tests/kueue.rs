//! `cargo test -p suites --test kueue [FILTER]`: the kueue suite alone
//! (`suites::suite::kueue`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::kueue::suite])
}
