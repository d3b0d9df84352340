//! What is committed stays readable and renders the same: every result
//! the repository keeps (the book's recorded runs, suites/measure/results)
//! is read back by `harness report render` and gives exactly its committed
//! report.md; every stored baseline is read back and written again to the
//! byte. A change of the result model or of a renderer that alters what
//! users read fails here; a deliberate one regenerates the reports
//! (`HARNESS_UPDATE_REPORTS=1 cargo test -p harness --test rerender`) and
//! says why in its commit.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every committed result.json under `dirs` of the repository.
fn results(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo: Vec<PathBuf> = ["docs/src", "suites/measure/results"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.file_name().is_some_and(|n| {
                n == "result.json" || n == "cron-load.json" || n == "gang-latency.json"
            }) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether `file` holds a result `report render` knows (a Thor or a
/// measure result; other benchmarks keep other files).
fn renderable(file: &Path) -> bool {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read result")).expect("JSON");
    matches!(
        v["schema"].as_str(),
        Some(
            "harness.thor-result/v1"
                | "harness.measure-result/v1"
                | "harness.cron-load/v1"
                | "harness.cron-load/v2"
                | "harness.gang-latency/v1"
                | "harness.gang-latency/v2"
        )
    )
}

#[test]
fn every_committed_result_renders_its_committed_report() {
    let root = common::repo_root();
    let update = std::env::var_os("HARNESS_UPDATE_REPORTS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    let mut seen = 0;
    for file in results(&root).into_iter().filter(|f| renderable(f)) {
        let dir = file.parent().expect("a result's dir");
        let out = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(["report", "render"])
            .arg(dir)
            .env("NO_COLOR", "1")
            .output()
            .expect("run the harness binary");
        common::assert_code(&out, 0);
        let rendered = String::from_utf8(out.stdout).expect("UTF-8 report");
        // Each benchmark's report beside its result.
        let committed = match file.file_name().and_then(|n| n.to_str()) {
            Some("cron-load.json") => dir.join("cron-load.md"),
            Some("gang-latency.json") => dir.join("gang-latency.md"),
            _ => dir.join("report.md"),
        };
        let was = std::fs::read_to_string(&committed).unwrap_or_default();
        seen += 1;
        if rendered != was {
            if update {
                std::fs::write(&committed, &rendered).expect("write report.md");
            }
            stale.push(format!(
                "{} ({} bytes rendered)",
                committed.display(),
                rendered.len()
            ));
        }
    }
    assert!(seen >= 10, "only {seen} committed results found");
    assert!(
        update || stale.is_empty(),
        "committed reports differ from what their result renders now (if meant, `HARNESS_UPDATE_REPORTS=1 cargo test -p harness --test rerender`, and say why in the commit):\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_stored_baseline_reads_back_and_writes_the_same() {
    let root = common::repo_root();
    let mut seen = 0;
    let mut todo = vec![root.join("baselines")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read baselines/") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                todo.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let b = harness::bench::core::baseline::load(&p)
                .unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            let again = serde_json::to_string_pretty(&b).expect("serialize") + "\n";
            let was = std::fs::read_to_string(&p).expect("read baseline");
            assert!(
                again == was,
                "{}: written again, it differs from the stored file",
                p.display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 3, "only {seen} stored baselines found");
}

/// The Thor benchmark's own metrics, which `measure` results written before
/// its runs had a type of their own kept as zeros.
const THOR_ONLY: &[&str] = &[
    "thor_agent_requests",
    "thor_agent_writes",
    "thor_agent_requests_predicted",
    "eclccserver_requests",
    "eclccserver_requests_predicted",
    "instance_start_ms.p99",
];

/// `figures` derived again from its runs, checked against what it stored.
fn derives_the_same<R: harness::bench::core::result::Run>(
    file: &Path,
    figures: harness::bench::core::result::Results<R>,
) {
    let mut again = figures.clone();
    for (mode, sum) in again.modes.iter_mut() {
        let fresh = harness::bench::core::result::summarize(sum.repeats.clone());
        let (mut stats, mut spread) = (sum.stats.clone(), sum.spread_pct.clone());
        if figures.schema == "harness.measure-figures/v1" {
            // `measure`'s runs carried the Thor benchmark's fields, zeroed,
            // until they had a type of their own: what it stored of them
            // is all zero, and no longer derived.
            for k in THOR_ONLY {
                assert!(
                    stats.remove(*k).is_none_or(|s| s.max == 0.0),
                    "{}: {mode}: {k}",
                    file.display()
                );
                assert!(spread.remove(*k).is_none_or(|p| p == 0.0));
            }
        }
        assert_eq!(fresh.stats, stats, "{}: {mode}: stats", file.display());
        assert_eq!(
            fresh.spread_pct,
            spread,
            "{}: {mode}: spread_pct",
            file.display()
        );
        *sum = fresh;
    }
    again.judge_modes();
    for (mode, sum) in &again.modes {
        assert_eq!(
            sum.vs_reference,
            figures.modes[mode].vs_reference,
            "{}: {mode}: vs_reference",
            file.display()
        );
    }
}

/// The figures a result derives from its runs (each mode's typical run,
/// spreads, per-metric statistics and ratios to the reference) computed
/// again from the runs it keeps: what the metric declarations derive must
/// not move under a redesign.
#[test]
fn every_committed_result_derives_the_same_figures_from_its_runs() {
    let root = common::repo_root();
    let mut seen = 0;
    for file in results(&root).into_iter().filter(|f| renderable(f)) {
        let dir = file.parent().expect("a result's dir");
        match harness::bench::saved::read(dir, "test").expect("read") {
            harness::bench::saved::Saved::Thor(r) => derives_the_same(&file, *r),
            harness::bench::saved::Saved::Measure(r) => derives_the_same(&file, r.figures),
            harness::bench::saved::Saved::Cron(r) => derives_the_same(&file, *r),
            harness::bench::saved::Saved::Gang(r) => derives_the_same(&file, *r),
        }
        seen += 1;
    }
    assert!(seen >= 9);
}
