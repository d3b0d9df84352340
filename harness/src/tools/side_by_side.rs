//! Builds side by side: a few jobs at once, taken in the order given
//! (the longest chain first, as `build_cost::longest_chain_first` orders
//! them), never two of one Go source tree at once. Used by
//! `Resolver::resolve_many` (`up`, `tools install`); the test runner's
//! build trials (`suites::builds`) take their turns by
//! the same rule ([`may_start`]) and bound ([`BUILDS_AT_ONCE`]).
//!
//! A job that fails stops the others from starting; the ones already
//! running are waited for (their binaries land in the cache for the next
//! run), so no `go build` outlives the call, and then the first failure is
//! returned, named. Waiting is one way: a mutex and a condition variable,
//! as in `suites::builds`.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::progress::say;

/// How many builds run at once: two, whatever the machine's cores. A Go
/// build already spreads its compiling over every core, so a third would
/// only share them; a second fills what one leaves idle (module downloads,
/// links, the single-threaded steps). The test runner's evidence
/// (`suites::builds::AT_ONCE`, 2 cores): the test command took 27 min 45 s
/// one build at a time, 25 min 48 s with two. For `up` alone on a fresh
/// 2-core machine the gain was nil: 562 s two at once against 564 s one
/// after the other (0e2925c, 327343b), kube-apiserver taking 444 s beside
/// another build against 256 s alone; its log says when builds ran side by
/// side so the next measurement can say again.
pub const BUILDS_AT_ONCE: usize = 2;

/// Whether job `b` may start: among the first `at_once` of the `pending`
/// jobs (those not finished, in their order) once each tree's later jobs
/// are passed over. A second job of a tree would only wait for the tree's
/// lock (`build::lock_tree`) while holding a turn.
pub fn may_start<T: PartialEq>(pending: &[(T, String)], b: &T, at_once: usize) -> bool {
    let mut trees_seen = BTreeSet::new();
    pending
        .iter()
        .filter(|(_, tree)| trees_seen.insert(tree.as_str()))
        .take(at_once)
        .any(|(x, _)| x == b)
}

/// One job: its name (in the log and in its error) and its source tree.
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    /// A build's chain of trees (`GoSource::chain`, which holds whole
    /// trees): the jobs of one go one at a time.
    pub tree: String,
}

/// What the runner knows: the jobs not finished (by index, in order),
/// which have started, what the finished ones gave, the first failure.
struct State<T> {
    pending: Vec<(usize, String)>,
    started: Vec<bool>,
    done: Vec<Option<(T, Duration)>>,
    failed: Option<anyhow::Error>,
}

struct Runner<'a, T> {
    jobs: &'a [Job],
    at_once: usize,
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Runner<'_, T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next job to run, waiting for its turn; None once nothing is
    /// left to start or a job has failed.
    fn next(&self) -> Option<usize> {
        let mut s = self.lock();
        loop {
            if s.failed.is_some() {
                return None;
            }
            let waiting: Vec<usize> = s
                .pending
                .iter()
                .map(|&(i, _)| i)
                .filter(|&i| !s.started[i])
                .collect();
            if waiting.is_empty() {
                return None;
            }
            if let Some(&i) = waiting
                .iter()
                .find(|&&i| may_start(&s.pending, &i, self.at_once))
            {
                s.started[i] = true;
                return Some(i);
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Job `i` is over: what it gave, or its failure (the first one is
    /// kept; the log says what is still running and what will not start).
    fn finish(&self, i: usize, outcome: Result<(T, Duration)>) {
        let mut s = self.lock();
        s.pending.retain(|&(x, _)| x != i);
        match outcome {
            Ok(done) => s.done[i] = Some(done),
            Err(e) => {
                let name = &self.jobs[i].name;
                let running = self.names(&s, true);
                if s.failed.is_none() {
                    let not_started = self.names(&s, false).len();
                    say(&format!(
                        "harness: {name} failed{}{}",
                        match not_started {
                            0 => String::new(),
                            n => format!("; {n} more will not start"),
                        },
                        listed(&running)
                    ));
                    s.failed = Some(e.context(format!("{name} failed")));
                } else {
                    say(&format!("harness: {name} failed too: {e:#}"));
                }
            }
        }
        self.changed.notify_all();
    }

    /// The names of the pending jobs that have (or have not) started.
    fn names(&self, s: &State<T>, started: bool) -> Vec<String> {
        s.pending
            .iter()
            .filter(|&&(i, _)| s.started[i] == started)
            .map(|&(i, _)| self.jobs[i].name.clone())
            .collect()
    }

    /// Take jobs until none is left (or one failed).
    fn work(&self, run: &(impl Fn(usize) -> Result<T> + Sync)) {
        while let Some(i) = self.next() {
            let started = Instant::now();
            // A panic is this job's failure: the others are not left
            // waiting for a turn it holds.
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run(i)))
                .unwrap_or_else(|_| Err(anyhow!("it panicked")));
            self.finish(i, outcome.map(|v| (v, started.elapsed())));
        }
    }
}

/// `; waiting for kube-apiserver v1.37.1 to finish`, or nothing.
fn listed(running: &[String]) -> String {
    if running.is_empty() {
        String::new()
    } else {
        format!("; waiting for {} to finish", running.join(", "))
    }
}

/// Run `run(i)` for each of `jobs`, `at_once` at a time, in their order
/// but that a tree's jobs go one at a time. Each result comes with how
/// long its job took, in the jobs' order; or the first failure, named.
pub fn run<T: Send>(
    jobs: &[Job],
    at_once: usize,
    run: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<(T, Duration)>> {
    let n = jobs.len();
    let runner = Runner {
        jobs,
        at_once: at_once.max(1),
        state: Mutex::new(State {
            pending: jobs
                .iter()
                .enumerate()
                .map(|(i, j)| (i, j.tree.clone()))
                .collect(),
            started: vec![false; n],
            done: (0..n).map(|_| None).collect(),
            failed: None,
        }),
        changed: Condvar::new(),
    };
    std::thread::scope(|scope| {
        for _ in 0..runner.at_once.min(n) {
            scope.spawn(|| runner.work(&run));
        }
    });
    let state = runner.state.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = state.failed {
        return Err(e);
    }
    Ok(state
        .done
        .into_iter()
        .map(|d| d.expect("every job ran, none failed"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn jobs(trees: &[&str]) -> Vec<Job> {
        trees
            .iter()
            .enumerate()
            .map(|(i, t)| Job {
                name: format!("job{i}"),
                tree: t.to_string(),
            })
            .collect()
    }

    /// Each job's start and end on one clock, from `run` with jobs that
    /// take `each`.
    fn spans(trees: &[&str], at_once: usize, each: Duration) -> Vec<(Duration, Duration)> {
        let t0 = Instant::now();
        let out = run(&jobs(trees), at_once, |_| {
            let start = t0.elapsed();
            std::thread::sleep(each);
            Ok((start, t0.elapsed()))
        })
        .unwrap();
        out.into_iter().map(|(span, _)| span).collect()
    }

    fn overlap(a: (Duration, Duration), b: (Duration, Duration)) -> bool {
        a.0 < b.1 && b.0 < a.1
    }

    #[test]
    fn two_jobs_of_two_trees_run_at_once() {
        let s = spans(&["a", "b"], 2, Duration::from_millis(300));
        assert!(overlap(s[0], s[1]), "{s:?}");
    }

    #[test]
    fn never_more_than_at_once_and_in_order() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let order = Mutex::new(Vec::new());
        run(&jobs(&["a", "b", "c", "d", "e"]), 2, |i| {
            order.lock().unwrap().push(i);
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Staggered ends: job 2 starts when job 0 ends, job 3 when
            // job 1 does, job 4 when job 2 does.
            std::thread::sleep(Duration::from_millis(100 * (i as u64 + 1)));
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        assert_eq!(most.load(Ordering::SeqCst), 2);
        // The first two start first; the rest in order as turns free up.
        let order = order.into_inner().unwrap();
        let mut first_two = order[..2].to_vec();
        first_two.sort();
        assert_eq!(first_two, [0, 1]);
        assert_eq!(order[2..], [2, 3, 4]);
    }

    #[test]
    fn a_trees_jobs_go_one_at_a_time_and_another_tree_goes_beside() {
        let s = spans(&["k8s", "k8s", "etcd"], 2, Duration::from_millis(200));
        assert!(
            !overlap(s[0], s[1]),
            "one tree's two jobs overlapped: {s:?}"
        );
        assert!(overlap(s[0], s[2]), "the other tree waited: {s:?}");
    }

    #[test]
    fn the_first_failure_is_named_and_nothing_is_left_running() {
        let ended = Mutex::new(Vec::new());
        let started = Mutex::new(Vec::new());
        let err = run(&jobs(&["a", "b", "c"]), 2, |i| {
            started.lock().unwrap().push(i);
            if i == 1 {
                std::thread::sleep(Duration::from_millis(50));
                anyhow::bail!("go build exited 1");
            }
            std::thread::sleep(Duration::from_millis(300));
            ended.lock().unwrap().push(i);
            Ok(())
        })
        .unwrap_err();
        let text = format!("{err:#}");
        assert_eq!(text, "job1 failed: go build exited 1");
        // Job 0 was running: it finished before `run` returned. Job 2 had
        // not started: it never did.
        assert_eq!(*ended.lock().unwrap(), [0]);
        assert!(!started.lock().unwrap().contains(&2));
    }

    #[test]
    fn a_panicking_job_is_a_named_failure() {
        let err = run(&jobs(&["a", "b"]), 2, |i| {
            if i == 0 {
                panic!("boom");
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(format!("{err:#}"), "job0 failed: it panicked");
    }

    #[test]
    fn results_come_in_the_jobs_order_and_none_is_nothing() {
        let out = run(&jobs(&["a", "b", "c"]), 2, |i| {
            std::thread::sleep(Duration::from_millis(30 * (3 - i as u64)));
            Ok(i * 10)
        })
        .unwrap();
        let values: Vec<usize> = out.iter().map(|(v, _)| *v).collect();
        assert_eq!(values, [0, 10, 20]);
        assert!(out[0].1 >= Duration::from_millis(90));
        assert!(run(&[], 2, |_| Ok(())).unwrap().is_empty());
    }

    #[test]
    fn a_turn_is_the_first_at_once_of_the_trees_first_jobs() {
        let p: Vec<(u32, String)> = [(0, "k8s"), (1, "k8s"), (2, "etcd"), (3, "kwok")]
            .map(|(i, t)| (i, t.to_string()))
            .into();
        assert!(may_start(&p, &0, 2));
        assert!(!may_start(&p, &1, 2), "the tree's second");
        assert!(may_start(&p, &2, 2));
        assert!(!may_start(&p, &3, 2), "third of the trees");
        assert!(may_start(&p, &3, 3));
    }
}
