//! What an HPCC install is asked for and what it reports: its mode,
//! options, the names it uses, and the record it writes for the suites.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Where HPCC goes. `default`, so `kubectl` and the ECL suite find ECL Watch
/// without a namespace flag.
pub const NAMESPACE: &str = "default";
pub const RELEASE: &str = "hpcc";
/// The chart's service account of the Thor agent and manager.
pub const THOR_AGENT_SERVICE_ACCOUNT: &str = "hpcc-thoragent";

/// Our values for kind, embedded like the Thor templates.
pub const KIND_VALUES_PATH: &str = "manifests/hpcc/values/kind.yaml";
pub const KIND_VALUES: &str = include_str!("../../../../manifests/hpcc/values/kind.yaml");

/// How Thor runs its instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HpccMode {
    /// The released chart: a manager Job and a worker Job per instance.
    Baseline,
    /// The proof-of-concept chart: one JobSet per instance (needs --hpcc-chart).
    Jobset,
}

impl HpccMode {
    pub fn name(self) -> &'static str {
        match self {
            HpccMode::Baseline => "baseline",
            HpccMode::Jobset => "jobset",
        }
    }
}

#[derive(Debug, Clone)]
pub struct HpccOptions {
    pub mode: HpccMode,
    /// `--hpcc-chart`: a chart directory or .tgz, `oci://…`, or REPO/CHART.
    pub chart: Option<String>,
    /// `--hpcc-values`: merged over ours.
    pub values: Option<PathBuf>,
    /// `--hpcc-workers`: Thor's numWorkers.
    pub workers: Option<u32>,
    /// For the pods to become Ready after helm returns.
    pub timeout: Duration,
}

/// What was installed; written to `<state dir>/hpcc.json` for the suites.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HpccInstall {
    pub mode: HpccMode,
    pub release: String,
    pub namespace: String,
    pub chart: String,
    pub chart_version: Option<String>,
    pub values_file: PathBuf,
    pub num_workers: u32,
    pub thor_name: String,
    pub eclwatch_service: String,
    pub eclwatch_port: u16,
    pub deployments: Vec<String>,
}

/// Components by Deployment, for messages.
pub fn describe(names: &[(String, &'static str)]) -> String {
    let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (n, c) in names {
        by.entry(c).or_default().push(n);
    }
    by.iter()
        .map(|(c, ns)| format!("{c}: {}", ns.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}
