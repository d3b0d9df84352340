//! The gang-scheduling suite: every case in `suites/gang/` run against a
//! live local cluster of each Kubernetes minor the harness supports, with
//! the case's profile (that version's gang gates, or none). Trials are
//! `gang::<case>::k8s-<minor>`. A case file that does not validate fails
//! its trials with the problems; nothing is skipped.
//!
//! Clusters start when their first trial runs and stop when their last
//! one is done; Ctrl-C tears down whatever runs. Reports (results.json,
//! matrix.md, junit.xml) go to `$HARNESS_GANG_OUT` or
//! `target/gang-report/`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use harness::cluster::{ClusterSpec, NodeSpec};
use harness::k8s::{K8S_RELEASES, K8sRelease};
use harness::workload::gang::case::{self, Case, Profile};
use harness::workload::gang::report::{self, SuiteReport, trial_name};
use harness::workload::gang::run::{TrialReport, run_case};
use libtest_mimic::{Arguments, Failed, Trial};
use suites::Fixture;

/// One cluster per (minor, profile), shared by that group's trials.
struct Group {
    release: K8sRelease,
    profile: Profile,
    name: String,
    fixture: OnceLock<Result<Fixture, String>>,
    /// Trials of this group still to run; at 0 the cluster stops.
    remaining: AtomicUsize,
    stopped: AtomicBool,
}

impl Group {
    fn spec(&self) -> ClusterSpec {
        let (feature_gates, runtime_config) = match self.profile {
            Profile::Gang => (
                self.release.job_gang_feature_gates(),
                self.release.gang_runtime_config(),
            ),
            Profile::GatesOff => Default::default(),
        };
        ClusterSpec {
            name: self.name.clone(),
            k8s_minor: self.release.minor.to_string(),
            feature_gates,
            runtime_config,
            // Trials bring their own pool nodes.
            nodes: NodeSpec {
                count: 0,
                ..NodeSpec::default()
            },
            kubelet: Default::default(),
            control_plane: Default::default(),
        }
    }

    fn fixture(&self) -> Result<&Fixture, String> {
        self.fixture
            .get_or_init(|| Fixture::start(self.spec()).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A trial of this group is over: stop the cluster after the last.
    fn finished(&self) {
        if self.remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.stop();
        }
    }

    /// Stop the group's cluster, once.
    fn stop(&self) {
        if let Some(Ok(fx)) = self.fixture.get()
            && !self.stopped.swap(true, Ordering::SeqCst)
            && let Err(e) = fx.stop()
        {
            eprintln!("stopping cluster {}: {e:#}", self.name);
        }
    }
}

static RESULTS: Mutex<Vec<TrialReport>> = Mutex::new(Vec::new());

/// Benchmarks run alone: no other trial on any cluster of this run (two
/// cores shared by every control plane would skew their figures).
static EXCLUSIVE: RwLock<()> = RwLock::new(());

/// A namespace name for a trial: DNS-1123, ≤ 63 characters.
fn namespace(case: &str, release: K8sRelease) -> String {
    let mut ns: String = format!("{case}-{}", release.minor.replace('.', ""))
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    ns.truncate(63);
    ns.trim_end_matches('-').to_string()
}

fn run_trial(group: &Group, name: &str, case: &Case) -> Result<(), Failed> {
    let result = (|| {
        let fx = group.fixture()?;
        let _guard = if case.benchmark.is_some() {
            Guard::Write(EXCLUSIVE.write().map_err(|e| e.to_string())?)
        } else {
            Guard::Read(EXCLUSIVE.read().map_err(|e| e.to_string())?)
        };
        let ns = namespace(name, group.release);
        let report = fx
            .rt
            .block_on(run_case(&fx.cluster, group.release, name, case, &ns));
        let outcome = match (&report.passed, &report.failure) {
            (true, _) => Ok(()),
            (false, f) => Err(f.clone().unwrap_or_else(|| "failed".into())),
        };
        RESULTS.lock().map_err(|e| e.to_string())?.push(report);
        outcome
    })();
    group.finished();
    result.map_err(Failed::from)
}

enum Guard<'a> {
    Read(#[allow(dead_code)] std::sync::RwLockReadGuard<'a, ()>),
    Write(#[allow(dead_code)] std::sync::RwLockWriteGuard<'a, ()>),
}

/// Would libtest-mimic run a trial of this name with these arguments?
fn selected(args: &Arguments, name: &str) -> bool {
    let hit = |f: &str| {
        if args.exact {
            name == f
        } else {
            name.contains(f)
        }
    };
    if args.skip.iter().any(|s| hit(s)) {
        return false;
    }
    args.filter.as_deref().is_none_or(hit)
}

fn main() {
    let args = Arguments::from_args();
    let dir = suites::repo_root().join("suites/gang");
    let files = match case::discover(&dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    };
    let cases: Vec<(String, Result<Case, String>)> = files
        .iter()
        .map(|(name, path)| {
            (
                name.clone(),
                harness::workload::gang::rules::load(path).map_err(|e| format!("{e:#}")),
            )
        })
        .collect();
    let pid = std::process::id();
    let mut releases: Vec<K8sRelease> = K8S_RELEASES.to_vec();
    releases.sort();
    // Groups in run order: per minor, the gang profile then gates-off.
    let mut groups: Vec<Arc<Group>> = Vec::new();
    for r in &releases {
        for profile in [Profile::Gang, Profile::GatesOff] {
            groups.push(Arc::new(Group {
                release: *r,
                profile,
                name: format!("gang-{}-{}-{pid}", r.minor.replace('.', ""), profile.name()),
                fixture: OnceLock::new(),
                remaining: AtomicUsize::new(0),
                stopped: AtomicBool::new(false),
            }));
        }
    }
    let mut trials = Vec::new();
    for g in &groups {
        // Benchmarks last in their group, after the behaviour cases.
        let mut ordered: Vec<&(String, Result<Case, String>)> = cases.iter().collect();
        ordered.sort_by_key(|(_, c)| c.as_ref().is_ok_and(|c| c.benchmark.is_some()));
        for (name, c) in ordered {
            let profile = c.as_ref().map(|c| c.profile).unwrap_or(Profile::Gang);
            if profile != g.profile {
                continue;
            }
            let tname = trial_name(name, g.release.minor);
            match c {
                Err(e) => {
                    let e = e.clone();
                    trials.push(Trial::test(tname, move || Err(Failed::from(e))));
                }
                Ok(c) => {
                    if selected(&args, &tname) && !args.ignored {
                        g.remaining.fetch_add(1, Ordering::SeqCst);
                    }
                    let (g, c, n) = (g.clone(), c.clone(), name.clone());
                    trials.push(Trial::test(tname, move || run_trial(&g, &n, &c)));
                }
            }
        }
    }
    // Ctrl-C: Fixture::start stops every cluster this run started.
    let listing = args.list;
    let conclusion = libtest_mimic::run(&args, trials);
    // Clusters whose trials were filtered out after all.
    for g in &groups {
        g.stop();
    }
    if !listing {
        let results = RESULTS.lock().map(|r| r.clone()).unwrap_or_default();
        if !results.is_empty() {
            let out = std::env::var_os("HARNESS_GANG_OUT")
                .map(PathBuf::from)
                .unwrap_or_else(|| suites::repo_root().join("target/gang-report"));
            let suite = SuiteReport::new(results);
            match report::write(&suite, &out) {
                Ok(files) => {
                    for f in files {
                        eprintln!("gang report: {}", f.display());
                    }
                }
                Err(e) => {
                    eprintln!("error: writing the gang report: {e:#}");
                    std::process::exit(1);
                }
            }
        }
    }
    conclusion.exit();
}
