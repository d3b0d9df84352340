//! One way to run suites: each suite is a list of tests and what runs
//! after its last one (stop its clusters, write its reports); one binary
//! runs one suite (`cargo test -p suites --test gang`) or all of them at
//! once (`tests/all.rs`, the one `cargo test --workspace` runs).
//!
//! Tests wait on clusters far more than they use this machine's cores
//! (measured: 5–10 % of 2 cores while a suite runs), so the tests of every
//! suite share [`TEST_THREADS`] slots (`--test-threads`,
//! `$HARNESS_TEST_THREADS`), handed out in list order (`crate::slots`).
//! A test that measures something the machine's load would change
//! (latencies against a stored baseline, HPCC's polls that follow the
//! cluster's pace) is `quiet`: it runs with no other test at once, and
//! the quiet tests of every suite run first — but for those whose
//! binaries must first be built, which run last. A test whose figures
//! are judged against bands measured under load (the Thor smoke's,
//! against what the machines and loads its baseline holds allow: the
//! book's "Baselines and compare") is `paced`: it runs beside others once every build is done,
//! but never beside a `heavy` one (a kind cluster), since neither a build
//! nor a kind cluster leaves the load its bands were measured under. What the tests need
//! built (`Test::needs`) is built first, two binaries at a time, as trials
//! of their own (`crate::builds`); a test waits for its builds without
//! holding a slot. Tests
//! of one `serial` lane (one cluster measured at a time) run one after the
//! other, without holding a slot while they wait; a lane's closing test
//! runs after all its others (`crate::lane`). A test starts beside
//! others only while this user has inotify instances to spare for its
//! clusters (`inotify_room`): components that find none fail at start.
//!
//! Trials are shown and filtered as `[suite] name`; a suite's `after`
//! runs as soon as its last selected test is done, so its clusters stop
//! while the other suites go on, and at the latest when the run ends. An
//! `after` that fails fails the run (exit 101).
//!
//! SIGINT and SIGTERM are handled like the CLI's (`harness::signal`): no
//! test starts any more, the `after` of every suite a test of which had
//! started runs (stopping its clusters), then every cluster this process
//! made is stopped and its state dir removed, and the run exits 130
//! (SIGINT) or 143 (SIGTERM).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harness::cluster::ClusterSpec;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

use crate::builds::{self, Builds, Need};
use crate::failures::Failures;
use crate::lane::Lane;
use crate::slots::{Kind, Slots};
use crate::timing::{self, Timings};

/// How many tests run at once unless told otherwise.
pub const TEST_THREADS: usize = 8;

type Body = Box<dyn FnOnce() -> Result<(), Failed> + Send>;
type After = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// Where a test waits in line: the quiet tests (run with no other at
/// once) first, then the builds of what the tests need
/// (`crate::builds`), then the others, then the paced ones, then the
/// quiet tests whose binaries are not at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alone {
    First,
    Build,
    No,
    /// Beside others, once every build is done, never beside a heavy one:
    /// after the others in line, before the quiet ones that go last.
    Paced,
    /// What it runs must first be built. A build run alone would hold the
    /// run for its length (the gang suite's 1.36 latency case on a fresh
    /// machine: 4 of its 4 min 7 s were the 1.36 binaries' build, with
    /// nothing else running); run last, it finds them built.
    Last,
}

/// One test of a suite.
pub struct Test {
    name: String,
    alone: Alone,
    /// Keeps the machine's cores busy: no paced test beside it.
    heavy: bool,
    serial: Option<&'static str>,
    /// Its lane's last test (`crate::lane`).
    closes: bool,
    ignored: bool,
    /// What this machine lacks for the test: shown as ignored with it,
    /// never run.
    lacks: Option<String>,
    /// The binaries it runs (`crate::builds`).
    needs: Vec<Need>,
    body: Body,
}

impl Test {
    pub fn new(
        name: impl Into<String>,
        body: impl FnOnce() -> Result<(), Failed> + Send + 'static,
    ) -> Test {
        Test {
            name: name.into(),
            alone: Alone::No,
            heavy: false,
            serial: None,
            closes: false,
            ignored: false,
            lacks: None,
            needs: Vec::new(),
            body: Box::new(body),
        }
    }

    /// A test whose body returns anyhow's Result.
    pub fn of(name: &str, f: fn() -> anyhow::Result<()>) -> Test {
        Test::new(name, move || crate::trial_result(f()))
    }

    /// Runs with no other test at once.
    pub fn quiet(mut self) -> Test {
        self.alone = Alone::First;
        self
    }

    /// Runs beside others once every build of the run is done, but never
    /// beside a heavy test: its figures are judged against bands measured
    /// under load, not under a build's or a kind cluster's.
    pub fn paced(mut self) -> Test {
        self.alone = Alone::Paced;
        self
    }

    /// Keeps the machine's cores busy (a kind cluster): no paced test runs
    /// beside it.
    pub fn heavy(mut self) -> Test {
        self.heavy = true;
        self
    }

    /// Runs these binaries: those not at hand are built before it starts
    /// (`crate::builds`).
    pub fn needs(mut self, needs: impl IntoIterator<Item = Need>) -> Test {
        self.needs.extend(needs);
        self
    }

    /// Runs a local cluster of `spec`: every binary it starts.
    pub fn needs_cluster(self, spec: &ClusterSpec) -> Test {
        let needs = harness::lifecycle::tools_needed(spec)
            .map(|(k8s, cs)| cs.into_iter().map(|c| (k8s, c)).collect::<Vec<_>>())
            .unwrap_or_default();
        self.needs(needs)
    }

    /// Runs with no other test of `lane` at once (which of them goes first
    /// is not fixed, but for the lane's closing test). A quiet test runs
    /// alone, lane or not.
    pub fn serial(mut self, lane: &'static str) -> Test {
        self.serial = Some(lane);
        self
    }

    /// Of its lane, runs last: once every other selected test of the lane
    /// has ended, however (it tears down what they share).
    pub fn closes_lane(mut self) -> Test {
        self.closes = true;
        self
    }

    pub fn ignored(mut self, ignored: bool) -> Test {
        self.ignored = ignored;
        self
    }

    /// With `Some(what)`, the test cannot run on this machine: it is
    /// listed as ignored with `what` (libtest's ignore message), not run.
    pub fn lacking(mut self, what: Option<String>) -> Test {
        self.lacks = what;
        self
    }
}

/// A suite: its name (the trials' kind), its tests, and what runs after
/// the last of them.
pub struct Suite {
    pub name: &'static str,
    pub tests: Vec<Test>,
    pub after: After,
}

impl Suite {
    /// A suite with nothing to do after its tests.
    pub fn new(name: &'static str, tests: Vec<Test>) -> Suite {
        Suite {
            name,
            tests,
            after: Box::new(|| Ok(())),
        }
    }

    pub fn after(mut self, f: impl FnOnce() -> Result<(), String> + Send + 'static) -> Suite {
        self.after = Box::new(f);
        self
    }
}

/// How a suite is made, from the run's arguments.
pub type Make = fn(&Arguments) -> Suite;

/// The run's arguments, and how many tests run at once: `--test-threads`,
/// else `$HARNESS_TEST_THREADS`, else [`TEST_THREADS`]. A value that is
/// not a positive number is a usage error (exit 2).
fn arguments() -> (Arguments, usize) {
    let args = Arguments::from_args();
    let n = match args.test_threads {
        Some(n) => Ok(n),
        None => test_threads(std::env::var("HARNESS_TEST_THREADS").ok().as_deref()),
    };
    match n {
        Ok(n) => (args, n),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}

/// `HARNESS_TEST_THREADS`' value, or the default when unset.
fn test_threads(var: Option<&str>) -> std::result::Result<usize, String> {
    match var {
        None => Ok(TEST_THREADS),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "HARNESS_TEST_THREADS={v:?}: expected how many trials run at once (1, 2, …)"
            )),
        },
    }
}

/// The name libtest-mimic shows and filters: `[kind] name`.
pub fn shown(kind: &str, name: &str) -> String {
    format!("[{kind}] {name}")
}

/// Will libtest-mimic run this test with these arguments?
pub fn will_run(args: &Arguments, kind: &str, name: &str, ignored: bool) -> bool {
    if args.list {
        return false;
    }
    let full = shown(kind, name);
    let hit = |f: &str| {
        if args.exact {
            name == f || full == f
        } else {
            full.contains(f)
        }
    };
    if args.skip.iter().any(|s| hit(s)) || !args.filter.as_deref().is_none_or(hit) {
        return false;
    }
    if args.ignored {
        ignored
    } else {
        args.include_ignored || !ignored
    }
}

/// A suite's `after`, run once: by its last test, by the end of the run,
/// or on SIGINT/SIGTERM.
struct Ending {
    suite: &'static str,
    left: AtomicUsize,
    /// A test of the suite got its turn (its `after` has something to
    /// tear down).
    started: std::sync::atomic::AtomicBool,
    after: Mutex<Option<After>>,
    errors: Arc<Mutex<Vec<String>>>,
    timings: Arc<Timings>,
}

impl Ending {
    fn run(&self) {
        // Held while `after` runs: a signal's teardown that comes now
        // waits for it to finish instead of exiting under it.
        let mut slot = self.after.lock().unwrap_or_else(|e| e.into_inner());
        let Some(after) = slot.take() else {
            return;
        };
        let at = self.timings.now();
        let outcome = after();
        if self.started.load(Ordering::SeqCst) {
            self.timings.done(shown(self.suite, "after"), None, at);
        }
        if let Err(e) = outcome {
            eprintln!("error: after the {} suite: {e}", self.suite);
            if let Ok(mut errors) = self.errors.lock() {
                errors.push(format!("{}: {e}", self.suite));
            }
        }
    }

    fn one_done(&self) {
        if self.left.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.run();
        }
    }
}

/// Run these suites' tests, their `after`s, and exit.
pub fn main(suites: &[Make]) -> ! {
    let (mut args, n) = arguments();
    let slots = Arc::new(Slots::with_room(n, Box::new(inotify_room)));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Failures::default());
    let timings = Arc::new(Timings::default());
    let builds = Arc::new(Builds::default());
    let at_hand = builds::AtHand::default();
    let mut lanes: BTreeMap<&'static str, Arc<Lane>> = BTreeMap::new();
    let mut trials = Vec::new();
    let mut endings = Vec::new();
    // What the selected tests run, for the builds that come first.
    let mut needs: Vec<Need> = Vec::new();
    // The quiet tests the run starts with, waited for before any other.
    let mut firsts = 0;
    for make in suites {
        let suite = make(&args);
        let selected = suite
            .tests
            .iter()
            .filter(|t| t.lacks.is_none() && will_run(&args, suite.name, &t.name, t.ignored))
            .count();
        let ending = Arc::new(Ending {
            suite: suite.name,
            left: AtomicUsize::new(selected),
            started: std::sync::atomic::AtomicBool::new(false),
            after: Mutex::new(Some(suite.after)),
            errors: errors.clone(),
            timings: timings.clone(),
        });
        for t in suite.tests {
            if let Some(what) = t.lacks {
                trials.push(
                    Trial::ignorable_test(t.name, move || Ok(Completion::ignored_with(what)))
                        .with_kind(suite.name),
                );
                continue;
            }
            let counts = will_run(&args, suite.name, &t.name, t.ignored);
            if counts || (args.list && !t.ignored) {
                needs.extend(&t.needs);
            }
            let alone = match t.alone {
                Alone::First if !t.needs.iter().all(|&n| at_hand.get(n)) => Alone::Last,
                a => a,
            };
            // A quiet test runs with nothing else, so apart from its lane
            // too; holding the lane while it waits for its turn (last,
            // when it must first be built) would hold the lane's other
            // tests until the end of the run.
            let of_lane = t.serial.map(|l| lanes.entry(l).or_default().clone());
            // Every selected test of the lane, quiet or not, before its
            // closing one.
            if let Some(l) = of_lane.as_ref().filter(|_| counts && !t.closes) {
                l.expect();
            }
            let closes = t.closes;
            let quiet = matches!(alone, Alone::First | Alone::Last);
            let lane = of_lane.clone().filter(|_| !quiet);
            // Quiet tests go first, one after the other, before the others
            // start: placed among them, each would wait for every running
            // test to end. Those that would first build go last.
            let index = turn_order(trials.len(), alone);
            let first = alone == Alone::First;
            if first && counts {
                firsts += 1;
            }
            let kind = match alone {
                _ if quiet => Kind::Quiet,
                Alone::Paced => Kind::Paced,
                _ if t.heavy => Kind::Heavy,
                _ => Kind::Plain,
            };
            let paced = kind == Kind::Paced;
            let (body, lane_name) = (t.body, t.serial);
            let (ending, slots, timings) = (ending.clone(), slots.clone(), timings.clone());
            let (builds, needed, failures) = (builds.clone(), t.needs, failures.clone());
            let full = shown(suite.name, &t.name);
            trials.push(
                Trial::test(t.name, move || {
                    let _ends = of_lane
                        .as_ref()
                        .filter(|_| counts && !closes)
                        .map(|l| l.ends());
                    // Not holding its lane or a slot: others go on meanwhile.
                    builds.wait_for(&needed);
                    if paced {
                        builds.wait_for_all();
                    }
                    if let Some(l) = of_lane.as_ref().filter(|_| closes) {
                        l.wait_for_the_others();
                    }
                    let in_lane = lane.as_ref().map(|l| l.turn());
                    let Some(_turn) = slots.take(index, kind, first) else {
                        return Err("not started: the run was interrupted".into());
                    };
                    ending.started.store(true, Ordering::SeqCst);
                    let at = timings.now();
                    let outcome = body();
                    failures.note(&full, &outcome);
                    timings.done(full, lane_name, at);
                    drop(in_lane);
                    // The suite's `after` (stopping its clusters) keeps the
                    // turn: a quiet test does not start beside it.
                    if counts {
                        ending.one_done();
                    }
                    outcome
                })
                .with_kind(suite.name)
                .with_ignored_flag(t.ignored),
            );
        }
        endings.push(ending);
    }
    for (binary, need) in builds::plan(&needs, |n| at_hand.get(n)) {
        let name = builds::trial_name(&binary);
        if will_run(&args, BUILD, &name, false) {
            builds.expect(need);
        } else if !args.list {
            continue;
        }
        let index = turn_order(trials.len(), Alone::Build);
        let (builds, slots, timings) = (builds.clone(), slots.clone(), timings.clone());
        let full = shown(BUILD, &name);
        trials.push(
            Trial::test(name, move || {
                // Said to the tests that wait for it however this ends.
                let _done = builds.done_on_drop(binary.clone());
                builds.wait_turn(&binary);
                let Some(_turn) = slots.take_without_room(index) else {
                    return Err("not started: the run was interrupted".into());
                };
                let at = timings.now();
                let outcome = crate::trial_result(builds::build(need));
                timings.done(full, Some(BUILD), at);
                outcome
            })
            .with_kind(BUILD),
        );
    }
    slots.first_asked_by(firsts);
    on_signal_tear_down(slots.clone(), endings.clone());
    // Every test waits in its own thread; the slots say how many run.
    args.test_threads = Some(trials.len().max(1));
    let conclusion = libtest_mimic::run(&args, trials);
    for e in &endings {
        e.run();
    }
    eprint!("{}", timings.summary());
    if !args.list {
        timings.write_report(&timing_report_path());
    }
    eprint!("{}", failures.summary());
    // What a failed trial left (a half-made cluster dir, its processes)
    // does not outlive the run either (issue 30).
    crate::abandon_all();
    let failed = errors.lock().map(|e| !e.is_empty()).unwrap_or(true);
    if failed {
        std::process::exit(101);
    }
    conclusion.exit()
}

/// Where this test binary's timing report goes (`timing::report_path`).
fn timing_report_path() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().and_then(|s| s.to_str()).unwrap_or("suites");
    timing::report_path(std::env::var_os("REPORTS"), timing::binary_name(stem))
}

/// The builds' trials' kind and lane: `[build] kube-apiserver v1.36.4`,
/// [`builds::AT_ONCE`] at a time.
const BUILD: &str = "build";

/// Where the test listed at `position` waits in line (`Slots::take`):
/// by [`Alone`], then in list order.
fn turn_order(position: usize, alone: Alone) -> usize {
    position
        + match alone {
            Alone::First => 0,
            Alone::Build => 1 << 32,
            Alone::No => 2 << 32,
            Alone::Paced => 3 << 32,
            Alone::Last => 4 << 32,
        }
}

/// Room for one more test beside the running ones: the inotify instances
/// the biggest cluster a test makes takes (a local one with Kueue and a
/// real node), for it and for each running test that started in the last
/// minute (its clusters may not hold theirs yet). Unknown (no /proc) is
/// room.
fn inotify_room(recent: usize) -> bool {
    let biggest = harness::inotify::local_need(true, true).instances;
    let need = biggest * (recent as u64 + 1);
    match harness::inotify::free() {
        Some(free) if free < need => {
            // Asked every second while a test waits: said every half minute.
            static SAID: Mutex<Option<std::time::Instant>> = Mutex::new(None);
            let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
            if said.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(30)) {
                *said = Some(std::time::Instant::now());
                eprintln!(
                    "suites: waiting to start a test: {free} inotify instances free, {need} wanted \
                 (fs.inotify.max_user_instances; see `harness doctor`)"
                );
            }
            false
        }
        _ => true,
    }
}

/// On SIGINT or SIGTERM: start no more tests, run the `after` of every
/// suite that started a test, stop every cluster this process made, and
/// exit 130 or 143.
fn on_signal_tear_down(slots: Arc<Slots>, endings: Vec<Arc<Ending>>) {
    // This handler does what the fixtures' own would, and more.
    crate::runner_handles_signals();
    harness::signal::exit_on_interrupt(
        "no more tests start; tearing down every started suite".into(),
        move |sig| {
            slots.stop();
            for e in endings.iter().filter(|e| e.started.load(Ordering::SeqCst)) {
                eprintln!("{sig}: after the {} suite", e.suite);
                e.run();
            }
            crate::abandon_all();
        },
    );
}

#[cfg(test)]
mod tests {
    use crate::runner::{Alone, TEST_THREADS, shown, test_threads, turn_order, will_run};
    use libtest_mimic::Arguments;

    fn args(argv: &[&str]) -> Arguments {
        Arguments::from_iter(std::iter::once("all").chain(argv.iter().copied()))
    }

    #[test]
    fn filters_see_the_suite_as_kind() {
        assert_eq!(shown("thor", "smoke"), "[thor] smoke");
        assert!(will_run(&args(&[]), "thor", "smoke", false));
        assert!(will_run(&args(&["[thor]"]), "thor", "smoke", false));
        assert!(!will_run(&args(&["[gang]"]), "thor", "smoke", false));
        assert!(will_run(&args(&["smo"]), "thor", "smoke", false));
        assert!(!will_run(
            &args(&["--skip", "thor"]),
            "thor",
            "smoke",
            false
        ));
        assert!(will_run(
            &args(&["--exact", "smoke"]),
            "thor",
            "smoke",
            false
        ));
        assert!(will_run(
            &args(&["--exact", "[thor] smoke"]),
            "thor",
            "smoke",
            false
        ));
        assert!(!will_run(
            &args(&["--exact", "smo"]),
            "thor",
            "smoke",
            false
        ));
        assert!(!will_run(&args(&["--list"]), "thor", "smoke", false));
    }

    #[test]
    fn quiet_tests_go_first_then_builds_then_paced_ones_but_quiet_ones_that_would_build_go_last() {
        // Listed: a test, a quiet one, a quiet one that would build, a
        // test, a build, a paced test.
        let listed = [
            Alone::No,
            Alone::First,
            Alone::Last,
            Alone::No,
            Alone::Build,
            Alone::Paced,
        ];
        let mut order: Vec<usize> = (0..listed.len()).collect();
        order.sort_by_key(|&i| turn_order(i, listed[i]));
        assert_eq!(order, [1, 4, 0, 3, 5, 2]);
    }

    #[test]
    fn ignored_tests_run_only_when_asked() {
        assert!(!will_run(&args(&[]), "gang", "x", true));
        assert!(will_run(&args(&["--ignored"]), "gang", "x", true));
        assert!(!will_run(&args(&["--ignored"]), "gang", "y", false));
        assert!(will_run(&args(&["--include-ignored"]), "gang", "x", true));
    }

    #[test]
    fn test_threads_default_and_override() {
        assert_eq!(test_threads(None), Ok(TEST_THREADS));
        assert_eq!(test_threads(Some("6")), Ok(6));
        assert_eq!(test_threads(Some(" 1 ")), Ok(1));
    }

    #[test]
    fn test_threads_refuses_what_is_not_a_count() {
        for bad in ["0", "-1", "four", ""] {
            let e = test_threads(Some(bad)).unwrap_err();
            assert!(e.contains("HARNESS_TEST_THREADS"), "{bad}: {e}");
        }
    }
}
