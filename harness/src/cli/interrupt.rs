//! The one way a command is interrupted: it runs until it ends or until
//! Ctrl-C or SIGTERM; then what it started is torn down — the clusters it
//! made, or on an existing cluster everything of its run — said on
//! stderr, and the command exits 130.

use std::future::Future;

use anyhow::Result;
use harness::cluster::Provider;
use harness::signal::{self, Raced};

/// The clusters a command made, by name.
pub enum Made<'a> {
    /// One cluster (`up`).
    Named(&'a str),
    /// Every cluster whose name starts with this (a run set's).
    Prefixed(&'a str),
}

/// `work`'s result, or Err(exit code) after an interrupt tore down what
/// `made` names on `provider`.
pub async fn or_tear_down<T>(
    work: impl Future<Output = Result<T>>,
    provider: &Provider,
    made: Made<'_>,
) -> Result<std::result::Result<T, i32>> {
    match signal::race(work).await {
        Raced::Finished(r) => Ok(Ok(r?)),
        Raced::Interrupted(sig) => {
            // The work future was dropped: a running `kind create` or
            // process start with it.
            match provider {
                Provider::Existing(t) => {
                    eprintln!("\nharness: {sig}: removing what run {} created", t.run_id);
                }
                Provider::Local { .. } | Provider::Kind(_) => match &made {
                    Made::Named(name) => {
                        eprintln!("\nharness: {sig}: tearing down cluster {name:?}");
                    }
                    Made::Prefixed(_) => {
                        eprintln!("\nharness: {sig}: tearing down the run's clusters");
                    }
                },
            }
            match made {
                Made::Named(name) => harness::lifecycle::target::tear_down_named(provider, name)?,
                Made::Prefixed(prefix) => {
                    harness::lifecycle::target::tear_down(provider, prefix).await?
                }
            }
            Ok(Err(signal::EXIT_INTERRUPTED))
        }
    }
}
