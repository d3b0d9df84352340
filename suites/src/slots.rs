//! How many tests run at once, and which goes next. Tests start in the
//! run's list order (suites put their longest chains first): the first
//! waiting test starts when a slot is free — or, when it is quiet, when
//! no test runs at all; nothing starts while a quiet test runs or waits.
//! The quiet tests the run starts with ([`Slots::first_asked_by`]) are
//! waited for: nothing starts before they have asked, so a test whose
//! thread asked a moment sooner does not hold them back (measured: the
//! CronJob case, 2 min 10 s of waiting on the clock, started first and
//! held the quiet gang latency case and every build that long, 0c00615).
//! A paced test runs beside others but never beside a heavy one (a build,
//! a kind cluster: both cores busy). A slot is not enough when the
//! machine lacks room for another cluster (`room`, e.g. inotify
//! instances): the test then waits while others run, and starts when room
//! is back or nothing else runs.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Is there room for one more test, given how many of the running ones
/// started in the last [`RECENT`] (their clusters may still be coming
/// up; a test that ended holds nothing more than what is in use now)?
pub type Room = Box<dyn Fn(usize) -> bool + Send + Sync>;

/// How long a started test counts as still making its clusters.
pub const RECENT: Duration = Duration::from_secs(60);

/// How long the run waits for its first quiet tests to ask before the
/// others start anyway (their threads ask within milliseconds; a longer
/// wait means one was not run after all).
pub const FIRST_ASK: Duration = Duration::from_secs(10);

/// What a test is to the others running beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Runs beside any other.
    Plain,
    /// Runs with no other test at once.
    Quiet,
    /// Its figures are judged against bands measured under load: beside
    /// others, but never beside a heavy one.
    Paced,
    /// Keeps the machine's cores busy (a build, a kind cluster).
    Heavy,
}

/// `n` tests at a time, first in the list first.
pub struct Slots {
    n: usize,
    room: Room,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Set on SIGINT/SIGTERM: no test starts any more.
    stopped: bool,
    running: usize,
    quiet_running: bool,
    /// Heavy tests running.
    heavy: usize,
    /// First quiet tests yet to ask, and since when they are waited for.
    first_to_ask: usize,
    since_start: Instant,
    /// Waiting tests by index: quiet or not.
    waiting: BTreeMap<usize, bool>,
    /// When each running test started, by its turn's number.
    since: BTreeMap<u64, Instant>,
    /// The next turn's number.
    next_turn: u64,
    /// The order tests started in.
    #[cfg(test)]
    started: Vec<usize>,
}

/// A test's turn, given back when it drops.
pub struct Turn<'a> {
    slots: &'a Slots,
    kind: Kind,
    number: u64,
}

impl Slots {
    pub fn new(n: usize) -> Slots {
        Slots::with_room(n, Box::new(|_| true))
    }

    /// `n` at a time, and a test beside others only when `room` says so.
    pub fn with_room(n: usize, room: Room) -> Slots {
        Slots {
            n: n.max(1),
            room,
            state: Mutex::new(State {
                stopped: false,
                running: 0,
                quiet_running: false,
                heavy: 0,
                first_to_ask: 0,
                since_start: Instant::now(),
                waiting: BTreeMap::new(),
                since: BTreeMap::new(),
                next_turn: 0,
                #[cfg(test)]
                started: Vec::new(),
            }),
            changed: Condvar::new(),
        }
    }

    /// No test starts from now on: every `take` waiting or to come
    /// returns None.
    pub fn stop(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stopped = true;
        self.changed.notify_all();
    }

    /// The first `n` quiet tests to ask (`take(_, Kind::Quiet, true)`)
    /// are waited for, up to [`FIRST_ASK`], before any test starts.
    pub fn first_asked_by(&self, n: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.first_to_ask = n;
        s.since_start = Instant::now();
    }

    /// Wait for the turn of the `index`-th test of the run, as `kind`
    /// runs beside others; `first`: one of the quiet tests the run starts
    /// with. None once the run is stopped (the test must not start).
    pub fn take(&self, index: usize, kind: Kind, first: bool) -> Option<Turn<'_>> {
        self.take_as(index, kind, first, true)
    }

    /// `take` for a build: heavy, it makes no cluster, so it needs no
    /// `room` and does not count as recently started in others' asking.
    pub fn take_without_room(&self, index: usize) -> Option<Turn<'_>> {
        self.take_as(index, Kind::Heavy, false, false)
    }

    fn take_as(&self, index: usize, kind: Kind, first: bool, room: bool) -> Option<Turn<'_>> {
        let quiet = kind == Kind::Quiet;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.waiting.insert(index, quiet);
        if first && s.first_to_ask > 0 {
            s.first_to_ask -= 1;
            self.changed.notify_all();
        }
        loop {
            if s.stopped {
                s.waiting.remove(&index);
                drop(s);
                self.changed.notify_all();
                return None;
            }
            let asking = s.first_to_ask > 0 && s.since_start.elapsed() < FIRST_ASK;
            if asking {
                let left = FIRST_ASK.saturating_sub(s.since_start.elapsed());
                s = self
                    .changed
                    .wait_timeout(s, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            let next = s.waiting.keys().next() == Some(&index);
            let slot = match kind {
                Kind::Quiet => s.running == 0,
                Kind::Paced => !s.quiet_running && s.running < self.n && s.heavy == 0,
                Kind::Plain | Kind::Heavy => !s.quiet_running && s.running < self.n,
            };
            if next && slot {
                let recent = s.since.values().filter(|t| t.elapsed() < RECENT).count();
                if !room || s.running == 0 || (self.room)(recent) {
                    break;
                }
                // No event says room came back: look again soon.
                s = self
                    .changed
                    .wait_timeout(s, Duration::from_secs(1))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.waiting.remove(&index);
        let number = s.next_turn;
        s.next_turn += 1;
        if room {
            s.since.insert(number, Instant::now());
        }
        #[cfg(test)]
        s.started.push(index);
        s.running += 1;
        s.quiet_running = quiet;
        s.heavy += usize::from(kind == Kind::Heavy);
        drop(s);
        // The next in line may go too.
        self.changed.notify_all();
        Some(Turn {
            slots: self,
            kind,
            number,
        })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut s = self.slots.state.lock().unwrap_or_else(|e| e.into_inner());
        s.running -= 1;
        s.since.remove(&self.number);
        match self.kind {
            Kind::Quiet => s.quiet_running = false,
            Kind::Heavy => s.heavy -= 1,
            Kind::Plain | Kind::Paced => {}
        }
        drop(s);
        self.slots.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use crate::slots::{Kind, Slots};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Runs `quiet` flags as tests of 30 ms on their own threads, started
    /// in reverse order, through `n` slots; returns the most at once, the
    /// most at once during a quiet test, and the order they started in.
    fn run(n: usize, quiet: &[bool]) -> (usize, usize, Vec<usize>) {
        let slots = Arc::new(Slots::new(n));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let most_quiet = Arc::new(AtomicUsize::new(0));
        // Hold every slot until all threads wait, so order is by index.
        let gates: Vec<_> = (0..n)
            .map(|k| slots.take(usize::MAX - n + k, Kind::Plain, false).unwrap())
            .collect();
        let handles: Vec<_> = (n..n + quiet.len())
            .rev()
            .map(|i| {
                let (slots, running, most, most_quiet) = (
                    slots.clone(),
                    running.clone(),
                    most.clone(),
                    most_quiet.clone(),
                );
                let q = quiet[i - n];
                std::thread::spawn(move || {
                    let _turn = slots
                        .take(i, if q { Kind::Quiet } else { Kind::Plain }, false)
                        .unwrap();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    if q {
                        most_quiet.fetch_max(running.load(Ordering::SeqCst), Ordering::SeqCst);
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        while slots.state.lock().unwrap().waiting.len() < quiet.len() {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(gates);
        for h in handles {
            h.join().unwrap();
        }
        let order: Vec<usize> = slots.state.lock().unwrap().started[n..]
            .iter()
            .map(|i| i - n)
            .collect();
        (
            most.load(Ordering::SeqCst),
            most_quiet.load(Ordering::SeqCst),
            order,
        )
    }

    #[test]
    fn at_most_n_at_once_first_in_the_list_first() {
        let (most, _, order) = run(3, &[false; 9]);
        assert_eq!(most, 3);
        assert_eq!(order, (0..9).collect::<Vec<_>>());
    }

    #[test]
    fn a_quiet_test_runs_alone() {
        let (most, most_quiet, order) = run(4, &[false, false, true, false, false, true, false]);
        assert!(most >= 2, "others ran side by side: {most}");
        assert_eq!(most_quiet, 1);
        assert_eq!(order, (0..7).collect::<Vec<_>>());
    }

    /// Issue 30: once stopped, a waiting test and every later one do not
    /// start; the running one keeps its turn.
    #[test]
    fn stopped_slots_start_nothing() {
        let slots = Arc::new(Slots::new(1));
        let running = slots.take(0, Kind::Plain, false).unwrap();
        let waiting = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take(1, Kind::Plain, false).is_some())
        };
        while slots.state.lock().unwrap().waiting.is_empty() {
            std::thread::sleep(Duration::from_millis(5));
        }
        slots.stop();
        assert!(
            !waiting.join().unwrap(),
            "a waiting test started after stop"
        );
        drop(running);
        assert!(slots.take(2, Kind::Quiet, false).is_none());
        assert_eq!(slots.state.lock().unwrap().started, vec![0]);
    }

    /// Without room a test waits while another runs, and starts when room
    /// comes back; with nothing running it starts anyway.
    #[test]
    fn a_test_waits_for_room_while_others_run() {
        use std::sync::atomic::AtomicBool;
        let roomy = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(AtomicUsize::new(0));
        let (r, a) = (roomy.clone(), asked.clone());
        let slots = Arc::new(Slots::with_room(
            4,
            Box::new(move |recent| {
                a.store(recent, Ordering::SeqCst);
                r.load(Ordering::SeqCst)
            }),
        ));
        let first = slots
            .take(0, Kind::Plain, false)
            .expect("nothing runs: starts without room");
        let second = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take(1, Kind::Plain, false).is_some())
        };
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!second.is_finished(), "started without room");
        assert_eq!(
            asked.load(Ordering::SeqCst),
            1,
            "the first counts as recent"
        );
        roomy.store(true, Ordering::SeqCst);
        assert!(second.join().unwrap());
        // The second's turn ended with its thread: only the first runs.
        roomy.store(false, Ordering::SeqCst);
        let third = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take(2, Kind::Plain, false).is_some())
        };
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(
            asked.load(Ordering::SeqCst),
            1,
            "an ended test is not counted as still starting"
        );
        drop(first);
        assert!(third.join().unwrap(), "nothing runs: starts without room");
        assert_eq!(slots.state.lock().unwrap().started, vec![0, 1, 2]);
    }

    /// A build needs no room, and a test asking for room after it does
    /// not count it as a cluster coming up.
    #[test]
    fn a_build_starts_without_room_and_is_not_counted_as_recent() {
        let asked = Arc::new(AtomicUsize::new(usize::MAX));
        let a = asked.clone();
        let slots = Arc::new(Slots::with_room(
            4,
            Box::new(move |recent| {
                a.store(recent, Ordering::SeqCst);
                false
            }),
        ));
        let first = slots.take(0, Kind::Plain, false).expect("nothing runs");
        let build = slots.take_without_room(1).expect("no room needed");
        assert_eq!(asked.load(Ordering::SeqCst), usize::MAX, "room was asked");
        drop(first);
        let test = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take(2, Kind::Plain, false).is_some())
        };
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!test.is_finished(), "started without room");
        assert_eq!(asked.load(Ordering::SeqCst), 0, "the build counted");
        drop(build);
        assert!(test.join().unwrap(), "nothing runs: starts without room");
    }

    #[test]
    fn one_slot_runs_everything_in_list_order() {
        let (most, _, order) = run(1, &[false, true, false, false]);
        assert_eq!(most, 1);
        assert_eq!(order, vec![0, 1, 2, 3]);
    }

    /// The first quiet test is waited for: a test whose thread asked
    /// sooner starts after it, not before (the CronJob case held the gang
    /// latency case 2 min 10 s that way).
    #[test]
    fn a_test_that_asks_before_the_first_quiet_one_waits_for_it() {
        let slots = Arc::new(Slots::new(4));
        slots.first_asked_by(1);
        let plain = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take(5, Kind::Plain, false).map(|_| ()))
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !plain.is_finished(),
            "started before the first quiet test asked"
        );
        let quiet = slots.take(0, Kind::Quiet, true).expect("not stopped");
        std::thread::sleep(Duration::from_millis(300));
        assert!(!plain.is_finished(), "started beside the quiet test");
        drop(quiet);
        plain.join().unwrap().expect("not stopped");
        assert_eq!(slots.state.lock().unwrap().started, vec![0, 5]);
    }

    /// One that never asks holds the others no longer than FIRST_ASK.
    #[test]
    fn a_first_quiet_test_that_never_asks_is_waited_for_only_so_long() {
        let slots = Slots::new(4);
        slots.first_asked_by(1);
        slots.state.lock().unwrap().since_start -= super::FIRST_ASK;
        assert!(slots.take(3, Kind::Plain, false).is_some());
    }

    /// A paced test does not start beside a heavy one (a build), runs
    /// beside a plain one, and a heavy one may start beside it.
    #[test]
    fn a_paced_test_waits_for_the_heavy_ones_but_not_for_the_plain() {
        let slots = Arc::new(Slots::new(4));
        let build = slots.take_without_room(0).expect("not stopped");
        let plain = slots.take(1, Kind::Plain, false).expect("not stopped");
        let paced = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take(2, Kind::Paced, false).map(|_| ()))
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(!paced.is_finished(), "started beside a build");
        drop(build);
        paced.join().unwrap().expect("not stopped");
        let kept = slots
            .take(3, Kind::Paced, false)
            .expect("beside the plain one");
        assert!(
            slots.take_without_room(4).is_some(),
            "a build waited for a paced test"
        );
        drop((plain, kept));
        assert_eq!(slots.state.lock().unwrap().started, vec![0, 1, 2, 3, 4]);
        assert_eq!(slots.state.lock().unwrap().heavy, 0);
    }
}
