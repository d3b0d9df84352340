//! A suite of declarative cases (the gang suite's format, see
//! `suites/gang/README.md`) run against a live local cluster of each
//! Kubernetes minor the harness supports, one cluster per (minor, profile)
//! the suite's cases use. Trials are `<suite>::<case>::k8s-<minor>`. A case
//! file that does not validate fails its trials with the problems; nothing
//! is skipped. The gang suite (`tests/gang.rs`) and the Kueue suite
//! (`tests/kueue.rs`) are this runner with their directory and profiles.
//!
//! Clusters start when their first trial runs and stop when their last
//! one is done; Ctrl-C tears down whatever runs.
//!
//! `HARNESS_CLUSTER=existing:<kubeconfig>` runs the suite on a cluster the
//! harness did not start instead: the trials of its minor and of the
//! profile it serves (gang APIs and Kueue served or not) run there, each in
//! a namespace and on kwok pool nodes carrying the run id, removed after;
//! every other trial is listed as ignored with the reason. Reports
//! (results.json, matrix.md, junit.xml) go to `$HARNESS_<SUITE>_OUT` or
//! `target/<suite>-report/`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use harness::cluster::existing::probe::{gang_versions, group_versions};
use harness::cluster::existing::site::remove_run;
use harness::cluster::existing::{ExistingCluster, ExistingOptions};
use harness::cluster::spec::KueueSpec;
use harness::cluster::{Cluster, ClusterSpec, NodeSpec};
use harness::k8s::{K8sRelease, releases_for_suites};
use harness::workload::gang::case::{self, Case, Profile};
use harness::workload::gang::report::{self, SuiteReport, trial_name};
use harness::workload::gang::run::{TrialReport, run_case};
use libtest_mimic::{Arguments, Failed};

use crate::Fixture;
use crate::runner::{Suite, Test, will_run};

/// One suite: its name, its cases' directory and the profiles its
/// clusters are started with.
pub struct SuiteDef {
    /// "gang": the trials' prefix and the report's name.
    pub name: &'static str,
    /// Relative to the repository root.
    pub dir: &'static str,
    /// In run order; a case of another profile is an error.
    pub profiles: &'static [Profile],
}

/// Kueue's `waitForPodsReady.timeout` on the suite's Kueue clusters:
/// short, so a case can watch an eviction. kwok pods are Ready within a
/// second on an idle machine, but under the whole test command on 2 cores
/// a placed JobSet's pods once took over 10 s (the preemption case's low
/// JobSet, CI of 47e50c7), so cases that need a workload running wait for
/// its `PodsReady` and the timeout leaves that wait room.
pub const KUEUE_PODS_READY_TIMEOUT_S: u64 = 20;

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
        let (feature_gates, runtime_config) = if self.profile.gang() {
            (
                self.release.job_gang_feature_gates(),
                self.release.gang_runtime_config(),
            )
        } else {
            Default::default()
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
            kueue: self.profile.kueue().then_some(KueueSpec {
                pods_ready_timeout_s: Some(KUEUE_PODS_READY_TIMEOUT_S),
                block_admission: false,
            }),
            real_node: false,
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

/// One suite's run: its trials' reports and the existing cluster it
/// runs on, if any (suites run side by side in one process).
struct State {
    results: Mutex<Vec<TrialReport>>,
    existing: Option<Existing>,
}

/// `HARNESS_CLUSTER=existing:<kubeconfig>`: the cluster, its minor and the
/// profile it serves.
struct Existing {
    rt: tokio::runtime::Runtime,
    cluster: ExistingCluster,
    minor: String,
    profile: Profile,
    version: String,
}

/// Attach to `HARNESS_CLUSTER`'s cluster, if set; a value of another form
/// is a usage error (exit 2).
fn existing_from_env() -> Option<Existing> {
    let v = std::env::var("HARNESS_CLUSTER").ok()?;
    let Some(path) = v.strip_prefix("existing:") else {
        eprintln!("error: HARNESS_CLUSTER={v:?}: expected existing:<kubeconfig>");
        std::process::exit(2);
    };
    let attach = || -> anyhow::Result<Existing> {
        let rt = crate::runtime()?;
        let cluster = rt.block_on(ExistingCluster::attach(ExistingOptions {
            kubeconfig: PathBuf::from(path),
            ..Default::default()
        }))?;
        let client = rt.block_on(cluster.client())?;
        let info = rt.block_on(client.apiserver_version())?;
        let minor = format!("{}.{}", info.major, info.minor.trim_end_matches('+'));
        let gang = !rt.block_on(gang_versions(&client)).is_empty();
        let kueue = !rt
            .block_on(group_versions(&client, "kueue.x-k8s.io"))
            .is_empty();
        Ok(Existing {
            rt,
            cluster,
            minor,
            profile: Profile::of(gang, kueue),
            version: info.git_version,
        })
    };
    match attach() {
        Ok(e) => Some(e),
        Err(e) => {
            eprintln!("error: HARNESS_CLUSTER={v}: {e:#}");
            std::process::exit(harness::error::exit_code(&e));
        }
    }
}

fn run_existing(state: &State, name: &str, case: &Case, release: K8sRelease) -> Result<(), Failed> {
    let ex = state.existing.as_ref().ok_or("no existing cluster")?;
    // Run with --include-ignored: say why instead of running it on a
    // cluster of another minor or profile.
    if ex.minor != release.minor || ex.profile != case.profile {
        return Err(Failed::from(format!(
            "not run: this trial is for k8s-{} with the {} profile; the cluster is {} with the {} profile",
            release.minor,
            case.profile.name(),
            ex.version,
            ex.profile.name()
        )));
    }
    let ns = format!("{}-{}", namespace(name, release), ex.cluster.run_id);
    let mut ns: String = ns.chars().take(63).collect();
    ns = ns.trim_end_matches('-').to_string();
    let mut report = ex
        .rt
        .block_on(run_case(&ex.cluster, release, name, case, &ns));
    report.k8s_version = ex.version.trim_start_matches('v').to_string();
    let outcome = match (&report.passed, &report.failure) {
        (true, _) => Ok(()),
        (false, f) => Err(f.clone().unwrap_or_else(|| "failed".into())),
    };
    state
        .results
        .lock()
        .map_err(|e| e.to_string())?
        .push(report);
    outcome.map_err(Failed::from)
}

/// A namespace name for a trial: DNS-1123, ≤ 63 characters.
pub fn namespace(case: &str, release: K8sRelease) -> String {
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

fn run_trial(state: &State, group: &Group, name: &str, case: &Case) -> Result<(), Failed> {
    let result = (|| {
        let fx = group.fixture()?;
        let ns = namespace(name, group.release);
        let report = fx
            .rt
            .block_on(run_case(&fx.cluster, group.release, name, case, &ns));
        let outcome = match (&report.passed, &report.failure) {
            (true, _) => Ok(()),
            (false, f) => Err(f.clone().unwrap_or_else(|| "failed".into())),
        };
        state
            .results
            .lock()
            .map_err(|e| e.to_string())?
            .push(report);
        outcome
    })();
    group.finished();
    result.map_err(Failed::from)
}

/// The suite's case files, each parsed or the reason it cannot be (a case
/// of a profile the suite does not run is an error); a directory that
/// cannot be read is a usage error (exit 2).
pub fn load_cases(def: &SuiteDef) -> Vec<(String, Result<Case, String>)> {
    let dir = crate::repo_root().join(def.dir);
    let files = match case::discover(&dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    };
    files
        .iter()
        .map(|(name, path)| {
            let case = harness::workload::gang::rules::load(path)
                .map_err(|e| format!("{e:#}"))
                .and_then(|c| {
                    if def.profiles.contains(&c.profile) {
                        Ok(c)
                    } else {
                        Err(format!(
                            "{}: profile {} is not one of the {} suite's ({})",
                            path.display(),
                            c.profile.name(),
                            def.name,
                            def.profiles
                                .iter()
                                .map(|p| p.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    }
                });
            (name.clone(), case)
        })
        .collect()
}

/// The suite's tests (see `crate::runner`); its `after` removes what the
/// run left on an existing cluster, stops clusters whose trials were
/// filtered out, and writes the reports.
pub fn suite(def: &'static SuiteDef, args: &Arguments) -> Suite {
    let cases = load_cases(def);
    let pid = std::process::id();
    // A bad HARNESS_MINORS or HARNESS_PRERELEASE_MINORS fails every trial
    // with its message (nothing is skipped): the default minor still
    // makes the list.
    let (releases, bad_minors): (Vec<K8sRelease>, Option<String>) = match releases_for_suites() {
        Ok(r) => (r, None),
        Err(e) => (vec![K8sRelease::default_release()], Some(format!("{e:#}"))),
    };
    let cases = match bad_minors {
        Some(e) => cases
            .into_iter()
            .map(|(n, _)| (n, Err(e.clone())))
            .collect(),
        None => cases,
    };
    // Groups in run order: per minor, the suite's profiles in order.
    let mut groups: Vec<Arc<Group>> = Vec::new();
    for r in &releases {
        for &profile in def.profiles {
            groups.push(Arc::new(Group {
                release: *r,
                profile,
                name: format!(
                    "{}-{}-{}-{pid}",
                    def.name,
                    r.minor.replace('.', ""),
                    profile.name()
                ),
                fixture: OnceLock::new(),
                remaining: AtomicUsize::new(0),
                stopped: AtomicBool::new(false),
            }));
        }
    }
    let state = Arc::new(State {
        results: Mutex::new(Vec::new()),
        existing: existing_from_env(),
    });
    let mut tests = Vec::new();
    if let Some(ex) = &state.existing {
        if !releases.iter().any(|r| r.minor == ex.minor) {
            eprintln!(
                "error: HARNESS_CLUSTER: the cluster runs {}; the {} suite has cases for {} only{}",
                ex.version,
                def.name,
                releases
                    .iter()
                    .map(|r| r.minor)
                    .collect::<Vec<_>>()
                    .join(", "),
                if harness::k8s::K8S_PRERELEASES
                    .iter()
                    .any(|r| r.minor == ex.minor)
                {
                    format!(
                        " (set {}={} to add that pre-release minor)",
                        harness::k8s::PRERELEASE_MINORS_ENV,
                        ex.minor
                    )
                } else {
                    String::new()
                }
            );
            std::process::exit(3);
        }
        eprintln!(
            "{} suite on {} ({}, gang APIs {}served, Kueue {}served): trials of k8s-{} with the {} profile run there; the others are ignored",
            def.name,
            ex.cluster.kubeconfig().display(),
            ex.version,
            if ex.profile.gang() { "" } else { "not " },
            if ex.profile.kueue() { "" } else { "not " },
            ex.minor,
            ex.profile.name()
        );
    }
    for g in &groups {
        // Benchmarks last in their group, after the behaviour cases.
        let mut ordered: Vec<&(String, Result<Case, String>)> = cases.iter().collect();
        ordered.sort_by_key(|(_, c)| c.as_ref().is_ok_and(|c| c.benchmark.is_some()));
        for (name, c) in ordered {
            let profile = c.as_ref().map(|c| c.profile).unwrap_or(def.profiles[0]);
            if profile != g.profile {
                continue;
            }
            let tname = trial_name(def.name, name, g.release.minor);
            match c {
                Err(e) => {
                    let e = e.clone();
                    tests.push(Test::new(tname, move || Err(Failed::from(e))));
                }
                Ok(c) => {
                    // Benchmarks run alone: other trials' clusters would
                    // skew their figures.
                    let bench = c.benchmark.is_some();
                    let existing = state.existing.is_some();
                    let (state, c, n) = (state.clone(), c.clone(), name.clone());
                    let test = if let Some(ex) = &state.existing {
                        let here = ex.minor == g.release.minor && ex.profile == g.profile;
                        let r = g.release;
                        Test::new(tname, move || run_existing(&state, &n, &c, r)).ignored(!here)
                    } else {
                        if will_run(args, def.name, &tname, false) {
                            g.remaining.fetch_add(1, Ordering::SeqCst);
                        }
                        let g = g.clone();
                        Test::new(tname, move || run_trial(&state, &g, &n, &c))
                    };
                    let test = if existing {
                        test
                    } else {
                        test.needs_cluster(&g.spec())
                    };
                    tests.push(if bench { test.quiet() } else { test });
                }
            }
        }
    }
    let listing = args.list;
    Suite::new(def.name, tests).after(move || finish(def, &state, &groups, listing))
}

/// After the suite's trials: on an existing cluster nothing of the run
/// stays; clusters whose trials were filtered out after all stop; the
/// reports are written.
fn finish(
    def: &SuiteDef,
    state: &State,
    groups: &[Arc<Group>],
    listing: bool,
) -> Result<(), String> {
    if let Some(ex) = &state.existing {
        ex.rt
            .block_on(async {
                let client = ex.cluster.client().await?;
                remove_run(
                    &client,
                    &ex.cluster.run_id,
                    std::time::Duration::from_secs(300),
                )
                .await
            })
            .map_err(|e| format!("removing run {}: {e:#}", ex.cluster.run_id))?;
    }
    for g in groups {
        g.stop();
    }
    let results = state.results.lock().map(|r| r.clone()).unwrap_or_default();
    if listing || results.is_empty() {
        return Ok(());
    }
    let out_var = format!("HARNESS_{}_OUT", def.name.to_ascii_uppercase());
    let out = std::env::var_os(&out_var)
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::repo_root().join(format!("target/{}-report", def.name)));
    let mut suite = SuiteReport::new(def.name, results);
    if def.profiles.iter().any(|p| p.kueue()) {
        suite.components.insert(
            "kueue".into(),
            harness::tools::versions::KUEUE_VERSION.into(),
        );
    }
    if let Some(ex) = &state.existing {
        suite.cluster = format!(
            "the existing cluster of {}",
            ex.cluster.kubeconfig().display()
        );
    }
    let files = report::write(&suite, &out)
        .map_err(|e| format!("writing the {} report: {e:#}", def.name))?;
    for f in files {
        eprintln!("{} report: {}", def.name, f.display());
    }
    Ok(())
}
