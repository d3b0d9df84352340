use super::*;

const HEADER: &str = "# name: the main job\n# command: cargo run -p harness -- up\n# commit: 1234567\n# date: 2026-11-27\n# machine: 2 cores, 24 GiB\n";

const TIME_V: &str = "\tCommand being timed: \"cargo run\"\n\tUser time (seconds): 1000.25\n\tSystem time (seconds): 100.00\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 11:02.50\n\tMaximum resident set size (kbytes): 2621440\n\tExit status: 0\n";

#[test]
fn a_first_commands_log_gives_its_builds_and_the_rest() {
    let log = format!(
        "{HEADER}   Compiling harness v0.1.0\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2m 48s\n     Running `target/debug/harness up`\n\
         harness: building etcd v3.6.16 from go.etcd.io/etcd/server/v3@v3.6.16 with go1.26.8 …\n\
         harness: building etcd v3.6.16 from go.etcd.io/etcd/server/v3@v3.6.16 with go1.26.8: done, 20.5 s of it resolving modules (62.9 s)\n\
         harness: building kube-apiserver v1.37.1 from k8s.io/kubernetes@v1.37.1 with go1.26.8: done (201.0 s)\n\
         harness: waiting for nodes to be Ready: ready (0.0 s)\n{TIME_V}"
    );
    let c = parse(&log, "first.log").unwrap();
    assert_eq!(c.name, "the main job");
    assert_eq!(c.wall_s, 662.5);
    assert_eq!((c.exit, c.peak_rss_kib), (0, 2621440));
    let c_cpu = c.cpu_s;
    let got: Vec<(Kind, &str, f64)> = c
        .phases
        .iter()
        .map(|p| (p.kind, p.what.as_str(), p.seconds))
        .collect();
    assert_eq!(
        got,
        [
            (Kind::Cargo, "`dev` build", 168.0),
            (Kind::Build, "etcd v3.6.16", 62.9),
            (Kind::Build, "kube-apiserver v1.37.1", 201.0),
        ]
    );
    let md = markdown(&Record {
        schema: SCHEMA.into(),
        title: "t".into(),
        commands: vec![c],
    });
    // 662.5 − 168 − 263.9 = 230.6 s not in a phase.
    assert_eq!(c_cpu, 1100.25);
    assert!(
        md.contains("| **11 min 3 s** | 1.66 cores | 2.5 GB |"),
        "{md}"
    );
    assert!(
        md.contains("builds from Go modules 4 min 24 s: kube-apiserver v1.37.1 3 min 21 s, etcd v3.6.16 1 min 3 s; the rest 3 min 51 s"),
        "{md}"
    );
}

#[test]
fn builds_side_by_side_are_said_to_be() {
    let log = format!(
        "{HEADER}    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2m 0s\n\
         harness: building kube-apiserver v1.37.1 from k8s.io/kubernetes@v1.37.1 with go1.26.8: done (400.0 s)\n\
         harness: building etcd v3.6.16 from go.etcd.io/etcd/server/v3@v3.6.16 with go1.26.8: done (250.0 s)\n{TIME_V}"
    );
    let md = markdown(&Record {
        schema: SCHEMA.into(),
        title: "t".into(),
        commands: vec![parse(&log, "first.log").unwrap()],
    });
    // 120 + 650 s of phases in 662.5 s of wall.
    assert!(
        md.contains("builds from Go modules, side by side, 10 min 50 s of build time: kube-apiserver v1.37.1 6 min 40 s, etcd v3.6.16 4 min 10 s |"),
        "{md}"
    );
}

#[test]
fn test_binaries_run_from_running_to_their_result_and_hold_the_builds() {
    let log = format!(
        "{HEADER}    Finished `test` profile [unoptimized + debuginfo] target(s) in 21.68s\n     Running unittests src/lib.rs (target/debug/deps/harness-1)\n\
         test result: ok. 366 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 40.50s\n\
         \x20    Running tests/all.rs (target/debug/deps/all-2)\n\
         harness: building kueue-controller v0.19.2 from sigs.k8s.io/kueue@v0.19.2 with go1.26.8: done (150.0 s)\n\
         test result: FAILED. 174 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1393.54s\n{}",
        TIME_V
            .replace("11:02.50", "25:00")
            .replace("Exit status: 0", "Exit status: 101")
    );
    let c = parse(&log, "tests.log").unwrap();
    assert_eq!(c.exit, 101);
    let md = markdown(&Record {
        schema: SCHEMA.into(),
        title: "t".into(),
        commands: vec![c],
    });
    assert!(md.contains("**25 min 0 s** (exit 101)"), "{md}");
    assert!(
        md.contains("test binaries 23 min 54 s: tests/all.rs 23 min 14 s, src/lib.rs 41 s"),
        "{md}"
    );
    assert!(
        md.contains(
            "builds from Go modules, within the above: kueue-controller v0.19.2 2 min 30 s"
        ),
        "{md}"
    );
}

#[test]
fn ci_stamps_are_stages_up_to_the_next_stamp_or_the_end() {
    let log = format!(
        "{HEADER}[.ci/run +0s] toolchains\n[.ci/run +12s] cargo fmt --check\n[.ci/run +100s] tests\n{TIME_V}"
    );
    let c = parse(&log, "ci.log").unwrap();
    let stages: Vec<(&str, f64)> = c
        .phases
        .iter()
        .filter(|p| p.kind == Kind::Stage)
        .map(|p| (p.what.as_str(), p.seconds))
        .collect();
    assert_eq!(
        stages,
        [
            ("toolchains", 12.0),
            ("cargo fmt --check", 88.0),
            ("tests", 562.5)
        ]
    );
}

#[test]
fn a_log_without_its_headers_or_times_report_is_refused_by_name() {
    let e = parse(TIME_V, "x.log").unwrap_err().to_string();
    assert!(e.contains("x.log: no `# name: …` header line"), "{e}");
    let e = parse(HEADER, "y.log").unwrap_err().to_string();
    assert!(e.contains("y.log: no wall clock time"), "{e}");
}

#[test]
fn durations_read_as_people_say_them() {
    assert_eq!(duration(48.4), "48 s");
    assert_eq!(duration(168.0), "2 min 48 s");
    assert_eq!(duration(3725.0), "1 h 2 min");
}
