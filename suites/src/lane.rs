//! A serial lane: the tests of one lane run one at a time, in no fixed
//! order — but for the lane's closing test (the one that tears down what
//! the others share, such as the kind suite's `down_leaves_nothing`),
//! which starts only when every other selected test of the lane has ended,
//! however it ended (passed, failed, panicked or not started because the
//! run was interrupted).
//!
//! Before this, "last" was only the list's order: the CI of 2425dfa ran
//! `kind_136_down_leaves_nothing` before `kind_136_gang_thor_jobset_gang`,
//! which then failed on "connection refused" from the cluster it had just
//! taken down.

use std::sync::{Condvar, Mutex, MutexGuard};

/// What a lane's trials prove, for the timing report beside the lane's
/// span (a lane that costs minutes says what the minutes buy).
pub fn proves(lane: &str) -> &'static str {
    match lane {
        "build" => {
            "the binaries the selected tests run and this machine lacks, built from Go modules as `up` builds them"
        }
        "existing" => {
            "the existing provider on a cluster used as a user's: audit and APF counts agree, a user without rights gets exit 3 and nothing is created, the Thor smoke costs what the local provider's does"
        }
        "faults" => {
            "a component killed or a disk filled during a run is named with its log, and nothing is left running"
        }
        "kubectl" => "kubectl's calls told apart by identity and user agent, against the audit log",
        "thor" => {
            "HPCC's Thor in baseline, jobset and jobset-gang modes on a local cluster: the pods and calls its templates and kubectl calls predict, audit against metrics, and a clean compare with the stored baseline"
        }
        "realnode" => {
            "a real kubelet, containerd and runc as a node: real containers' exit codes, kwok's kubelet-like model against the real kubelet, the Thor smoke on real containers, and a down that leaves no container, mount or interface"
        }
        "kind-fresh" => {
            "a user's commands on fresh kind clusters: bench thor in both modes, measure, and rounds as the pods of an Indexed Job"
        }
        l if l.starts_with("kind-") => {
            "a kind cluster of that minor with its profile's gates: the gang cases on real kubelets, the Thor smoke on kind workers, kwok's kubelet-like model against a kind worker's kubelet, and a down that leaves nothing"
        }
        _ => "not said (suites/src/lane.rs `proves`)",
    }
}

#[derive(Default)]
pub struct Lane {
    /// Held by the test that runs.
    turn: Mutex<()>,
    /// The lane's selected tests, other than its closing one, not yet
    /// ended.
    others: Mutex<usize>,
    ended: Condvar,
}

/// Said on drop: one of the lane's other tests has ended.
pub struct Ends<'a>(&'a Lane);

impl Drop for Ends<'_> {
    fn drop(&mut self) {
        let mut left = self.0.others.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.0.ended.notify_all();
        }
    }
}

impl Lane {
    /// One more test of the lane (not its closing one) will run. Called
    /// while the trials are made, before any runs.
    pub fn expect(&self) {
        *self.others.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    /// Held by one of the lane's other tests from its start: its end is
    /// told when it is dropped, on a panic's unwinding too.
    pub fn ends(&self) -> Ends<'_> {
        Ends(self)
    }

    /// Blocks until every other expected test of the lane has ended.
    /// Holds neither the lane's turn nor a slot meanwhile.
    pub fn wait_for_the_others(&self) {
        let left = self.others.lock().unwrap_or_else(|e| e.into_inner());
        let _left = self
            .ended
            .wait_while(left, |n| *n > 0)
            .unwrap_or_else(|e| e.into_inner());
    }

    /// The lane's turn: no other test of the lane runs while it is held.
    pub fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use crate::lane::Lane;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// The closing test, started first, runs after both others — one
    /// passes, one panics — however long they take.
    #[test]
    fn the_closing_test_starts_after_every_other_has_ended_even_one_that_panicked() {
        let lane = Arc::new(Lane::default());
        lane.expect();
        lane.expect();
        let order = Arc::new(Mutex::new(Vec::new()));
        let closing = {
            let (lane, order) = (lane.clone(), order.clone());
            std::thread::spawn(move || {
                lane.wait_for_the_others();
                let _turn = lane.turn();
                order.lock().unwrap().push("closing");
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let others: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let (lane, order) = (lane.clone(), order.clone());
                std::thread::spawn(move || {
                    let _ends = lane.ends();
                    let _turn = lane.turn();
                    std::thread::sleep(Duration::from_millis(100));
                    order.lock().unwrap().push(name);
                    if name == "b" {
                        panic!("b fails");
                    }
                })
            })
            .collect();
        let panicked = others
            .into_iter()
            .map(|t| t.join().is_err())
            .collect::<Vec<_>>();
        closing.join().unwrap();
        assert_eq!(panicked, [false, true]);
        let order = order.lock().unwrap();
        assert_eq!(order.len(), 3, "{order:?}");
        assert_eq!(order[2], "closing", "{order:?}");
    }

    #[test]
    fn every_lane_of_the_suites_says_what_it_proves() {
        for lane in [
            "build",
            "existing",
            "faults",
            "kubectl",
            "realnode",
            "thor",
            "kind-fresh",
            "kind-1.36",
            "kind-1.37",
        ] {
            assert!(!super::proves(lane).starts_with("not said"), "{lane}");
        }
        assert!(super::proves("new-lane").starts_with("not said"));
    }

    /// Nothing else selected: the closing test does not wait.
    #[test]
    fn a_lane_with_nothing_else_selected_closes_at_once() {
        let lane = Lane::default();
        lane.wait_for_the_others();
        drop(lane.turn());
    }
}
