//! `harness measure`'s Result: the figures of every run as the benchmark
//! core keeps them (`figures`: one "mode" per variant, each run the
//! figures every run has, so the same report, statistics, baselines and
//! comparison apply), and beside them what only a measured workload has —
//! each run's exit code, wall time, output folder and the harness's own
//! share of the cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bench::core::figures::{self as common, RunFigures};
use crate::bench::core::metric::Metric;
use crate::bench::core::result::{NoShape, Results, Run};

pub const SCHEMA: &str = "harness.measure-result/v1";

/// How the `scenario` of a baseline `harness measure --record` wrote
/// starts: it names the workload ("measure NAME: COMMAND…"), not a
/// scenario file, and its modes are the variants.
pub const BASELINE_PREFIX: &str = "measure ";

/// The figures of a measurement's runs.
pub type Figures = Results<RunFigures>;

/// The harness's own cost in one run beside the workload's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Requests of the harness's identity in the window (its pod watch,
    /// its scrapes, `--apply`'s wait) and of everyone else.
    pub harness_requests: u64,
    pub workload_requests: u64,
    /// CPU seconds of the harness process, of the command and its
    /// children (the `workload` row of `resources`), and of the control
    /// plane's processes (every other row).
    pub harness_cpu_s: f64,
    pub workload_cpu_s: f64,
    pub control_plane_cpu_s: f64,
    /// harness ÷ everyone else's requests, harness ÷ (workload + control
    /// plane) CPU, in percent.
    pub requests_pct: f64,
    pub cpu_pct: f64,
}

impl Overhead {
    /// From a window's figures (the `workload` row already named).
    pub fn of(w: &crate::metrics::WindowFigures) -> Overhead {
        let cpu = |n: &str| w.resources.get(n).map_or(0.0, |u| u.cpu_s);
        let harness_cpu_s = cpu(crate::metrics::usage::HARNESS);
        let workload_cpu_s = cpu(WORKLOAD_ROW);
        let control_plane_cpu_s = w
            .resources
            .iter()
            .filter(|(n, _)| *n != crate::metrics::usage::HARNESS && *n != WORKLOAD_ROW)
            .map(|(_, u)| u.cpu_s)
            .sum();
        let pct = |a: f64, b: f64| if b > 0.0 { a / b * 100.0 } else { 0.0 };
        Overhead {
            harness_requests: w.harness_requests,
            workload_requests: w.api_requests_total,
            harness_cpu_s,
            workload_cpu_s,
            control_plane_cpu_s,
            requests_pct: pct(w.harness_requests as f64, w.api_requests_total as f64),
            cpu_pct: pct(harness_cpu_s, workload_cpu_s + control_plane_cpu_s),
        }
    }
}

/// The `resources` row of the measured command and everything it ran
/// (the harness's waited-for children: only the command in `measure`).
pub const WORKLOAD_ROW: &str = "workload";

/// One run of one variant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadRun {
    pub variant: String,
    /// 0-based round.
    pub round: u32,
    pub cluster: String,
    /// The command's exit code (128 + signal when a signal ended it, 124
    /// past the timeout); for `--apply`, 0 when it applied and finished,
    /// 1 when the apply was refused, 124 when the wait timed out.
    pub exit_code: i32,
    pub timed_out: bool,
    /// The command's (or the apply and its wait's) own wall time.
    pub wall_s: f64,
    /// How what the workload made ended, as the wait last saw it
    /// ("JobSet ns/name Completed", "Job ns/name Complete").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<String>,
    /// How long the fresh cluster took to go quiet before the window
    /// opened (absent on an existing cluster, and in results from before
    /// it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet_wait: Option<QuietWait>,
    /// Its stdout.log and stderr.log, relative to the out folder.
    pub output: String,
    pub overhead: Overhead,
}

/// The wait for a quiet cluster before a run's window opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QuietWait {
    pub waited_s: f64,
    /// False: it ran out, and the window opened on a cluster still busy
    /// (its controllers' start-up counted as the workload's).
    pub quiet: bool,
}

/// The whole measurement. Read back, its rounds are checked before
/// anything uses them ([`MeasureResult::check`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct MeasureResult {
    pub schema: String,
    /// `--name`: the baseline's name (`measure-NAME`).
    pub name: String,
    /// Variant → what it runs.
    pub variants: BTreeMap<String, String>,
    pub runs: Vec<WorkloadRun>,
    /// Kueue's performance runner's own figures, per run (`--kueue-perf`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kueue_runner: Vec<crate::bench::measure::kueue_perf::RunnerFigures>,
    /// Every run's figures, as the benchmark core keeps them.
    pub figures: Figures,
}

impl Serialize for MeasureResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        MeasureResult::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for MeasureResult {
    /// Read, then [`MeasureResult::check`]ed: a claim that does not fit is
    /// an error naming its field (the reader adds the file and position).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MeasureResult, D::Error> {
        let m = MeasureResult::deserialize(d)?;
        m.check().map_err(serde::de::Error::custom)?;
        Ok(m)
    }
}

impl MeasureResult {
    /// Each run's round (`runs[].round`, `kueue_runner[].round`, 0-based)
    /// within its run set: the rounds `figures.statistics` says the set
    /// has, or at most [`MAX_SET_ROUNDS`] where it says none. The error
    /// names the field.
    ///
    /// [`MAX_SET_ROUNDS`]: crate::bench::core::result::MAX_SET_ROUNDS
    pub fn check(&self) -> Result<(), String> {
        use crate::bench::core::result::MAX_SET_ROUNDS;
        let set = self
            .figures
            .statistics
            .as_ref()
            .and_then(|st| st.set_rounds())
            .unwrap_or(MAX_SET_ROUNDS);
        let bad = |what: &str, i: usize, round: u32| {
            format!("{what}[{i}].round: round {round} (0-based) of a run set of {set} rounds")
        };
        if let Some((i, r)) = self
            .runs
            .iter()
            .enumerate()
            .find(|(_, r)| r.round as usize >= set)
        {
            return Err(bad("runs", i, r.round));
        }
        if let Some((i, r)) = self
            .kueue_runner
            .iter()
            .enumerate()
            .find(|(_, r)| r.round as usize >= set)
        {
            return Err(bad("kueue_runner", i, r.round));
        }
        Ok(())
    }

    /// Exit 1 when any run's workload failed.
    pub fn failed(&self) -> bool {
        self.runs.iter().any(|r| r.exit_code != 0)
    }

    /// The runs whose window opened on a cluster that never went quiet.
    pub fn busy_starts(&self) -> Vec<&WorkloadRun> {
        self.runs
            .iter()
            .filter(|r| r.quiet_wait.is_some_and(|q| !q.quiet))
            .collect()
    }
}

/// A measured workload's metrics: the ones every run has, in the order
/// reports show them.
pub fn metrics() -> Vec<Metric<RunFigures>> {
    common::common().rest(|r: &RunFigures| r)
}

/// A measured workload's runs (`harness measure`) are the common figures
/// alone.
impl Run for RunFigures {
    type Shape = NoShape;
    const SCHEMA: &'static str = "harness.measure-figures/v1";
    const TITLE: &'static str = "harness measure";

    fn metrics() -> Vec<Metric<Self>> {
        metrics()
    }

    fn figures(&self) -> &RunFigures {
        self
    }

    fn figures_mut(&mut self) -> &mut RunFigures {
        self
    }

    fn typical(runs: &[&Self]) -> Self {
        crate::metrics::combine::Combine::combine(runs)
    }

    /// `harness measure <name>` and `measure.<name>` (the scenario is
    /// `measure-<name>`).
    fn junit_names(r: &Results<Self>) -> (String, String) {
        let name = r.scenario.strip_prefix("measure-").unwrap_or(&r.scenario);
        (format!("harness measure {name}"), format!("measure.{name}"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_measure_run_set_names_its_junit_as_measure() {
        let dir = crate::paths::repo_root(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .join("suites/measure/results/job-300");
        let crate::bench::saved::Saved::Measure(m) =
            crate::bench::saved::read(&dir, "test").unwrap()
        else {
            panic!("a measure result");
        };
        let x = crate::bench::core::report::markdown::junit(&m.figures);
        assert!(x.contains("\"harness measure job-300\""), "{x}");
        assert!(x.contains("classname=\"measure.job-300\""), "{x}");
        assert!(!x.contains("bench thor"), "{x}");
    }
}
