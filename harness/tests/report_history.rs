//! `harness report history DIR…` end to end: result directories in, the
//! change points printed and history.md/html/json written; bad input is
//! exit code 2 naming the file.

use std::path::Path;
use std::process::Command;

use harness::bench::core::result::summarize;
use harness::bench::thor::result::{ModeResult, ThorResult};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.env("HARNESS_NO_PROGRESS", "1");
    c
}

/// A result whose jobset mode's etcd writes are `writes` in each of 3
/// runs (baseline's fixed).
fn result(started: &str, writes: u64) -> ThorResult {
    let mode = |name: &str, w: u64| {
        let mut m = ModeResult {
            instances: 2,
            ..Default::default()
        };
        m.run.mode = name.into();
        m.run.window.etcd_writes_total = w;
        summarize(vec![m.clone(), m.clone(), m])
    };
    ThorResult {
        schema: harness::bench::thor::result::RESULT_SCHEMA.into(),
        scenario: "smoke".into(),
        scenario_file: "suites/thor/smoke.yaml".into(),
        provider: "local".into(),
        k8s_version: "1.37.1".into(),
        harness_version: "0".into(),
        started: started.into(),
        shape: harness::bench::thor::result::ThorShape {
            num_workers: 2,
            num_workers_per_pod: 1,
            max_graphs: 2,
            graph_duration: "3s".into(),
        },
        model: Default::default(),
        modes: [
            ("baseline".to_string(), mode("baseline", 200)),
            ("jobset".to_string(), mode("jobset", writes)),
        ]
        .into_iter()
        .collect(),
        harness_peak_rss_kib: 0,
        capabilities: None,
        machine: None,
        timelines: Vec::new(),
        statistics: None,
    }
}

fn write(dir: &Path, r: &ThorResult) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("result.json"), serde_json::to_string(r).unwrap()).unwrap();
}

#[test]
fn a_series_of_results_gets_its_change_point_marked() {
    let tmp = tempfile::tempdir().unwrap();
    // Eight results; jobset's etcd writes step from ~300 to ~360 at the 5th.
    let writes = [301, 298, 303, 299, 362, 358, 361, 359];
    let mut args: Vec<String> = vec!["report".into(), "history".into()];
    for (i, w) in writes.iter().enumerate() {
        let d = tmp.path().join(format!("r{i}"));
        write(&d, &result(&format!("2026-11-{:02}T00:00:00Z", 10 + i), *w));
        args.push(d.display().to_string());
    }
    let out_dir = tmp.path().join("out");
    args.extend(["--out".into(), out_dir.display().to_string()]);
    let out = bin().args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("jobset etcd_writes_total: change at 5"),
        "{stdout}"
    );
    assert_eq!(stdout.matches(": change at").count(), 1, "{stdout}");
    let md = std::fs::read_to_string(out_dir.join("history.md")).unwrap();
    assert!(md.contains("binary segmentation by CUSUM"), "{md}");
    let html = std::fs::read_to_string(out_dir.join("history.html")).unwrap();
    assert_eq!(html.matches("class=\"change\"").count(), 1);
    assert!(out_dir.join("history.json").is_file());

    // One result is no series; a missing directory is named: both exit 2.
    let one = bin()
        .args(["report", "history", &args[2]])
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(2));
    let missing = tmp.path().join("missing");
    let bad = bin()
        .args([
            "report",
            "history",
            &args[2],
            &missing.display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("missing/result.json"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
