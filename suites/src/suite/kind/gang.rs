//! The gang cases on kind: every case of `suites/gang/` with the gang
//! profile, run by the gang suite's own runner (`run_case`) on the kind
//! suite's shared cluster of its minor (fixtures.rs: the gang profile's
//! gates on real control-plane components, kwok in the cluster), each
//! case's pool as kwok nodes beside the kind nodes. Cases of another
//! profile (gates off) need a cluster without the gates: they are listed
//! as ignored with that reason, and run in the gang suite on the local
//! provider. The report (results.json, matrix.md, junit.xml) goes to
//! `$HARNESS_KIND_GANG_OUT` or `target/kind-gang-report/`.

use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use harness::k8s::K8sRelease;
use harness::workload::gang::case::{Case, Profile};
use harness::workload::gang::report::{self, SuiteReport};
use harness::workload::gang::run::{TrialReport, run_case};

use crate::case_suite::{load_cases, namespace};
use crate::suite::kind::fixtures::shared;

static RESULTS: Mutex<Vec<TrialReport>> = Mutex::new(Vec::new());

/// A case of the gang suite, as the kind lane takes it.
pub enum KindCase {
    Run(Case),
    /// Of another profile: why it does not run here.
    Elsewhere(String),
    /// A case file that does not load: its trial fails with this.
    Broken(String),
}

/// The gang suite's cases by name.
pub fn cases() -> Vec<(String, KindCase)> {
    load_cases(&crate::suite::gang::DEF)
        .into_iter()
        .map(|(name, c)| {
            let c = match c {
                Err(e) => KindCase::Broken(e),
                Ok(c) if c.profile == Profile::Gang => KindCase::Run(c),
                Ok(c) => KindCase::Elsewhere(format!(
                    "not run on kind: the case needs the {} profile and the kind suite's cluster runs the gang profile; the gang suite runs it on the local provider",
                    c.profile.name()
                )),
            };
            (name, c)
        })
        .collect()
}

/// Run `case` on the shared cluster of `minor`.
pub fn run(minor: &'static str, name: &str, case: &Case) -> Result<()> {
    let fx = shared(minor)?;
    let release = K8sRelease::parse(minor)?;
    let ns = format!("kind-{}", namespace(name, release));
    let ns: String = ns.chars().take(63).collect();
    let mut report = fx.rt.block_on(run_case(
        &fx.cluster,
        release,
        name,
        case,
        ns.trim_end_matches('-'),
    ));
    report.k8s_version = fx.cluster.state.k8s_version.clone();
    let outcome = match (&report.passed, &report.failure) {
        (true, _) => Ok(()),
        (false, f) => Err(anyhow!("{}", f.clone().unwrap_or_else(|| "failed".into()))),
    };
    RESULTS
        .lock()
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .push(report);
    outcome
}

/// Write the report of the cases that ran, if any.
pub fn write_report() -> Result<()> {
    let results = RESULTS.lock().map_err(|e| anyhow::anyhow!("{e}"))?.clone();
    if results.is_empty() {
        return Ok(());
    }
    let out = std::env::var_os("HARNESS_KIND_GANG_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::repo_root().join("target/kind-gang-report"));
    let mut suite = SuiteReport::new("kind-gang", results);
    suite.cluster = "kind (kind-configs/gang-<minor>.yaml, kwok in the cluster for pools)".into();
    suite.command = "cargo test -p suites --test kind -- _gang_".into();
    for f in report::write(&suite, &out).context("writing the kind-gang report")? {
        eprintln!("kind-gang report: {}", f.display());
    }
    Ok(())
}
