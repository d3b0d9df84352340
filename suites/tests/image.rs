//! `cargo test -p suites --test image`: the image suite alone
//! (`suites::suite::image`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::image::suite])
}
