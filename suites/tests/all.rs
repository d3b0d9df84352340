//! Every suite, at once (`crate::runner`): what `cargo test --workspace`
//! runs. The quiet tests (the Thor smoke, the existing-cluster smoke, the
//! gang latency cases) run first, alone (a latency case whose release
//! must first be built runs last); then the builds of what the tests need
//! and this machine lacks (`suites::builds`), in the order of the first
//! test that needs each; then the rest, longest chains first:
//! the kind lanes (each minor's shared cluster, and the fresh clusters'
//! bench and measure — the run's longest chains: listed last they made a
//! 22 min run, their lane starting at 8 min 20 s), the real node's lane
//! (listed last, on a fresh machine it started at 19 min 19 s and ran to
//! the end, 5 min 38 s), the existing-cluster, faults and kubectl lanes,
//! contention, the Kueue, batch and gang suites, the short ones.
//! `cargo test -p suites --test all -- '[gang]'` runs one suite's trials;
//! `tests/<suite>.rs` runs one suite alone. The ECL suite needs a kind
//! cluster with HPCC and stays `tests/ecl.rs`.

use suites::suite;

fn main() {
    suites::runner::main(&[
        suite::thor::suite,
        suite::kind::suite,
        suite::realnode::suite,
        suite::existing::suite,
        suite::faults::suite,
        suite::kubectl::suite,
        suite::contention::suite,
        suite::kueue::suite,
        suite::batch::suite,
        suite::gang::suite,
        suite::kubelet::suite,
        suite::local::suite,
        suite::logs::suite,
        suite::measure::suite,
        suite::image::suite,
    ])
}
