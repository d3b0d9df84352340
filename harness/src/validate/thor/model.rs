//! The static model: objects, pods and containers per Thor instance, by
//! mode and size, computed from the templates.

use serde::Serialize;

use crate::validate::thor::shape::{THOR_NAME, params};
use crate::workload::thor::{self, Mode};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StaticRow {
    pub mode: &'static str,
    pub num_workers: u32,
    pub client_objects: u32,
    pub controller_objects: u32,
    pub pods: u32,
    pub containers: u32,
}

/// Objects, pods and containers per Thor instance, by mode and size
/// (numWorkersPerPod 1, HPCC's default; JobSet without DNS hostnames, as
/// the proof of concept), computed from the templates. NetworkPolicies
/// count in every mode.
pub fn static_model() -> Vec<StaticRow> {
    let mut rows = Vec::new();
    for &w in &[1u32, 2, 8, 32, 128, 512, 1024] {
        for mode in Mode::ALL {
            if let Ok(s) = thor::shape::shape(mode, &params(w, 1, 1, THOR_NAME)) {
                rows.push(StaticRow {
                    mode: mode.name(),
                    num_workers: w,
                    client_objects: s.client_objects.values().sum(),
                    controller_objects: s.controller_objects.values().sum(),
                    pods: s.pods,
                    containers: s.containers,
                });
            }
        }
    }
    rows
}
