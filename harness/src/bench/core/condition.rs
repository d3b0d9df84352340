//! A condition a baseline's band across machines and loads was measured
//! under (`bench::core::across`): the machine, how busy the rest of it
//! was, how many runs of each mode.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::machine::Machine;

/// One set of runs added to a baseline's band: where and how loaded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The machine they ran on.
    pub machine: Option<Machine>,
    /// The rest of the machine's CPU while they were measured, in cores
    /// (`gate::others_cores`): the median and the highest over the runs.
    pub others_cores_median: f64,
    pub others_cores_max: f64,
    /// Runs per mode, in the order their values were appended to each
    /// metric's `across`.
    pub runs: BTreeMap<String, usize>,
    /// When the first of them started (RFC 3339).
    pub started: String,
    pub harness_version: String,
    /// The speed probe's median over the runs, Msteps/s (`machine::Speed`):
    /// absent in runs from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runs: usize = self.runs.values().sum();
        write!(
            f,
            "{} runs on {}{}, the rest of the machine at {:.2} cores (median; up to {:.2})",
            runs,
            self.machine
                .as_ref()
                .map_or("an unknown machine".to_string(), ToString::to_string),
            self.speed
                .map_or(String::new(), |s| format!(" at probe {s:.0} Msteps/s")),
            self.others_cores_median,
            self.others_cores_max
        )
    }
}
