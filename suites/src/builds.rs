//! What the run's tests need built, built first: one trial per binary
//! that a selected test runs and this machine does not have at hand
//! (`AtHand`), `[build] <name> v<version>`, two at a time (one per chain of
//! Go source trees, `GoSource::chain`) at the head of the line (`crate::runner`). A test that needs one waits
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

/// The binaries to build first: those the needs name that are not at
/// hand, the longest chain of builds first (`longest_chain_first`: the
/// builds of one chain, `GoSource::chain`, go one after another), else in the order
/// of the first test that needs each.
pub fn plan(needs: &[Need], at_hand: impl Fn(Need) -> bool) -> Vec<(Binary, Need)> {
    let mut seen = BTreeSet::new();
    let mut plan: Vec<(Binary, Need)> = needs
        .iter()
        .filter(|&&n| seen.insert(binary(n)) && !at_hand(n))
        .map(|&n| (binary(n), n))
        .collect();
    longest_chain_first(
        &mut plan,
        |(_, n)| build_chain(*n),
        |(_, (_, c))| cold_build_estimate(*c),
    );
    plan
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

/// The chain `n` is built in (`GoSource::chain`): the builds of one module
/// version, which share the packages they compile (and, within a tree,
/// its lock), go one at a time.
fn build_chain((k8s, c): Need) -> String {
    c.go_source(k8s).chain()
}

/// The builds of one run: those still to finish, in the plan's order,
/// each with its chain.
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
            p.push((b, build_chain(n)));
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
    fn the_plan_builds_what_is_missing_once_the_longest_chain_first() {
        let (r36, r37) = (release("1.36"), release("1.37"));
        let needs = [
            (r37, Component::Etcd),
            (r37, Component::Runc),
            (r37, Component::Containerd),
            (r36, Component::KubeScheduler),
            (r36, Component::Kueue),
            (r37, Component::Kueue),
            (r36, Component::KubeApiserver),
            (r37, Component::KubeApiserver),
        ];
        // Only etcd and 1.37's API server are at hand.
        let have = |n: Need| n == (r37, Component::Etcd) || n == (r37, Component::KubeApiserver);
        let plan: Vec<String> = plan(&needs, have)
            .iter()
            .map(|(b, _)| trial_name(b))
            .collect();
        let name = |n: Need| trial_name(&binary(n));
        // 1.36's tree (API server, then the scheduler that reuses its
        // packages) is the longest chain; Kueue's version is one for both
        // releases: one build; runc, asked for first, is the shortest.
        assert_eq!(
            plan,
            [
                name((r36, Component::KubeApiserver)),
                name((r36, Component::KubeScheduler)),
                name((r36, Component::Kueue)),
                name((r37, Component::Containerd)),
                name((r37, Component::Runc)),
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
        assert_eq!(build_chain(needs[0]), build_chain(needs[1]));
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
