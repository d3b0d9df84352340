//! Real run sets of the Thor smoke, committed under suites/thor/seeded/
//! (result.json of `bench thor --out`), judged again against the recorded
//! baseline (baselines/local/1.37/smoke.json) — through `bench thor --from
//! DIR --compare --counts-only`, and, for the runs of a machine the
//! baseline's band never saw (`held-out/`), through the library with that
//! machine left out of the band: a change of the rule, the metric
//! declarations or the baseline that stops catching a seeded regression,
//! or that calls unchanged code different, fails here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::bench::core::baseline::{self, Baseline};
use harness::bench::core::metric::{self, Drive, MetricKind, Spec, spec_of};
use harness::bench::core::report::compare as report;
use harness::bench::core::result::Run;
use harness::bench::core::verdict::compare as verdict;
use harness::bench::core::verdict::model::{Comparison, Reason, Unjudgeable};
use harness::bench::core::verdict::place::Place;
use harness::bench::core::verdict::scale::Scale;
use harness::bench::core::verdict::{band, place};
use harness::bench::thor::result::{ModeResult, ThorResult};
use harness::stats;

fn root() -> PathBuf {
    harness::paths::repo_root(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("repo root")
}

/// `bench thor --from suites/thor/seeded/<set> --compare --counts-only`,
/// with the `--set`s the set ran with.
fn judge(set: &str, sets: &[&str]) -> (i32, String) {
    judge_dir(&root().join(format!("suites/thor/seeded/{set}")), sets).0
}

/// `bench thor --from DIR --compare --counts-only`: the exit code and
/// what it printed, and compare-summary.md.
fn judge_dir(dir: &Path, sets: &[&str]) -> ((i32, String), String) {
    let out = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.current_dir(root()).env("HARNESS_NO_PROGRESS", "1").args([
        "bench",
        "thor",
        "--scenario",
        "suites/thor/smoke.yaml",
    ]);
    for s in sets {
        c.args(["--set", s]);
    }
    c.arg("--from")
        .arg(dir)
        .args(["--compare", "--counts-only", "--out"])
        .arg(out.path());
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("run harness");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    let summary =
        std::fs::read_to_string(out.path().join("compare-summary.md")).unwrap_or_default();
    ((status.code().unwrap_or(-1), text), summary)
}

/// The regressed rows of the compare table ("| mode | metric | baseline |
/// now | **REGRESSION** why |"), as "mode metric".
fn regressed(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with('|') && l.contains("**REGRESSION**"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 3).then(|| format!("{} {}", cells[1], cells[2]))
        })
        .collect()
}

#[test]
fn unchanged_code_is_no_different_from_its_baseline() {
    // 3 rounds of the smoke as the scenario file has it (seed 11).
    let (code, text) = judge("unchanged", &[]);
    // 0, or 4 where a verdict off the recording machine was withheld.
    assert!(code == 0 || code == 4, "{code}: {text}");
    assert!(regressed(&text).is_empty(), "{text}");
    // And judged: exact counts, counts and bytes, and the calls against
    // the plan (58 rows on 2026-11-29), not only shown.
    let judged = text
        .lines()
        .filter(|l| l.starts_with('|') && l.contains(" | ok ") && !l.contains("not judged"))
        .count();
    assert!(judged >= 40, "only {judged} judged:\n{text}");
}

#[test]
fn a_headless_service_per_jobset_is_caught_by_name() {
    // The same 3 rounds with JobSet's DNS hostnames on: a headless Service
    // per JobSet, so more objects and writes in the JobSet modes only.
    let (code, text) = judge("dns-hostnames", &["jobset.enableDNSHostnames=true"]);
    assert_eq!(code, 1, "{text}");
    let rows = regressed(&text);
    assert!(
        rows.iter().any(|r| r.ends_with("objects_created.services")),
        "{rows:?}\n{text}"
    );
    assert!(
        rows.iter().all(|r| !r.starts_with("baseline ")),
        "baseline mode runs no JobSet: {rows:?}"
    );
}

/// The smoke's 5 rounds on the Intel machine of 2026-12-05 with two CPUs
/// kept busy beside them (`--load 2`): a machine whose other runs (idle
/// and loaded) the band holds.
const LOADED: &str = "suites/thor/seeded/loaded-other-machine";

#[test]
fn unchanged_code_on_a_loaded_machine_of_the_band_is_judged_and_no_different() {
    let ((code, text), summary) = judge_dir(&root().join(LOADED), &[]);
    assert!(regressed(&text).is_empty(), "{text}");
    // Judged against the machines the band holds (this one among them),
    // and the lease events per second of the window.
    let across = text
        .lines()
        .filter(|l| l.starts_with('|') && l.contains("a machine not seen yet may lie"))
        .count();
    assert!(
        across >= 50,
        "only {across} judged against the machines:\n{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("watch_events.leases.coordination.k8s.io")
                && l.contains("per second of the window")),
        "{text}"
    );
    // Exit 0, or 4 with what was withheld said in the summary.
    assert!(
        code == 0 || (code == 4 && summary.contains("Could not be judged here")),
        "{code}: {summary}"
    );
}

/// Runs of the smoke on a machine the committed band leaves out — each
/// `n1-*` one round, idle; `n3` three rounds — on 2026-12-07 (Intel
/// Xeon, its speed probe and boot in each result).
const HELD_OUT: &str = "suites/thor/seeded/held-out";

fn result(dir: &Path) -> ThorResult {
    let text = std::fs::read_to_string(dir.join("result.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The stored smoke baseline without the machine `r` ran on (when its
/// band holds it): the machine a user's run is on.
fn baseline_without(r: &ThorResult) -> Baseline {
    let b = baseline::load(&root().join("baselines/local/1.37/smoke.json")).unwrap();
    let boot = r
        .machine
        .as_ref()
        .and_then(|m| m.boot.clone())
        .expect("the run says its boot");
    let b = band::without_boot(&b, &boot).unwrap_or(b);
    assert!(
        !band::Machines::of(&b)
            .keys
            .contains(&format!("boot {boot}")),
        "the band still holds the held-out machine"
    );
    b
}

/// `r` judged against `b` as `bench thor --compare` judges it.
fn compared(b: &Baseline, r: &ThorResult) -> Comparison {
    let timing = place::machine_gate(b, r);
    assert!(
        timing.is_err(),
        "a held-out machine is not the baseline's: {timing:?}"
    );
    let at = Place {
        unlike: timing.clone().err(),
    };
    Comparison {
        baseline: "baselines/local/1.37/smoke.json".into(),
        verdicts: verdict::compare_at(b, r, &at),
        timing,
        machines: band::Machines::of(b).labels,
        counts_only: false,
        in_range: <ModeResult as Run>::IN_RANGE,
        request_totals: <ModeResult as Run>::REQUEST_TOTALS,
        here: <ModeResult as Run>::HERE,
    }
}

fn held_out_sets(prefix: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join(HELD_OUT))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    dirs.sort();
    dirs
}

/// Metrics of `r` that the rule of 2026-12-07 called regressed: against
/// its recorded runs raised to the highest run any machine of the band
/// showed (the range of the seen), Welch's t on the logs, the metric's
/// minimum effect and floor — for what the pace or the clock drives, as
/// on an unlike machine.
fn range_of_the_seen_flags(b: &Baseline, r: &ThorResult) -> Vec<String> {
    let specs: Vec<Spec> = <ModeResult as Run>::metrics()
        .iter()
        .map(|m| m.spec)
        .collect();
    let mut out = Vec::new();
    for (mode, metrics) in &b.modes {
        let Some(s) = r.modes.get(mode) else { continue };
        for (name, m) in metrics {
            let Some(spec) = spec_of(&specs, name) else {
                continue;
            };
            let drive = verdict::drive(&specs, name);
            if m.kind == MetricKind::Exact || drive == Drive::Workload || spec.kind.machine_bound()
            {
                continue;
            }
            let cur: Vec<(f64, f64)> = s
                .runs()
                .iter()
                .filter_map(|x| {
                    Some((
                        metric::value_of(&<ModeResult as Run>::metrics(), x, name)?,
                        x.run.wall_s,
                    ))
                })
                .collect();
            let scale = Scale::of(drive);
            let Ok((recorded, across)) = scale.stored(b, mode, m) else {
                continue;
            };
            if cur.is_empty() || recorded.is_empty() {
                continue;
            }
            let median = stats::median(&recorded);
            let highest = recorded
                .iter()
                .chain(&across)
                .copied()
                .fold(f64::MIN, f64::max);
            if median <= 0.0 {
                continue;
            }
            let up = (highest / median - 1.0).max(0.0);
            let raised: Vec<f64> = recorded.iter().map(|x| x * (1.0 + up)).collect();
            let mut rule = spec.rule();
            rule.floor = scale.floor(rule.floor, b, mode);
            if stats::judge(&raised, &scale.run(&cur), false, rule)
                .is_some_and(|j| j.verdict == stats::Direction::Higher)
            {
                out.push(format!("{mode} {name}"));
            }
        }
    }
    out
}

#[test]
fn unchanged_runs_of_a_machine_the_band_never_saw_pass_where_the_range_of_the_seen_failed() {
    let sets = held_out_sets("n1-");
    assert!(sets.len() >= 4, "{sets:?}");
    let mut flagged_before = 0;
    for dir in &sets {
        let r = result(dir);
        let b = baseline_without(&r);
        let before = range_of_the_seen_flags(&b, &r);
        if !before.is_empty() {
            flagged_before += 1;
            eprintln!(
                "{}: the range of the seen called {before:?} regressed",
                dir.display()
            );
        }
        let c = compared(&b, &r);
        let failed = c.regressions();
        assert!(
            failed.is_empty(),
            "{}:\n{}",
            dir.display(),
            failed.join("\n")
        );
        // Judged, not all withheld: every count the workload fixes, and
        // more.
        let judged = c
            .verdicts
            .iter()
            .filter(|v| v.kind != MetricKind::Latency && v.judged_here())
            .count();
        assert!(
            judged >= 100,
            "{}: only {judged} counts judged",
            dir.display()
        );
    }
    // The premise: unchanged runs the range of the seen called regressed.
    assert!(
        flagged_before >= 1,
        "none of {} runs was flagged by the range of the seen",
        sets.len()
    );
}

/// `r` with a controller fault seeded in its JobSet modes: `client`
/// makes `extra` more `request`s ("verb resource") in every run; a write
/// is an etcd put too.
fn seeded(r: &ThorResult, client: &str, request: &str, extra: u64) -> ThorResult {
    let mut r = r.clone();
    let write = ["update", "patch", "create", "delete"]
        .iter()
        .any(|v| request.starts_with(v));
    for (mode, s) in r.modes.iter_mut() {
        if mode == "baseline" {
            continue;
        }
        for run in std::iter::once(&mut s.result).chain(s.repeats.iter_mut()) {
            let w = &mut run.run.window;
            w.api_requests_total += extra;
            *w.api_requests.entry(request.into()).or_default() += extra;
            *w.api_requests_by_client.entry(client.into()).or_default() += extra;
            *w.api_requests_by_client_request
                .entry(client.into())
                .or_default()
                .entry(request.into())
                .or_default() += extra;
            if write {
                w.etcd_writes_total += extra;
                w.etcd.puts += extra;
            }
        }
    }
    r
}

/// The three faults of 2026-12-05, about +15 % of the requests of
/// everyone but HPCC (~230 a run in the JobSet modes), 35 a run: a
/// re-list loop, a lost informer cache (gets instead of cache reads),
/// extra status writes.
const FAULTS: [(&str, &str); 3] = [
    ("jobset-controller", "list jobsets"),
    (
        "system:serviceaccount:kube-system:job-controller",
        "get jobs",
    ),
    ("jobset-controller", "update jobsets/status"),
];

/// `c` regressed on the fault of `client`'s `request`, in the JobSet
/// modes only, and its summary names both.
fn caught_and_named(c: &Comparison, client: &str, request: &str) {
    let summary = report::summary(c);
    assert_eq!(c.exit_code(), 1, "{client} {request}:\n{summary}");
    let rows: Vec<String> = c
        .verdicts
        .iter()
        .filter(|v| !v.pass())
        .map(|v| format!("{} {}", v.mode, v.metric))
        .collect();
    assert!(
        rows.iter().all(|r| !r.starts_with("baseline ")),
        "the fault is in the JobSet modes only: {rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.ends_with(&format!("api_requests_by_client.{client}"))
                || r.ends_with(&format!(
                    "api_requests_by_client_request.{client}: {request}"
                ))),
        "{client} {request}: {rows:?}\n{summary}"
    );
    assert!(
        summary.contains(request) && summary.contains(client),
        "{client} {request}:\n{summary}"
    );
}

#[test]
fn a_controller_fault_is_caught_and_named_on_a_machine_the_band_never_saw() {
    let r = result(&root().join(HELD_OUT).join("n3"));
    assert_eq!(r.modes["jobset"].runs().len(), 3);
    // The band without this machine: two machines.
    let b = baseline_without(&r);
    assert_eq!(band::Machines::of(&b).len(), 2);
    assert!(!compared(&b, &r).regressed(), "unchanged: no regression");
    for (client, request) in FAULTS {
        let c = compared(&b, &seeded(&r, client, request, 35));
        eprintln!(
            "seeded: {client} +35 {request} a run:\n{}",
            report::summary(&c)
        );
        if request.starts_with("update") {
            // Paced by nature (a controller's status writes coalesce):
            // from two machines what a new one may show is too wide to
            // see it, and that is said, with how many machines would do.
            assert_eq!(c.exit_code(), 4, "{}", report::summary(&c));
            let row = c
                .verdicts
                .iter()
                .find(|v| v.mode == "jobset" && v.metric == "etcd_writes_total")
                .unwrap();
            assert!(
                matches!(
                    &row.reason,
                    Reason::Withheld {
                        why: Unjudgeable::TooWide {
                            needed: Some(_),
                            ..
                        },
                        ..
                    }
                ),
                "{row:?}"
            );
            continue;
        }
        // A request class no run of any machine made: new behaviour.
        caught_and_named(&c, client, request);
    }
}

#[test]
fn with_a_third_machine_in_the_band_extra_status_writes_are_caught_and_named() {
    // The same runs judged against the committed band, which holds this
    // machine's other runs (idle and loaded) beside the two others: three
    // machines.
    let r = result(&root().join(HELD_OUT).join("n3"));
    let b = baseline::load(&root().join("baselines/local/1.37/smoke.json")).unwrap();
    assert!(band::Machines::of(&b).len() >= 3);
    for (client, request) in FAULTS {
        let c = compared(&b, &seeded(&r, client, request, 35));
        eprintln!(
            "seeded, three machines: {client} +35 {request}:\n{}",
            report::summary(&c)
        );
        caught_and_named(&c, client, request);
    }
}
