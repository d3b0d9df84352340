//! The ECL suite: our own ECL programs (`suites/ecl/<case>.ecl`) run on a
//! real HPCC platform's Thor, their results compared with
//! `<case>.expected.json`, each run measured.
//!
//! Trials:
//! - `ecl::<case>::files` (always): the case's files are there and sound —
//!   the ECL is not blank, the expected file parses, every expected result
//!   is one the ECL outputs with NAMED(…) and every NAMED output is checked.
//! - `ecl::<case>::<mode>` (mode baseline|jobset): the case on the cluster
//!   named by `HARNESS_ECL_CLUSTER`, HPCC in namespace
//!   `HARNESS_ECL_NAMESPACE` (default `default`), mode from
//!   `HARNESS_ECL_MODE`. Without `HARNESS_ECL_CLUSTER` they are ignored,
//!   with the reason saying what they need.
//!
//! Optional: `HARNESS_ECL_OUT` (report dir, default `<target>/ecl-report`),
//! `HARNESS_ECL_ESP_SELECTOR` (eclwatch pod labels, default
//! `server=eclwatch`), `HARNESS_ECL_TARGET` (ESP target, default `thor`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use harness::cluster::{AnyCluster, Cluster};
use harness::progress::Step;
use harness::workload::ecl::cases::{self, EclCase};
use harness::workload::ecl::portforward::{DEFAULT_ESP_SELECTOR, ESP_PORT, PortForward};
use harness::workload::ecl::report::{self, EclCaseRecord, EclReport};
use harness::workload::ecl::run::{RunOptions, run_case};
use harness::workload::ecl::wsworkunits::{DEFAULT_TARGET, EspClient, PollPolicy};
use libtest_mimic::{Arguments, Completion, Trial};

const MODES: &[&str] = &["baseline", "jobset"];
const NEEDS: &str = "needs a kind cluster with HPCC: harness up --provider kind --hpcc <mode>, then HARNESS_ECL_CLUSTER=<name>";

fn case_dir() -> PathBuf {
    suites::repo_root().join("suites/ecl")
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Where reports go: HARNESS_ECL_OUT, else `ecl-report` in the target
/// directory this test binary was built in.
fn out_dir() -> PathBuf {
    if let Some(d) = env("HARNESS_ECL_OUT") {
        return PathBuf::from(d);
    }
    // <target>/<profile>/deps/ecl-<hash>
    std::env::current_exe()
        .ok()
        .and_then(|p| p.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(|| suites::repo_root().join("target"))
        .join("ecl-report")
}

struct Fixture {
    rt: tokio::runtime::Runtime,
    cluster: AnyCluster,
    esp: EspClient,
    forward: PortForward,
    opts: RunOptions,
}

static FIXTURE: OnceLock<std::result::Result<Fixture, String>> = OnceLock::new();
/// Execution trials share one cluster; they run one at a time so that
/// each one's measurement window holds only its own workunit.
static SERIAL: Mutex<()> = Mutex::new(());
static RECORDS: Mutex<Vec<EclCaseRecord>> = Mutex::new(Vec::new());

fn namespace() -> String {
    env("HARNESS_ECL_NAMESPACE").unwrap_or_else(|| "default".into())
}

fn fixture(cluster_name: &str) -> std::result::Result<&'static Fixture, String> {
    FIXTURE
        .get_or_init(|| start(cluster_name).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(Clone::clone)
}

fn start(cluster_name: &str) -> Result<Fixture> {
    harness::init_crypto();
    let suites::Fixture { rt, cluster } = suites::Fixture::attach(cluster_name)?;
    let ns = namespace();
    let selector = env("HARNESS_ECL_ESP_SELECTOR").unwrap_or_else(|| DEFAULT_ESP_SELECTOR.into());
    let forward = rt.block_on(async {
        let client = cluster
            .client()
            .await
            .with_context(|| format!("connecting to cluster {cluster_name}"))?;
        PortForward::start(client, &ns, &selector, ESP_PORT).await
    })?;
    let esp = EspClient::new(&forward.base_url(), Duration::from_secs(60))?;
    let opts = RunOptions {
        namespace: ns,
        target: env("HARNESS_ECL_TARGET").unwrap_or_else(|| DEFAULT_TARGET.into()),
        poll: PollPolicy::default(),
        in_flight: Arc::default(),
    };
    // Ctrl-C: abort the workunit in flight, then leave. The port-forward
    // lives in this process and ends with it.
    let (esp2, slot) = (esp.clone(), opts.in_flight.clone());
    harness::signal::exit_on_interrupt("aborting the workunit in flight".into(), move |_| {
        let wuid = slot.lock().ok().and_then(|s| s.clone());
        let Some(w) = wuid else { return };
        eprintln!("aborting workunit {w}");
        let aborted = suites::runtime().and_then(|rt| rt.block_on(esp2.abort(&w)));
        if let Err(e) = aborted {
            eprintln!("aborting {w}: {e:#}");
        }
    });
    Ok(Fixture {
        rt,
        cluster,
        esp,
        forward,
        opts,
    })
}

/// `ecl::<case>::files`
fn check_files(name: &str) -> Result<()> {
    let case = cases::load(&case_dir(), name)?;
    let code: String = case
        .ecl
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let named = cases::named_outputs(&code);
    let unchecked: Vec<&String> = named
        .iter()
        .filter(|n| {
            !case
                .expected
                .results
                .keys()
                .any(|k| k.eq_ignore_ascii_case(n))
        })
        .collect();
    if !unchecked.is_empty() {
        bail!(
            "{}: outputs {unchecked:?} have no expectation in {}",
            case.ecl_path.display(),
            case.expected_path.display()
        );
    }
    Ok(())
}

/// `ecl::<case>::<mode>` on the named cluster.
fn execute(cluster_name: &str, mode: &str, name: &str) -> Result<()> {
    let attached = cases::load(&case_dir(), name)
        .and_then(|c| Ok((c, fixture(cluster_name).map_err(|e| anyhow!("{e}"))?)));
    let (case, fx): (EclCase, &Fixture) = match attached {
        Ok(x) => x,
        Err(e) => {
            // Recorded too, so the reports say why the case did not run.
            RECORDS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(EclCaseRecord {
                    case: name.to_string(),
                    mode: mode.to_string(),
                    error: Some(format!("{e:#}")),
                    ..Default::default()
                });
            return Err(e);
        }
    };
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let step = Step::start(format!(
        "ECL {name} on cluster {cluster_name} ({mode} mode) via {}",
        fx.forward.base_url()
    ));
    let rec = fx
        .rt
        .block_on(run_case(&fx.cluster, &fx.esp, &case, mode, &fx.opts));
    step.done(&format!(
        "{} {}",
        rec.wuid.as_deref().unwrap_or("(no workunit)"),
        rec.state
            .as_deref()
            .unwrap_or(if rec.passed { "ok" } else { "failed" })
    ));
    let outcome = match &rec.error {
        None => Ok(()),
        Some(e) => {
            let forward_errors = fx.forward.errors();
            Err(if forward_errors.is_empty() {
                anyhow!("{e}")
            } else {
                anyhow!(
                    "{e}\nport-forward to {}/{}: {}",
                    fx.forward.namespace,
                    fx.forward.pod,
                    forward_errors.join("; ")
                )
            })
        }
    };
    RECORDS.lock().unwrap_or_else(|p| p.into_inner()).push(rec);
    outcome
}

fn write_reports(cluster_name: &str, mode: &str) -> Result<()> {
    let records = std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|p| p.into_inner()));
    if records.is_empty() {
        return Ok(());
    }
    let Some(Ok(fx)) = FIXTURE.get() else {
        // Every execution failed before the cluster was attached: the
        // records still say why.
        let mut r = EclReport::new(mode, cluster_name, "?", "?", &namespace());
        r.cases = records.into_iter().map(|c| (c.case.clone(), c)).collect();
        return write(&r);
    };
    let mut r = EclReport::new(
        mode,
        cluster_name,
        fx.cluster.provider(),
        fx.cluster.k8s_version(),
        &fx.opts.namespace,
    );
    r.cases = records.into_iter().map(|c| (c.case.clone(), c)).collect();
    write(&r)
}

fn write(r: &EclReport) -> Result<()> {
    let dir = out_dir();
    let files = report::write_all(&dir, r)?;
    eprintln!(
        "ECL reports: {}",
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let cluster = env("HARNESS_ECL_CLUSTER");
    let mode = env("HARNESS_ECL_MODE");
    let mut trials = Vec::new();
    let names = match cases::discover(&case_dir()) {
        Ok(n) => n,
        Err(e) => {
            let msg = format!("{e:#}");
            trials.push(Trial::test("ecl::cases", move || Err(msg.into())));
            vec![]
        }
    };
    for name in &names {
        let n = name.clone();
        trials.push(Trial::test(format!("ecl::{name}::files"), move || {
            suites::trial_result(check_files(&n))
        }));
    }
    match (&cluster, &mode) {
        (None, _) => {
            // Visible as ignored, with what they need; never a silent pass.
            let modes: Vec<String> = match &mode {
                Some(m) => vec![m.clone()],
                None => MODES.iter().map(|m| m.to_string()).collect(),
            };
            for name in &names {
                for m in &modes {
                    trials.push(Trial::ignorable_test(format!("ecl::{name}::{m}"), || {
                        Ok(Completion::ignored_with(NEEDS))
                    }));
                }
            }
        }
        (Some(c), m) => {
            let mode_ok = m.as_deref().is_some_and(|m| MODES.contains(&m));
            for name in &names {
                let label = m.clone().unwrap_or_else(|| "unset-mode".into());
                let (c, n, mode) = (c.clone(), name.clone(), m.clone());
                trials.push(Trial::test(format!("ecl::{name}::{label}"), move || {
                    if !mode_ok {
                        return Err(format!(
                            "HARNESS_ECL_MODE is {:?}; set it to one of {MODES:?} (the mode HPCC was installed in on cluster {c})",
                            mode.unwrap_or_default()
                        )
                        .into());
                    }
                    suites::trial_result(execute(&c, mode.as_deref().unwrap_or_default(), &n))
                }));
            }
        }
    }
    let conclusion = libtest_mimic::run(&args, trials);
    if let (Some(c), Some(m)) = (&cluster, &mode)
        && let Err(e) = write_reports(c, m)
    {
        eprintln!("writing the ECL reports: {e:#}");
        std::process::exit(1);
    }
    conclusion.exit();
}
