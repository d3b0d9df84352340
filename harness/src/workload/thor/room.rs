//! How much room a scenario's nodes have for Thor instances: what the
//! Thor containers request (`capacity`), one instance's CPU read from its
//! rendered pods, and the nodes' CPU that `capacity` asks for.

use crate::workload::thor::capacity::{self, ThorResources};
use crate::workload::thor::scenario::ThorScenario;
use crate::workload::thor::template::Mode;

impl ThorScenario {
    /// What the Thor containers request.
    pub fn resources(&self) -> ThorResources {
        ThorResources {
            manager: self.thor.manager_resources.clone().unwrap_or_default(),
            worker: self.thor.worker_resources.clone().unwrap_or_default(),
        }
    }

    /// One instance's CPU in millicores, read from its rendered pods
    /// (sidecars included), when the Thor containers request CPU.
    pub fn instance_cpu_milli(&self) -> Option<u64> {
        let resources = self.resources();
        if !resources.has_cpu() {
            return None;
        }
        let p = crate::workload::thor::template::ThorParams {
            thor_name: self.thor.name.clone(),
            job_name: format!("{}-room-1", self.thor.name),
            num_workers: self.thor.num_workers,
            num_workers_per_pod: self.thor.num_workers_per_pod,
            job_version: crate::tools::versions::HPCC_CHART_VERSION.into(),
            pod_runtime: "1s".into(),
            namespace: "default".into(),
            dns_hostnames: false,
        };
        let mut docs = Vec::new();
        for t in crate::workload::thor::template::templates_for(Mode::Baseline, 0) {
            docs.extend(crate::workload::thor::template::render(&t, &p).ok()?);
        }
        resources.apply(&mut docs);
        Some(capacity::pods_cpu_milli(&docs))
    }

    /// Each node's CPU: `cluster.nodeCpu`, or what `capacity` makes room
    /// for (checked by `problems`: one of the two is given).
    pub fn node_cpu(&self) -> String {
        match (&self.capacity, self.instance_cpu_milli()) {
            (Some(c), Some(per)) => {
                format!("{}m", capacity::node_cpu_milli(c, per, self.cluster.nodes))
            }
            _ => self.cluster.node_cpu.clone().unwrap_or_default(),
        }
    }

    /// Every node's CPU together, in millicores.
    pub fn total_cpu_milli(&self) -> Result<u64, String> {
        Ok(capacity::cpu_milli(&self.node_cpu())? * u64::from(self.cluster.nodes))
    }

    /// Room for how many whole instances the nodes' CPU has (None when
    /// the Thor pods request no CPU).
    pub fn room_for_instances(&self) -> Option<f64> {
        let per = self.instance_cpu_milli()?;
        let total = self.total_cpu_milli().ok()?;
        (per > 0).then(|| total as f64 / per as f64)
    }
}

#[cfg(test)]
mod tests {
    use crate::workload::thor::scenario::load;

    /// The contention scenario's room is what its `capacity` says, counted
    /// over every pod's containers: the postrun sidecars' CPU too.
    #[test]
    fn the_contention_scenario_has_room_for_exactly_its_capacity() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let s = load(&root.join("suites/thor/contention.yaml")).unwrap();
        let per = s.instance_cpu_milli().unwrap();
        let pods = 1 + s.thor.num_workers / s.thor.num_workers_per_pod;
        assert!(per > u64::from(pods) * 1000, "sidecars not counted: {per}m");
        let want = s.capacity.as_ref().unwrap().instances;
        assert_eq!(s.room_for_instances(), Some(want));
        assert_eq!(s.node_cpu(), format!("{}m", (want * per as f64) as u64));
    }
}
