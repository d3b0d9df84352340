//! `cargo test -p suites --test measure [FILTER]`: the measure suite alone
//! (`suites::suite::measure`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::measure::suite])
}
