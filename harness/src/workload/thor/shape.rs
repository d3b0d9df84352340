//! The shape of what one rendered Thor instance creates, on paper:
//! objects by creator (the Thor identity or a controller), pods and
//! containers — `harness validate`'s static model and the smoke suite's
//! expectation.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::workload::thor::template::{Mode, ThorParams, default_minor, render, templates_for};

/// What one instance puts in the cluster, on paper.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    /// Objects the Thor identity creates, by kind (NetworkPolicies in
    /// every mode).
    pub client_objects: BTreeMap<String, u32>,
    /// Objects controllers create from them (Jobs, Services), by kind.
    pub controller_objects: BTreeMap<String, u32>,
    pub pods: u32,
    pub containers: u32,
}

fn count_job(spec: &Value) -> (u32, u32) {
    let parallelism = spec["parallelism"].as_u64().unwrap_or(1) as u32;
    let completions = spec["completions"].as_u64().map(|c| c as u32);
    // Pods created over the Job's life: completions when set, else the
    // parallelism (a NonIndexed Job without completions ends when one
    // pod succeeds and the rest stop).
    let pods = completions.unwrap_or(parallelism);
    let containers = spec["template"]["spec"]["containers"]
        .as_array()
        .map_or(0, |c| c.len()) as u32;
    (pods, pods * containers)
}

/// The shape of one rendered instance of `mode` (default release).
pub fn shape(mode: Mode, p: &ThorParams) -> Result<Shape> {
    shape_for(mode, default_minor(), p)
}

/// The shape of one rendered instance of `mode` on Kubernetes 1.`minor`.
pub fn shape_for(mode: Mode, minor: u32, p: &ThorParams) -> Result<Shape> {
    let mut s = Shape::default();
    let ts = templates_for(mode, minor);
    if ts.is_empty() {
        bail!(
            "{} mode has no template for Kubernetes 1.{minor}",
            mode.name()
        );
    }
    for t in ts {
        for doc in render(&t, p)? {
            let kind = doc["kind"].as_str().unwrap_or("?").to_string();
            *s.client_objects.entry(kind.clone()).or_default() += 1;
            match kind.as_str() {
                "Job" => {
                    let (pods, containers) = count_job(&doc["spec"]);
                    s.pods += pods;
                    s.containers += containers;
                }
                "JobSet" => {
                    for rj in doc["spec"]["replicatedJobs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        let replicas = rj["replicas"].as_u64().unwrap_or(1) as u32;
                        *s.controller_objects.entry("Job".into()).or_default() += replicas;
                        let (pods, containers) = count_job(&rj["template"]["spec"]);
                        s.pods += replicas * pods;
                        s.containers += replicas * containers;
                    }
                    // JobSet makes a headless Service for pod DNS names
                    // unless enableDNSHostnames is false.
                    if doc["spec"]["network"]["enableDNSHostnames"] != false {
                        *s.controller_objects.entry("Service".into()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(workers: u32, per_pod: u32, dns: bool) -> ThorParams {
        ThorParams {
            thor_name: "thor".into(),
            job_name: "thor-6d9f7c8b5d-x2v9k-1".into(),
            num_workers: workers,
            num_workers_per_pod: per_pod,
            job_version: "10.8.0".into(),
            pod_runtime: "30s".into(),
            namespace: "thor-test".into(),
            dns_hostnames: dns,
        }
    }

    #[test]
    fn baseline_counts_its_workers_pods_and_containers() {
        let s = shape(Mode::Baseline, &params(8, 2, false)).unwrap();
        assert_eq!(
            (s.pods, s.containers, s.client_objects.len()),
            (1 + 4, 2 + 4 * 3, 2)
        );
    }

    #[test]
    fn jobset_makes_a_service_only_with_dns_hostnames() {
        for dns in [false, true] {
            let s = shape_for(Mode::Jobset, 37, &params(4, 1, dns)).unwrap();
            assert_eq!(
                (s.pods, s.containers, s.client_objects["NetworkPolicy"]),
                (5, 10, 2)
            );
            assert_eq!(s.controller_objects.contains_key("Service"), dns);
        }
    }

    #[test]
    fn gang_modes_add_a_workload_and_a_podgroup() {
        let p = params(4, 2, false);
        for minor in crate::workload::thor::template::GANG_MINORS {
            let s = shape_for(Mode::JobsetGang, *minor, &p).unwrap();
            assert_eq!((s.pods, s.client_objects.values().sum::<u32>()), (3, 5));
        }
        assert!(shape_for(Mode::JobsetGang, 35, &p).is_err());
    }

    #[test]
    fn workers_per_pod_must_divide() {
        assert!(shape(Mode::Baseline, &params(10, 3, false)).is_err());
        assert!(shape(Mode::Baseline, &params(0, 1, false)).is_err());
    }
}
