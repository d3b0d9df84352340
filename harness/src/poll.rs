//! The one way to wait: poll a condition until it holds or a deadline
//! passes, at a fixed interval or with HPCC's doubling backoff, keeping the
//! last error or state for the failure message. Where a watch is the
//! natural wait, kube-runtime's `await_condition` is used instead.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Result, bail};

type Alive<'a> = Box<dyn FnMut() -> Result<()> + Send + 'a>;

/// How to wait for one thing.
pub struct Poll<'a> {
    what: String,
    timeout: Duration,
    delay: Duration,
    /// Some(cap): the delay doubles after every attempt, up to `cap`, and is
    /// never reset (HPCC's `waitJob`).
    cap: Option<Duration>,
    alive: Option<Alive<'a>>,
    /// Errors of the polled function are kept and polling goes on.
    tolerant: bool,
}

impl<'a> Poll<'a> {
    /// Wait for `what` at most `timeout`, every 100 ms.
    pub fn new(what: impl Into<String>, timeout: Duration) -> Poll<'a> {
        Poll {
            what: what.into(),
            timeout,
            delay: Duration::from_millis(100),
            cap: None,
            alive: None,
            tolerant: false,
        }
    }

    /// A fixed interval between attempts.
    pub fn every(mut self, delay: Duration) -> Poll<'a> {
        self.delay = delay;
        self.cap = None;
        self
    }

    /// Start at `start` and double after every attempt up to `cap`.
    pub fn backoff(mut self, start: Duration, cap: Duration) -> Poll<'a> {
        self.delay = start;
        self.cap = Some(cap);
        self
    }

    /// Checked before every attempt; its error ends the wait at once (a
    /// component that died will not become ready).
    pub fn alive(mut self, f: impl FnMut() -> Result<()> + Send + 'a) -> Poll<'a> {
        self.alive = Some(Box::new(f));
        self
    }

    /// Errors of the polled function do not end the wait: the last one is
    /// quoted if it times out (a server that is still starting).
    pub fn tolerate_errors(mut self) -> Poll<'a> {
        self.tolerant = true;
        self
    }

    /// Poll until `f` yields a value. An error from `f` ends the wait
    /// (unless errors are tolerated).
    pub async fn until<T, F, Fut>(self, mut f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        let tolerant = self.tolerant;
        self.run(|| {
            let fut = f();
            async move {
                match fut.await {
                    Ok(Some(v)) => Ok(Ok(v)),
                    Ok(None) => Ok(Err("not yet".to_string())),
                    Err(e) if tolerant => Ok(Err(format!("{e:#}"))),
                    Err(e) => Err(e),
                }
            }
        })
        .await
    }

    /// Poll until `f` succeeds; its errors are kept and polling goes on
    /// (a server that is still starting).
    pub async fn until_ok<T, F, Fut>(self, mut f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.tolerate_errors()
            .until(|| {
                let fut = f();
                async move { fut.await.map(Some) }
            })
            .await
    }

    /// Poll until `f` yields `Ok(Ok(value))`; `Ok(Err(state))` means not
    /// yet, and the last state is quoted if the wait times out. An `Err`
    /// ends the wait.
    pub async fn until_state<T, F, Fut>(self, f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<std::result::Result<T, String>>>,
    {
        self.run(f).await
    }

    async fn run<T, F, Fut>(mut self, mut f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<std::result::Result<T, String>>>,
    {
        let deadline = Instant::now() + self.timeout;
        let mut delay = self.delay;
        loop {
            if let Some(alive) = self.alive.as_mut() {
                alive()?;
            }
            let last = match f().await? {
                Ok(v) => return Ok(v),
                Err(state) => state,
            };
            tracing::debug!("{}: not yet: {last}", self.what);
            if Instant::now() >= deadline {
                bail!(
                    "{}: not reached within {} (last: {last})",
                    self.what,
                    seconds(self.timeout)
                );
            }
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(delay.min(left.max(Duration::from_millis(1)))).await;
            delay = next_delay(delay, self.cap);
        }
    }
}

/// The delay after `delay`: doubled up to `cap` with a backoff, the same
/// without. It depends on nothing else, so a backoff is never reset.
fn next_delay(delay: Duration, cap: Option<Duration>) -> Duration {
    cap.map_or(delay, |cap| (delay * 2).min(cap))
}

/// "30 s", "250 ms".
fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{} s", d.as_secs_f64().round() as u64)
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn until_returns_the_value_and_times_out_with_the_last_state() {
        let n = AtomicU32::new(0);
        let v = Poll::new("three", Duration::from_secs(5))
            .every(Duration::from_millis(1))
            .until(|| async { Ok((n.fetch_add(1, Ordering::SeqCst) >= 2).then_some(7)) })
            .await
            .unwrap();
        assert_eq!((v, n.load(Ordering::SeqCst)), (7, 3));
        let e = Poll::new("never", Duration::from_millis(30))
            .every(Duration::from_millis(5))
            .until_state(|| async { Ok(Err::<(), _>("2 of 3 Ready".to_string())) })
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "never: not reached within 30 ms (last: 2 of 3 Ready)"
        );
    }

    #[tokio::test]
    async fn errors_end_the_wait_unless_tolerated_and_alive_stops_it() {
        let e = Poll::new("x", Duration::from_secs(5))
            .until(|| async { Err::<Option<()>, _>(anyhow::anyhow!("boom")) })
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "boom");
        let n = AtomicU32::new(0);
        let v = Poll::new("y", Duration::from_secs(5))
            .every(Duration::from_millis(1))
            .until_ok(|| async {
                if n.fetch_add(1, Ordering::SeqCst) < 2 {
                    anyhow::bail!("not up")
                }
                Ok("up")
            })
            .await
            .unwrap();
        assert_eq!(v, "up");
        let e = Poll::new("z", Duration::from_millis(20))
            .every(Duration::from_millis(5))
            .until_ok(|| async { Err::<(), _>(anyhow::anyhow!("refused")) })
            .await
            .unwrap_err();
        assert!(e.to_string().ends_with("(last: refused)"), "{e}");
        let e = Poll::new("w", Duration::from_secs(5))
            .alive(|| anyhow::bail!("etcd exited"))
            .until(|| async { Ok(Some(())) })
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "etcd exited");
    }

    #[test]
    fn backoff_doubles_to_its_cap_and_is_never_reset() {
        let mut delays = vec![Duration::from_millis(100)];
        for _ in 0..5 {
            let last = *delays.last().unwrap();
            delays.push(next_delay(last, Some(Duration::from_millis(800))));
        }
        let ms: Vec<u128> = delays.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, vec![100, 200, 400, 800, 800, 800]);
        let d = Duration::from_millis(5);
        assert_eq!(next_delay(d, None), d);
    }

    #[tokio::test]
    async fn the_loop_sleeps_the_backoffs_delays() {
        // Real time: a sleep never ends early, so each gap is at least its
        // delay (10, 20, 40, 40 ms); a reset or a missing doubling would
        // make a later gap shorter.
        let times = std::sync::Mutex::new(Vec::new());
        let _ = Poll::new("b", Duration::from_secs(60))
            .backoff(Duration::from_millis(10), Duration::from_millis(40))
            .until(|| async {
                let mut t = times.lock().unwrap();
                t.push(Instant::now());
                Ok((t.len() == 5).then_some(()))
            })
            .await;
        let t = times.into_inner().unwrap();
        let gaps: Vec<u128> = t.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
        for (gap, least) in gaps.iter().zip([10, 20, 40, 40]) {
            assert!(*gap >= least, "gaps {gaps:?} ms");
        }
    }
}
