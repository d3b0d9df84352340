//! The local control plane as data: each component's binary, command line,
//! health check, start-up timeout and whether the next one waits for it —
//! returned by one pure function in start order (as kwokctl's components
//! are), so `LocalCluster` starts the list and `status` checks the same
//! health endpoints.

use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cluster::client::{client_from_kubeconfig, client_get, http_get};
use crate::cluster::local::flags::{self, Gates};
use crate::cluster::local::layout::{Layout, Ports};
use crate::cluster::local::realnode::{self, Placement};
#[cfg(test)]
use crate::cluster::profile::STOCK;
use crate::cluster::profile::Settings;
use crate::cluster::spec::KueueSpec;
use crate::k8s::K8sRelease;
use crate::tools::Component;

/// Component names, in start order.
pub const ETCD: &str = "etcd";
pub const APISERVER: &str = "kube-apiserver";
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub const SCHEDULER: &str = "kube-scheduler";
pub const JOBSET: &str = "jobset-controller";
pub const KWOK: &str = "kwok";
/// Only on clusters whose spec asks for Kueue (its name lives with the rest
/// of Kueue's process in kueue.rs, which this list imports one way).
pub use crate::cluster::local::kueue::NAME as KUEUE;

/// How to tell that a component serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// etcd's `/health` says `"health":"true"`.
    Etcd { url: String },
    /// GET `path` through a kubeconfig (client certificates, the cluster
    /// CA) answers "ok": the API server's /readyz, the controller
    /// manager's and scheduler's /healthz.
    Kube {
        kubeconfig: std::path::PathBuf,
        path: &'static str,
    },
    /// A plain HTTP GET on loopback answers 2xx.
    Http { url: String },
    /// A unix socket accepts a connection (containerd's).
    Socket { path: std::path::PathBuf },
}

/// When start-up waits for a component to be healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Before the next component starts (what the others need).
    Before,
    /// Once every component has started.
    AfterAll,
    /// Started only once `up` installed its CRDs and RBAC (Kueue's manager
    /// exits at start when they are missing: "Unable to setup indexes";
    /// JobSet's comes up, but its informers' refused first lists back off
    /// for seconds), then waited for like `Before`.
    StartAfterInstall,
}

/// How long the API server, controller-manager and scheduler may take
/// to be ready: kubeadm's wait for a control plane component (what kind's
/// nodes wait), `cmd/kubeadm/app/constants/constants.go`,
/// `ControlPlaneComponentHealthCheckTimeout` (4 min). It was 2 min for the
/// API server; in CI of 36ad95b, on a 2-core machine at load 28, the API
/// server's `rbac/bootstrap-roles` start hook had not finished within it.
/// A component that exits is named at once whatever this is.
pub const CONTROL_PLANE_READY: Duration = Duration::from_secs(240);

/// One process of the local control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentDef {
    pub name: &'static str,
    pub binary: Component,
    pub args: Vec<String>,
    pub health: Health,
    pub timeout: Duration,
    pub wait: Wait,
    /// Run with this directory laid over /etc in a private mount
    /// namespace (Kueue reads a fixed path there; see kueue.rs).
    pub etc_overlay: Option<std::path::PathBuf>,
    /// More environment (containerd finds its shim on PATH).
    pub env: Vec<(&'static str, String)>,
}

/// Every component of a local cluster, in start order (Kueue after JobSet
/// when `kueue` is given).
pub fn components(
    k8s: K8sRelease,
    l: &Layout,
    ports: &Ports,
    gates: &Gates,
    cp: &Settings,
    kueue: Option<&KueueSpec>,
    real_node: Option<&Placement>,
) -> Vec<ComponentDef> {
    let with = |mut args: Vec<String>, more: Vec<String>| {
        args.extend(more);
        args
    };
    let healthz = |name: &str| Health::Kube {
        kubeconfig: l.kubeconfig(&format!("{name}-health")),
        path: "/healthz",
    };
    let mut list = vec![
        ComponentDef {
            name: ETCD,
            binary: Component::Etcd,
            args: flags::etcd(l, ports),
            health: Health::Etcd {
                url: format!("{}/health", ports.etcd_url()),
            },
            timeout: Duration::from_secs(30),
            wait: Wait::Before,
            etc_overlay: None,
            env: vec![],
        },
        ComponentDef {
            name: APISERVER,
            binary: Component::KubeApiserver,
            args: with(flags::apiserver(k8s, l, ports, gates), cp.apiserver_flags()),
            health: Health::Kube {
                kubeconfig: l.admin_kubeconfig(),
                path: "/readyz",
            },
            timeout: CONTROL_PLANE_READY,
            wait: Wait::Before,
            etc_overlay: None,
            env: vec![],
        },
        ComponentDef {
            name: CONTROLLER_MANAGER,
            binary: Component::KubeControllerManager,
            args: with(
                flags::controller_manager(k8s, l, ports, gates),
                cp.controller_manager_flags(),
            ),
            health: healthz(CONTROLLER_MANAGER),
            timeout: CONTROL_PLANE_READY,
            wait: Wait::AfterAll,
            etc_overlay: None,
            env: vec![],
        },
        ComponentDef {
            name: SCHEDULER,
            binary: Component::KubeScheduler,
            args: with(flags::scheduler(k8s, l, ports, gates), cp.scheduler_flags()),
            health: healthz(SCHEDULER),
            timeout: CONTROL_PLANE_READY,
            wait: Wait::AfterAll,
            etc_overlay: None,
            env: vec![],
        },
        ComponentDef {
            name: JOBSET,
            binary: Component::Jobset,
            args: with(flags::jobset(l, ports), cp.jobset_flags()),
            health: Health::Http {
                url: format!("http://127.0.0.1:{}/readyz", ports.jobset_health),
            },
            timeout: Duration::from_secs(60),
            wait: Wait::StartAfterInstall,
            etc_overlay: None,
            env: vec![],
        },
    ];
    if kueue.is_some() {
        list.push(ComponentDef {
            name: KUEUE,
            binary: Component::Kueue,
            args: crate::cluster::local::kueue::args(l),
            health: Health::Http {
                url: format!("http://127.0.0.1:{}/readyz", ports.kueue_health),
            },
            timeout: Duration::from_secs(90),
            wait: Wait::StartAfterInstall,
            etc_overlay: Some(l.kueue_etc()),
            env: vec![],
        });
    }
    list.push(ComponentDef {
        name: KWOK,
        binary: Component::Kwok,
        args: flags::kwok(l, ports),
        health: Health::Http {
            url: format!("http://127.0.0.1:{}/healthz", ports.kwok),
        },
        timeout: Duration::from_secs(30),
        wait: Wait::AfterAll,
        etc_overlay: None,
        env: vec![],
    });
    if let Some(placement) = real_node {
        let d = l.node();
        let path = std::env::var("PATH").unwrap_or_default();
        list.push(ComponentDef {
            name: realnode::CONTAINERD,
            binary: Component::Containerd,
            args: vec![format!("--config={}", d.containerd_config().display())],
            health: Health::Socket { path: d.socket() },
            timeout: Duration::from_secs(30),
            // The node's image is imported before the kubelet starts.
            wait: Wait::Before,
            etc_overlay: None,
            env: vec![("PATH", format!("{}:{path}", d.bin().display()))],
        });
        list.push(ComponentDef {
            name: realnode::KUBELET,
            binary: Component::Kubelet,
            args: realnode::kubelet_args(l, placement),
            health: Health::Http {
                url: format!("http://127.0.0.1:{}/healthz", ports.kubelet_healthz),
            },
            timeout: Duration::from_secs(60),
            wait: Wait::AfterAll,
            etc_overlay: None,
            env: vec![],
        });
    }
    list
}

impl Health {
    /// Ask once; the answer's body when healthy.
    pub async fn check(&self) -> Result<String> {
        match self {
            Health::Etcd { url } => {
                let body = http_get(url).await?;
                if body.contains("\"health\":\"true\"") {
                    Ok(body)
                } else {
                    bail!("etcd /health says {body}")
                }
            }
            Health::Kube { kubeconfig, path } => {
                let client = client_from_kubeconfig(kubeconfig).await?;
                let body = client_get(&client, path).await?;
                if body.trim() == "ok" {
                    Ok(body)
                } else {
                    bail!("{path} says {body}")
                }
            }
            Health::Http { url } => http_get(url).await,
            Health::Socket { path } => tokio::net::UnixStream::connect(path)
                .await
                .map(|_| "accepts connections".to_string())
                .with_context(|| format!("connecting to {}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_order_waits_and_health_endpoints() {
        let l = Layout::new("/s");
        let ports = Ports::from_list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        let k8s = K8sRelease::default_release();
        let c = components(k8s, &l, &ports, &Gates::default(), &STOCK, None, None);
        let names: Vec<&str> = c.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [ETCD, APISERVER, CONTROLLER_MANAGER, SCHEDULER, JOBSET, KWOK]
        );
        // Only what the others need is waited for before the next starts.
        let before: Vec<&str> = c
            .iter()
            .filter(|c| c.wait == Wait::Before)
            .map(|c| c.name)
            .collect();
        assert_eq!(before, [ETCD, APISERVER]);
        assert_eq!(
            c[1].health,
            Health::Kube {
                kubeconfig: l.admin_kubeconfig(),
                path: "/readyz"
            }
        );
        assert!(c.iter().all(|c| !c.args.is_empty() && !c.timeout.is_zero()));
        // Kueue only when asked for, after JobSet, started after install.
        let k = components(
            k8s,
            &l,
            &ports,
            &Gates::default(),
            &STOCK,
            Some(&KueueSpec::default()),
            None,
        );
        let names: Vec<&str> = k.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                ETCD,
                APISERVER,
                CONTROLLER_MANAGER,
                SCHEDULER,
                JOBSET,
                KUEUE,
                KWOK
            ]
        );
        // The controllers start once their CRDs and RBAC are in place.
        assert_eq!(k[4].wait, Wait::StartAfterInstall);
        assert_eq!(k[5].wait, Wait::StartAfterInstall);
        assert_eq!(k[5].binary, Component::Kueue);
    }
}
