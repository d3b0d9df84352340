//! `cargo test -p suites --test kubelet [FILTER]`: the kubelet suite alone
//! (`suites::suite::kubelet`); `tests/all.rs` runs it with the others.

fn main() {
    suites::runner::main(&[suites::suite::kubelet::suite])
}
