//! Benchmarks: the core every benchmark shares (`core`: metrics declared
//! once, rounds, the Result, baselines, compare, renderers), and the
//! workloads — the Thor lifecycle per mode (`thor`), any workload in the
//! same window (`measure`), gang placement latency (`gang`) and scheduled
//! jobs at scale (`cron`). Each prints figures and writes its reports;
//! none runs inside `cargo test` (the suites keep small smoke runs of
//! each). `saved` reads any saved result back by its schema, `recorded`
//! tells a stored baseline's workload.

pub mod core;
pub mod cron;
pub mod gang;
pub mod measure;
pub mod merge;
pub mod on_cluster;
pub mod recorded;
pub mod saved;
pub mod thor;

#[cfg(test)]
mod tests {
    use crate::bench::core::metric::{Driver, Spec};

    /// Every workload's metric declarations.
    fn every_spec() -> Vec<(&'static str, Spec)> {
        let mut all: Vec<(&'static str, Spec)> = Vec::new();
        all.extend(
            crate::bench::thor::metrics::metrics()
                .into_iter()
                .map(|m| ("thor", m.spec)),
        );
        all.extend(
            crate::bench::measure::result::metrics()
                .into_iter()
                .map(|m| ("measure", m.spec)),
        );
        all.extend(
            crate::bench::gang::result::metrics()
                .into_iter()
                .map(|m| ("gang", m.spec)),
        );
        all.extend(
            crate::bench::cron::result::metrics()
                .into_iter()
                .map(|m| ("cron", m.spec)),
        );
        all
    }

    /// What drives a metric decides how a stored baseline judges it on
    /// another machine (bench::core::across): none may go undeclared.
    #[test]
    fn every_metric_declares_what_drives_it() {
        let all = every_spec();
        assert!(all.len() > 40, "{}", all.len());
        let undeclared: Vec<String> = all
            .iter()
            .filter(|(_, s)| s.driver == Driver::Undeclared)
            .map(|(w, s)| format!("{w}: {}", s.key))
            .collect();
        assert!(undeclared.is_empty(), "no driver declared: {undeclared:?}");
        // And the check sees one that is not.
        let bare = Spec::new("x", "x", "requests");
        assert_eq!(bare.driver, Driver::Undeclared);
        assert_eq!(bare.drive_of("x"), None);
    }
}
