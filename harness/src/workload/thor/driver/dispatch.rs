//! Who runs a graph: HPCC's Thor queue between the thoragent and the
//! managers that linger. A graph goes to a lingering manager when one is
//! idle (a manager that just finished a graph listens with the newest
//! priority and usually wins: common/workunit/wujobq.cpp `findbestqueue`),
//! else the thoragent launches a new instance for it when fewer than
//! `maxGraphs` run or linger (ecl/agentexec/agentexec.cpp `run`: its thread
//! pool is `maxActive` = maxGraphs), else it waits in the queue.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

/// One graph of a workunit.
#[derive(Debug)]
pub struct Graph {
    pub workunit: u32,
    pub index: u32,
    /// Told when the graph has run.
    pub done: oneshot::Sender<()>,
}

#[derive(Default)]
struct State {
    pending: VecDeque<Graph>,
    /// Managers waiting for a graph, oldest first.
    idle: VecDeque<oneshot::Sender<Graph>>,
    /// Instances launched and not yet cleaned up by the thoragent.
    instances: u32,
    closed: bool,
}

/// The Thor queue with its listeners.
pub struct Dispatcher {
    max_graphs: u32,
    state: Mutex<State>,
    changed: Notify,
}

impl Dispatcher {
    pub fn new(max_graphs: u32) -> Dispatcher {
        Dispatcher {
            max_graphs: max_graphs.max(1),
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock is a bug elsewhere; keep going
        // with the data as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a graph; resolves when it has run.
    pub fn submit(&self, workunit: u32, index: u32) -> oneshot::Receiver<()> {
        let (done, rx) = oneshot::channel();
        let mut g = Some(Graph {
            workunit,
            index,
            done,
        });
        {
            let mut s = self.lock();
            // An idle manager takes it at once (skip managers that gave up).
            while let Some(m) = s.idle.pop_front() {
                match m.send(g.take().expect("graph not yet handed over")) {
                    Ok(()) => break,
                    Err(back) => g = Some(back),
                }
            }
            if let Some(g) = g {
                s.pending.push_back(g);
            }
        }
        self.changed.notify_waiters();
        rx
    }

    /// A lingering manager waits up to `linger` for its next graph.
    pub async fn linger(&self, linger: Duration) -> Option<Graph> {
        let rx = {
            let mut s = self.lock();
            if let Some(g) = s.pending.pop_front() {
                return Some(g);
            }
            let (tx, rx) = oneshot::channel();
            s.idle.push_back(tx);
            rx
        };
        self.changed.notify_waiters();
        tokio::time::timeout(linger, rx).await.ok()?.ok()
    }

    /// The thoragent's next launch: a pending graph with a free slot and
    /// no idle manager to take it. None once closed and drained.
    pub async fn next_launch(&self) -> Option<Graph> {
        loop {
            let wait = self.changed.notified();
            tokio::pin!(wait);
            wait.as_mut().enable();
            {
                let mut s = self.lock();
                s.idle.retain(|m| !m.is_closed());
                if s.idle.is_empty()
                    && s.instances < self.max_graphs
                    && let Some(g) = s.pending.pop_front()
                {
                    s.instances += 1;
                    return Some(g);
                }
                if s.closed && s.pending.is_empty() {
                    return None;
                }
            }
            // Re-check now and then: an idle manager may have given up.
            let _ = tokio::time::timeout(Duration::from_millis(200), wait).await;
        }
    }

    /// An instance's thoragent thread is done (its objects deleted).
    pub fn instance_ended(&self) {
        {
            let mut s = self.lock();
            s.instances = s.instances.saturating_sub(1);
        }
        self.changed.notify_waiters();
    }

    /// No more graphs will be submitted.
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_lingering_manager_takes_the_next_graph_before_a_new_launch() {
        let d = Arc::new(Dispatcher::new(2));
        let _a = d.submit(1, 0);
        let first = d.next_launch().await.unwrap();
        assert_eq!((first.workunit, first.index), (1, 0));
        // The manager of instance 1 lingers; graph (2,0) must go to it.
        let d2 = d.clone();
        let lingering = tokio::spawn(async move { d2.linger(Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _b = d.submit(2, 0);
        let got = lingering.await.unwrap().unwrap();
        assert_eq!((got.workunit, got.index), (2, 0));
        // With no idle manager a second instance is launched (slot 2 of 2);
        // a third waits for a slot.
        let _c = d.submit(3, 0);
        assert_eq!(d.next_launch().await.unwrap().workunit, 3);
        let _e = d.submit(4, 0);
        let waiting = tokio::time::timeout(Duration::from_millis(300), d.next_launch()).await;
        assert!(waiting.is_err(), "launched beyond maxGraphs");
        d.instance_ended();
        assert_eq!(d.next_launch().await.unwrap().workunit, 4);
        d.close();
        assert!(d.next_launch().await.is_none());
        // A manager with nothing to do gives up after its linger period.
        assert!(d.linger(Duration::from_millis(20)).await.is_none());
    }
}
