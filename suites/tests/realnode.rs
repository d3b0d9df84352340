//! `cargo test -p suites --test realnode [FILTER]`: the real-node suite
//! alone (`suites::suite::realnode`); `tests/all.rs` runs it with the
//! others.

fn main() {
    suites::runner::main(&[suites::suite::realnode::suite])
}
