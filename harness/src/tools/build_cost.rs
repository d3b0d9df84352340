//! How long each binary takes to build from Go modules, as measured: what
//! `doctor` tells a user to expect and the order builds start in when
//! they run side by side (`Resolver::resolve_many` and the test runner's
//! build trials: the longest chain first, so it is not left for last).

use std::cmp::Reverse;
use std::collections::BTreeMap;
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

/// Put builds in the order they should start when they go side by side,
/// one per Go source tree at a time (`side_by_side`): the builds of one
/// tree run one after another, so a tree is a chain, and the chain that
/// takes longest together (by `cost`) goes first; within a tree the
/// biggest build first (the others reuse its packages). Ties keep their
/// order. Measured why: on a fresh machine (72a4cae) the test runner
/// started Kubernetes 1.36's tree (API server 9 min 8 s, then its
/// controller-manager, scheduler and kubectl) 7 min after its first
/// build, behind the real node's smaller builds, and every 1.36 test and
/// the quiet tests after them waited for that chain's end.
pub fn longest_chain_first<T>(
    items: &mut [T],
    tree: impl Fn(&T) -> String,
    cost: impl Fn(&T) -> Duration,
) {
    let mut chains: BTreeMap<String, Duration> = BTreeMap::new();
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    for (i, x) in items.iter().enumerate() {
        *chains.entry(tree(x)).or_default() += cost(x);
        first.entry(tree(x)).or_insert(i);
    }
    items.sort_by_cached_key(|x| {
        let t = tree(x);
        (Reverse(chains[&t]), first[&t], Reverse(cost(x)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_tree_goes_first_whole_and_its_biggest_build_leads_it() {
        // (name, tree, seconds): tree "k" takes 300 s together, "c" 163 s,
        // "q" 214 s.
        let mut builds = vec![
            ("containerd", "c", 134),
            ("shim", "c", 20),
            ("ctr", "c", 9),
            ("scheduler", "k", 7),
            ("apiserver", "k", 200),
            ("controller-manager", "k", 93),
            ("kueue", "q", 151),
            ("perf-runner", "q", 63),
        ];
        longest_chain_first(
            &mut builds,
            |b| b.1.to_string(),
            |b| Duration::from_secs(b.2),
        );
        let names: Vec<&str> = builds.iter().map(|b| b.0).collect();
        assert_eq!(
            names,
            [
                "apiserver",
                "controller-manager",
                "scheduler",
                "kueue",
                "perf-runner",
                "containerd",
                "shim",
                "ctr"
            ]
        );
    }

    #[test]
    fn equal_chains_keep_their_order() {
        let mut builds = vec![("b", "t2", 10), ("a", "t1", 10)];
        longest_chain_first(
            &mut builds,
            |b| b.1.to_string(),
            |b| Duration::from_secs(b.2),
        );
        assert_eq!(builds[0].0, "b");
    }
}
