//! A workunit run to its end: create it, submit it, poll WUInfo with
//! HPCC's doubling backoff until a final state, and abort it when any of
//! that fails or the time is up.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::poll::Poll;
use crate::workload::ecl::wsworkunits::client::EspClient;
use crate::workload::ecl::wsworkunits::response::WorkunitInfo;

/// How long and how often to poll a workunit.
#[derive(Debug, Clone)]
pub struct PollPolicy {
    /// Give up (and abort the workunit) after this long.
    pub timeout: Duration,
    pub initial_interval: Duration,
    pub max_interval: Duration,
    /// Consecutive failed WUInfo calls tolerated while polling.
    pub max_poll_errors: u32,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            timeout: Duration::from_secs(900),
            initial_interval: Duration::from_millis(250),
            max_interval: Duration::from_secs(5),
            max_poll_errors: 3,
        }
    }
}

/// A workunit run to its end.
#[derive(Debug, Clone)]
pub struct Execution {
    pub wuid: String,
    pub info: WorkunitInfo,
    pub elapsed: Duration,
}

impl EspClient {
    /// Poll WUInfo, backing off, until the workunit reaches a final state.
    /// On timeout the workunit is aborted and the error says so.
    pub async fn wait(&self, wuid: &str, policy: &PollPolicy) -> Result<WorkunitInfo> {
        // Failed WUInfo calls in a row, and the last state or error seen.
        let failures = AtomicU32::new(0);
        let last = Mutex::new(String::new());
        let polled = Poll::new(format!("workunit {wuid}"), policy.timeout)
            // The intervals double from the first up to the larger of the two.
            .backoff(
                policy.initial_interval,
                policy.max_interval.max(policy.initial_interval),
            )
            .until_state(|| async {
                let seen = match self.info(wuid).await {
                    Ok(info) if info.state.is_final() => return Ok(Ok(info)),
                    Ok(info) => {
                        failures.store(0, Ordering::Relaxed);
                        format!("state {}", info.state)
                    }
                    Err(e) => {
                        let errors = failures.fetch_add(1, Ordering::Relaxed) + 1;
                        if errors > policy.max_poll_errors {
                            let abort = self.abort_note(wuid).await;
                            return Err(e.context(format!(
                                "polling workunit {wuid}: {errors} failed WUInfo calls in a row ({abort})"
                            )));
                        }
                        format!("{e:#}")
                    }
                };
                *last.lock().unwrap_or_else(PoisonError::into_inner) = seen.clone();
                Ok(Err(seen))
            })
            .await;
        match polled {
            Ok(info) => Ok(info),
            // Out of failed calls: the workunit was aborted, the error says so.
            Err(e) if failures.load(Ordering::Relaxed) > policy.max_poll_errors => Err(e),
            // Poll's deadline passed: abort, and say so in this client's terms.
            Err(_) => {
                let abort = self.abort_note(wuid).await;
                let last = last.into_inner().unwrap_or_else(PoisonError::into_inner);
                bail!(
                    "workunit {wuid} did not reach a final state within {:.1} s (last: {last}; {abort})",
                    policy.timeout.as_secs_f64()
                )
            }
        }
    }

    async fn abort_note(&self, wuid: &str) -> String {
        match self.abort(wuid).await {
            Ok(()) => "WUAbort sent".into(),
            Err(e) => format!("WUAbort failed too: {e:#}"),
        }
    }

    /// Create, submit to `cluster` and wait for the end. A workunit that
    /// could not be submitted or waited for is aborted (best effort).
    pub async fn run(
        &self,
        ecl: &str,
        jobname: &str,
        cluster: &str,
        policy: &PollPolicy,
    ) -> Result<Execution> {
        self.run_tracked(ecl, jobname, cluster, policy, &|_| {})
            .await
    }

    /// `run`, telling `on_created` the Wuid as soon as it exists (so that
    /// an interrupted caller can abort it).
    pub async fn run_tracked(
        &self,
        ecl: &str,
        jobname: &str,
        cluster: &str,
        policy: &PollPolicy,
        on_created: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<Execution> {
        let started = Instant::now();
        let wuid = self.create(ecl, jobname).await?;
        on_created(&wuid);
        if let Err(e) = self.submit(&wuid, cluster).await {
            let abort = self.abort_note(&wuid).await;
            return Err(e.context(format!("submitting workunit {wuid} ({abort})")));
        }
        let info = self.wait(&wuid, policy).await?;
        Ok(Execution {
            wuid,
            info,
            elapsed: started.elapsed(),
        })
    }
}
