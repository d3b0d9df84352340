//! What the run's tests need built, built first: one trial per binary
//! that a selected test runs and this machine does not have at hand
//! (`AtHand`), `[build] <name> v<version>`, two at a time (one per Go
//! source tree) at the head of the line (`crate::runner`). A test that needs one waits
//! for it without holding a slot, so the tests that need nothing built run
//! meanwhile.
//!
//! Why: built on demand, by the first test that asks, every missing binary
//! was built at once beside the trials that wait for them. On a fresh
//! machine (3c05235) kueue-controller took 9 min 11 s that way and
//! kube-apiserver 1.36 8 min 27 s, against 3 min 34 s and 2 min 45 s built
//! alone, while the trials waiting for them held their slots.
//!
//! A build that fails fails its trial; the tests waiting for it then start
//! and resolve the binary themselves, so each says what it lacks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex};

use harness::k8s::K8sRelease;
use harness::tools::build_cost::{cold_build_estimate, longest_chain_first};
use harness::tools::side_by_side::{self, BUILDS_AT_ONCE};
use harness::tools::{Component, Resolver};

/// A binary a test runs: a component at the release it is used with.
pub type Need = (K8sRelease, Component);

/// A local cluster of the default release (`crate::test_spec`'s) and
/// `extra` beside it: what most tests run.
pub fn default_cluster_and(extra: &[Component]) -> Vec<Need> {
    let k8s = K8sRelease::default_release();
    Component::CLUSTER
        .iter()
        .chain(extra)
        .map(|&c| (k8s, c))
        .collect()
}

/// One binary, whatever release asks for it: its name and version.
pub type Binary = (&'static str, String);

pub fn binary((k8s, c): Need) -> Binary {
    (c.name(), c.version(k8s))
}

/// The trial's name: `kube-apiserver v1.36.4`.
pub fn trial_name(b: &Binary) -> String {
    format!("{} v{}", b.0, b.1)
}

/// Whether each binary is at hand, asked once per binary: what
/// `Resolver::find` takes without building (a flag, an environment
/// variable, PATH or the cache, at the pinned version). A binary on PATH
/// at another version, such as Debian's containerd beside its Docker, is
/// not: the test would build it.
#[derive(Default)]
pub struct AtHand(Mutex<BTreeMap<Binary, bool>>);

impl AtHand {
    pub fn get(&self, n @ (k8s, c): Need) -> bool {
        let b = binary(n);
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *known
            .entry(b)
            .or_insert_with(|| Resolver::from_env(k8s, BTreeMap::new()).find(c).is_ok())
    }
}

/// The binaries to build first: those the tests' needs (`tests`, one
/// list per selected test) name that are not at hand, in the order their
/// builds start ([`Builds::wait_turn`]: the builds of one Go source tree
/// go one after another, a chain).
///
/// The longest chains lead, one per build slot (`longest_chain_first`):
/// the run's builds end no later than the longest. Every other build goes
/// in the order that lets the most tests start per second of build: again
/// and again, of the sets of builds some test still waits for, the one
/// whose tests per estimated second is highest (Smith's rule, by test).
///
/// Measured why (a fresh machine, 944d87a): the chains went by length, so
/// HPCC's kubectl — 2 min 38 s, with about fifty tests waiting for it — was
/// built last, 9:22–12:00, and those tests ran after the builds with the
/// cores half idle until 17:53; the real node's CNI plugins and runc,
/// seconds each, came after the registry, and its lane started at 12:00.
pub fn plan(tests: &[Vec<Need>], at_hand: impl Fn(Need) -> bool) -> Vec<(Binary, Need)> {
    let mut seen = BTreeSet::new();
    let mut by_chain: Vec<(Binary, Need)> = tests
        .iter()
        .flatten()
        .filter(|&&n| seen.insert(binary(n)) && !at_hand(n))
        .map(|&n| (binary(n), n))
        .collect();
    longest_chain_first(
        &mut by_chain,
        |(_, n)| tree(*n),
        |(_, (_, c))| cold_build_estimate(*c),
    );
    // Each chain's first build, the longest chains' first.
    let mut heads: Vec<usize> = Vec::new();
    let mut trees = BTreeSet::new();
    for (i, (_, n)) in by_chain.iter().enumerate() {
        if heads.len() < AT_ONCE && trees.insert(tree(*n)) {
            heads.push(i);
        }
    }
    let mut placed: BTreeSet<usize> = heads.iter().copied().collect();
    let mut order = heads;
    let position = |n: Need| by_chain.iter().position(|(b, _)| *b == binary(n));
    let waits: Vec<BTreeSet<usize>> = tests
        .iter()
        .map(|t| t.iter().filter_map(|&n| position(n)).collect())
        .collect();
    let cost = |set: &BTreeSet<usize>| -> u64 {
        set.iter()
            .map(|&i| cold_build_estimate(by_chain[i].1.1).as_secs().max(1))
            .sum()
    };
    loop {
        let missing: Vec<BTreeSet<usize>> = waits
            .iter()
            .map(|w| w.difference(&placed).copied().collect::<BTreeSet<usize>>())
            .filter(|m| !m.is_empty())
            .collect();
        // The set whose tests start soonest per second: tests whose every
        // missing build it holds, over its builds' estimated seconds
        // (compared as cross products: whole numbers, the first of equals).
        let Some((set, _)) = missing
            .iter()
            .map(|set| {
                let started = missing.iter().filter(|m| m.is_subset(set)).count() as u64;
                (set, (started, cost(set)))
            })
            .reduce(|best, next| {
                let ((_, (bt, bc)), (_, (nt, nc))) = (&best, &next);
                if nt * bc > bt * nc { next } else { best }
            })
        else {
            break;
        };
        order.extend(set.iter().copied());
        placed.extend(set.iter().copied());
    }
    order.extend((0..by_chain.len()).filter(|i| !placed.contains(i)));
    order.into_iter().map(|i| by_chain[i].clone()).collect()
}

/// How many builds run at once: the harness's bound for builds side by
/// side (`harness::tools::side_by_side::BUILDS_AT_ONCE`), one for `up`
/// and this runner. On a fresh machine (2 cores), every
/// build at once beside the tests made the test command 31 min 29 s
/// (3c05235); one at a time 27 min 45 s (976b315), the quiet tests taking
/// the gaps between builds; the run where the real node's containerd was
/// built beside the build lane (two at once for 3 min 20 s of it) 25 min
/// 48 s (14bb588). A Go build does not keep both cores busy throughout
/// (module downloads, links).
pub const AT_ONCE: usize = BUILDS_AT_ONCE;

/// The Go source tree `n` is built in (`GoSource::tree`): builds of one
/// tree share its lock and its build cache, so they go one at a time.
fn tree((k8s, c): Need) -> String {
    c.go_source(k8s).tree
}

/// The builds of one run: those still to finish, in the plan's order,
/// each with its source tree.
#[derive(Default)]
pub struct Builds {
    pending: Mutex<Vec<(Binary, String)>>,
    changed: Condvar,
}

impl Builds {
    /// `n`'s binary will be built by a trial of this run, after those
    /// expected before it.
    pub fn expect(&self, n: Need) {
        let (b, mut p) = (binary(n), self.lock());
        if !pending(&p, &b) {
            p.push((b, tree(n)));
        }
    }

    /// `b`'s trial is over: built, failed, or never started (an
    /// interrupted run). Said by [`Done`] when it drops.
    fn finished(&self, b: &Binary) {
        self.lock().retain(|(x, _)| x != b);
        self.changed.notify_all();
    }

    /// Said when dropped, however the build trial ends.
    pub fn done_on_drop(&self, b: Binary) -> Done<'_> {
        Done { builds: self, b }
    }

    /// Wait until `b` may be built: among the first [`AT_ONCE`] builds
    /// still to finish, in the plan's order, of those with no earlier
    /// build of their tree still to finish. A second build of a tree
    /// would only wait for its lock while holding a turn: on a fresh
    /// machine containerd's shim waited 68.5 s that way and kube-scheduler
    /// 1.36 80.1 s (327343b), while builds of other trees waited for the
    /// turn.
    pub fn wait_turn(&self, b: &Binary) {
        let mut p = self.lock();
        while pending(&p, b) && !may_start(&p, b) {
            p = self.changed.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wait until none of `needs` is still being built by this run.
    pub fn wait_for(&self, needs: &[Need]) {
        let mine: Vec<Binary> = needs.iter().map(|&n| binary(n)).collect();
        let mut p = self.lock();
        while mine.iter().any(|b| pending(&p, b)) {
            p = self.changed.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wait until every build of this run is over.
    pub fn wait_for_all(&self) {
        let mut p = self.lock();
        while !p.is_empty() {
            p = self.changed.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Binary, String)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `b` is still to be built.
fn pending(pending: &[(Binary, String)], b: &Binary) -> bool {
    pending.iter().any(|(x, _)| x == b)
}

/// Whether `b` is among the first [`AT_ONCE`] of the `pending` builds
/// whose tree has no earlier build pending: the harness's rule for builds
/// side by side.
fn may_start(pending: &[(Binary, String)], b: &Binary) -> bool {
    side_by_side::may_start(pending, b, AT_ONCE)
}

/// A build trial's end, said to the waiting tests when dropped.
pub struct Done<'a> {
    builds: &'a Builds,
    b: Binary,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.builds.finished(&self.b);
    }
}

/// Build (or download, as `HARNESS_SOURCE` says) one binary into the
/// harness cache: what a test asking for it would do.
pub fn build((k8s, c): Need) -> anyhow::Result<()> {
    let r = Resolver::from_env(k8s, BTreeMap::new()).resolve(c)?;
    eprintln!(
        "build: {} v{} at {} ({:?})",
        r.component,
        r.version,
        r.path.display(),
        r.source
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::k8s::K8S_RELEASES;
    use std::sync::Arc;

    fn release(minor: &str) -> K8sRelease {
        *K8S_RELEASES.iter().find(|r| r.minor == minor).unwrap()
    }

    #[test]
    fn the_plan_builds_what_is_missing_once_the_longest_chains_leading() {
        let (r36, r37) = (release("1.36"), release("1.37"));
        let tests: Vec<Vec<Need>> = [
            (r37, Component::Etcd),
            (r37, Component::Runc),
            (r37, Component::Containerd),
            (r36, Component::KubeScheduler),
            (r36, Component::Kueue),
            (r37, Component::Kueue),
            (r36, Component::KubeApiserver),
            (r37, Component::KubeApiserver),
        ]
        .into_iter()
        .map(|n| vec![n])
        .collect();
        // Only etcd and 1.37's API server are at hand.
        let have = |n: Need| n == (r37, Component::Etcd) || n == (r37, Component::KubeApiserver);
        let plan: Vec<String> = plan(&tests, have)
            .iter()
            .map(|(b, _)| trial_name(b))
            .collect();
        let name = |n: Need| trial_name(&binary(n));
        // 1.36's tree (API server, then the scheduler that reuses its
        // packages) and Kueue's (one version for both releases: one
        // build) are the two longest chains: they lead, one per slot.
        // Then one test each: the shortest build first.
        assert_eq!(
            plan,
            [
                name((r36, Component::KubeApiserver)),
                name((r36, Component::Kueue)),
                name((r36, Component::KubeScheduler)),
                name((r37, Component::Runc)),
                name((r37, Component::Containerd)),
            ]
        );
    }

    #[test]
    fn after_the_leaders_the_builds_most_tests_wait_for_per_second_go_first() {
        let r = release("1.37");
        let kubectl = (r, Component::HpccKubectl);
        let node = vec![
            (r, Component::Kubelet),
            (r, Component::Containerd),
            (r, Component::Runc),
        ];
        let mut tests = vec![vec![kubectl]; 4];
        tests.push(node);
        tests.push(vec![(r, Component::Registry)]);
        tests.push(vec![(r, Component::Kueue)]);
        // One test waits for runc alone: it comes before containerd.
        tests.push(vec![(r, Component::Runc)]);
        let plan: Vec<&str> = plan(&tests, |_| false).iter().map(|(b, _)| b.0).collect();
        // The kubelet's and Kueue's chains are the longest; then HPCC's
        // kubectl (4 tests over 53 s estimated), runc (a test of its own
        // over 16 s), the registry (1 test over 115 s) and last the
        // node's containerd (1 test, when runc is built, over 134 s).
        assert_eq!(
            plan,
            [
                "kubelet",
                "kueue-controller",
                "hpcc-kubectl",
                "runc",
                "registry",
                "containerd"
            ]
        );
    }

    /// A thread waiting for `b`'s turn, 50 ms after it started: whether it
    /// is still waiting is `is_finished`.
    fn waits_turn(builds: &Arc<Builds>, b: &Binary) -> std::thread::JoinHandle<()> {
        let (builds, b) = (builds.clone(), b.clone());
        let t = std::thread::spawn(move || builds.wait_turn(&b));
        std::thread::sleep(std::time::Duration::from_millis(50));
        t
    }

    #[test]
    fn builds_take_their_turns_in_the_plans_order_two_at_once() {
        assert_eq!(AT_ONCE, 2);
        let builds = Arc::new(Builds::default());
        let r = release("1.36");
        let needs = [Component::Kueue, Component::Kwok, Component::Jobset].map(|x| (r, x));
        let [a, b, c] = needs.map(binary);
        for n in needs.into_iter().chain([needs[0]]) {
            builds.expect(n);
        }
        builds.wait_turn(&a);
        builds.wait_turn(&b);
        let third = waits_turn(&builds, &c);
        assert!(!third.is_finished(), "a third went while two were building");
        drop(builds.done_on_drop(b));
        third.join().unwrap();
    }

    #[test]
    fn a_trees_second_build_waits_for_its_first_and_lets_another_tree_go() {
        let builds = Arc::new(Builds::default());
        let r = release("1.36");
        // The API server and the scheduler share the Kubernetes tree.
        let needs = [
            Component::KubeApiserver,
            Component::KubeScheduler,
            Component::Kueue,
        ]
        .map(|x| (r, x));
        assert_eq!(tree(needs[0]), tree(needs[1]));
        let [api, scheduler, kueue] = needs.map(binary);
        for n in needs {
            builds.expect(n);
        }
        builds.wait_turn(&api);
        let second = waits_turn(&builds, &scheduler);
        assert!(!second.is_finished(), "the tree's second build went");
        // Third in the plan, yet the second of the trees with a turn.
        builds.wait_turn(&kueue);
        drop(builds.done_on_drop(api));
        second.join().unwrap();
    }

    fn waits(builds: &Builds, needs: &[Need]) -> bool {
        let p = builds.lock();
        needs.iter().any(|&n| pending(&p, &binary(n)))
    }

    #[test]
    fn a_test_waits_until_its_builds_are_over_however_they_end() {
        let builds = Arc::new(Builds::default());
        let r = release("1.36");
        let need = (r, Component::KubeApiserver);
        let other = (r, Component::Kueue);
        builds.expect(need);
        assert!(waits(&builds, &[need]));
        assert!(!waits(&builds, &[other]));
        // Nothing of `other` is built: no wait.
        builds.wait_for(&[other]);
        let waiter = {
            let builds = builds.clone();
            std::thread::spawn(move || builds.wait_for(&[need, other]))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished());
        // A trial that panicked or was never started ends it too.
        drop(builds.done_on_drop(binary(need)));
        waiter.join().unwrap();
        assert!(!waits(&builds, &[need]));
    }
}
