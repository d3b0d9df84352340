//! Thor's pods on real nodes (`bench thor --real-node`, scenario
//! `cluster.realNode`): their containers really run, so HPCC's image
//! (hpccsystems/platform-core, which this machine cannot pull and whose
//! processes need Dali, ESP and the rest of HPCC) gives way to a tiny real
//! one: agnhost's `netexec`, one HTTP port per container. A process exits
//! when the driver tells its container to (`GET /exit?code=N`; agnhost
//! netexec/netexec.go `exitHandler` calls os.Exit with the code), where on
//! kwok's nodes the driver patches the pod's status instead
//! (driver::kubelet). Everything else of HPCC's pod spec stays as the
//! chart renders it: the volumes (the storage claims really mount), env
//! with its field references, the security context (uid 10000, read-only
//! root), resources, and the preStop hook — which runs agnhost's
//! `entrypoint-tester` (prints its arguments, exits 0) where HPCC runs
//! k8s_postjob_clearup.sh. Pods may be kept to some nodes by name (the
//! real ones of a cluster that has kwok's too), the node affinity HPCC's
//! `placements` values would give them.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use crate::workload::thor::template::pod_templates_mut;

/// The postrun sidecar's container name (the chart's): it exits when it
/// notices its main containers have.
pub const SIDECAR: &str = "postrun";
/// The first container of a pod listens here, the next one port up.
pub const FIRST_PORT: u16 = 8080;
const PORT_FLAG: &str = "--http-port=";
/// The label every node carries with its name.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// How Thor's pods are made to run on real nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealPods {
    /// An image whose entrypoint path `/agnhost` is agnhost.
    pub image: String,
    /// The nodes the pods may run on; empty: wherever the scheduler puts
    /// them.
    pub nodes: Vec<String>,
}

impl RealPods {
    /// Make the pod templates of rendered `docs` (Jobs, JobSets) run here.
    pub fn apply(&self, docs: &mut [Value]) {
        for d in docs.iter_mut() {
            for t in pod_templates_mut(d) {
                if !self.nodes.is_empty() {
                    t["spec"]["affinity"]["nodeAffinity"] = json!({
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [
                                {"key": HOSTNAME_LABEL, "operator": "In", "values": self.nodes},
                            ]},
                        ]},
                    });
                }
                if let Some(cs) = t["spec"]["containers"].as_array_mut() {
                    for (i, c) in cs.iter_mut().enumerate() {
                        self.container(c, FIRST_PORT + i as u16);
                    }
                }
            }
        }
    }

    fn container(&self, c: &mut Value, port: u16) {
        c["image"] = json!(self.image);
        c["command"] = json!(["/agnhost"]);
        // No UDP server: its fixed default port would clash between the
        // containers of one pod.
        c["args"] = json!(["netexec", format!("{PORT_FLAG}{port}"), "--udp-port=-1"]);
        if c["lifecycle"]["preStop"]["exec"].is_object() {
            c["lifecycle"]["preStop"]["exec"]["command"] = json!(["/agnhost", "entrypoint-tester"]);
        }
    }
}

/// One container of a pod that the driver can tell to exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitPort {
    pub container: String,
    pub port: u16,
    /// The postrun sidecar (it exits after the main containers).
    pub sidecar: bool,
    /// Its status says it runs.
    pub running: bool,
}

/// The containers of `pod` with their netexec port (from the arguments
/// `RealPods::apply` gave them), in the pod's order.
pub fn exit_ports(pod: &Pod) -> Vec<ExitPort> {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.clone())
        .unwrap_or_default();
    let running = |name: &str| {
        statuses
            .iter()
            .any(|s| s.name == name && s.state.as_ref().is_some_and(|st| st.running.is_some()))
    };
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice());
    containers
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            let port = c
                .args
                .as_ref()?
                .iter()
                .find_map(|a| a.strip_prefix(PORT_FLAG)?.parse().ok())?;
            Some(ExitPort {
                container: c.name.clone(),
                port,
                sidecar: c.name == SIDECAR,
                running: running(&c.name),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::thor::template::{Mode, ThorParams, compile_job, render, templates_for};

    fn params() -> ThorParams {
        ThorParams {
            thor_name: "thor".into(),
            job_name: "thor-abc-1".into(),
            num_workers: 4,
            num_workers_per_pod: 2,
            job_version: "10.0.0".into(),
            pod_runtime: "24h".into(),
            namespace: "default".into(),
            dns_hostnames: false,
        }
    }

    fn real() -> RealPods {
        RealPods {
            image: "harness.local/agnhost:v1.37.1".into(),
            nodes: vec!["real-node-0".into()],
        }
    }

    fn rendered(mode: Mode) -> Vec<Value> {
        let mut docs: Vec<Value> = templates_for(mode, 37)
            .iter()
            .flat_map(|t| render(t, &params()).unwrap())
            .collect();
        docs.extend(render(&compile_job(), &params()).unwrap());
        real().apply(&mut docs);
        docs
    }

    #[test]
    fn every_container_of_every_mode_runs_netexec_on_a_port_of_its_own() {
        for mode in Mode::ALL {
            let mut docs = rendered(mode);
            let mut pods = 0;
            for d in docs.iter_mut() {
                for t in pod_templates_mut(d) {
                    pods += 1;
                    let term = t.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0").unwrap();
                    assert_eq!(term["key"], HOSTNAME_LABEL);
                    assert_eq!(term["values"], json!(["real-node-0"]));
                    let pod: Pod =
                        serde_json::from_value(json!({"spec": t["spec"].clone()})).unwrap();
                    let ports = exit_ports(&pod);
                    let cs = t["spec"]["containers"].as_array().unwrap();
                    assert_eq!(
                        ports.len(),
                        cs.len(),
                        "{mode:?}: a container without a port"
                    );
                    let mut seen: Vec<u16> = ports.iter().map(|p| p.port).collect();
                    seen.sort();
                    seen.dedup();
                    assert_eq!(
                        seen.len(),
                        ports.len(),
                        "{mode:?}: two containers share a port"
                    );
                    for c in cs {
                        assert_eq!(c["image"], real().image);
                        assert_eq!(c["command"], json!(["/agnhost"]));
                        // HPCC's own settings stay.
                        assert!(c["volumeMounts"].is_array(), "{mode:?}: mounts dropped");
                    }
                    assert_eq!(
                        ports.iter().filter(|p| p.sidecar).count(),
                        cs.iter().filter(|c| c["name"] == SIDECAR).count()
                    );
                }
            }
            assert!(pods >= 3, "{mode:?}: {pods} pod templates");
        }
    }

    #[test]
    fn the_prestop_hook_runs_a_command_the_image_has() {
        let docs = rendered(Mode::Baseline);
        let hooks: Vec<&Value> = docs
            .iter()
            .flat_map(|d| {
                d.pointer("/spec/template/spec/containers")
                    .and_then(Value::as_array)
            })
            .flatten()
            .filter_map(|c| c.pointer("/lifecycle/preStop/exec/command"))
            .collect();
        assert!(!hooks.is_empty(), "HPCC's templates have preStop hooks");
        for h in hooks {
            assert_eq!(h, &json!(["/agnhost", "entrypoint-tester"]));
        }
    }

    #[test]
    fn no_node_given_leaves_placement_to_the_scheduler() {
        let mut docs: Vec<Value> = render(&compile_job(), &params()).unwrap();
        RealPods {
            nodes: Vec::new(),
            ..real()
        }
        .apply(&mut docs);
        assert!(docs[0].pointer("/spec/template/spec/affinity").is_none());
    }
}
