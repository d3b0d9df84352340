//! How long each binary takes to build from Go modules, as measured: what
//! `doctor` tells a user to expect and the order builds start in when
//! they run side by side (`Resolver::resolve_many`: the biggest first, so
//! the longest build is not left for last).

use std::time::Duration;

use crate::tools::component::Component;

/// Cold build times measured on a 2-core machine (docs/src/binaries.md, "How binaries
/// are found or built", the cold column: a fresh machine, empty Go caches,
/// module downloads included): an estimate for this machine. The
/// controller-manager, scheduler and kubectl times follow a build of
/// kube-apiserver, whose packages they share; Kueue's and HPCC's kubectl's
/// follow the Kubernetes builds, whose modules they share.
pub fn cold_build_estimate(c: Component) -> Duration {
    let s = match c {
        Component::Etcd => 34,
        Component::KubeApiserver => 197,
        Component::KubeControllerManager => 65,
        Component::KubeScheduler => 7,
        Component::Kubectl => 16,
        Component::Kwok => 51,
        Component::Jobset => 61,
        Component::Kueue => 151,
        // After Kueue's controller (2026-11-26, this machine: its tree's
        // tidy and the build, 63 s).
        Component::KueuePerfRunner => 63,
        Component::HpccKubectl => 53,
        // A real node's (2026-11-24, this machine, after the Kubernetes
        // builds, two builds at a time; not yet measured on a fresh one).
        Component::Kubelet => 292,
        Component::Agnhost => 30,
        Component::Containerd => 134,
        Component::ContainerdShim => 20,
        Component::Ctr => 9,
        Component::Runc => 16,
        Component::CniBridge => 8,
        Component::CniHostLocal => 2,
        Component::CniLoopback => 1,
        // A kind node's (2026-11-26, this machine, after the Kubernetes
        // and real-node builds).
        Component::Kubeadm => 60,
        Component::KubeProxy => 40,
        Component::Crictl => 40,
        Component::Coredns => 150,
        Component::Kind => 30,
        // Measured 2026-11-29 (its module's downloads included): 115 s.
        Component::Registry => 115,
    };
    Duration::from_secs(s)
}
