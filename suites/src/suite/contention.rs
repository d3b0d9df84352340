//! Thor instances competing for room (suites/thor/contention.yaml: two
//! instances of three one-CPU pods at once, room for one), each mode on a
//! fresh local cluster. What is asserted comes from the pods' own
//! timeline as the cluster reported it (bound, ended) and from HPCC's
//! failure messages, not from wall times.

use crate::builds::default_cluster_and;
use crate::runner::{Suite, Test};
use anyhow::{Context, Result, ensure};
use harness::bench::thor::contention::Contention;
use harness::bench::thor::result::ThorResult;
use harness::bench::thor::{ThorBenchOptions, bench_thor};
use harness::tools::Component;
use harness::workload::thor::Mode;
use libtest_mimic::Arguments;

use std::sync::OnceLock;

type Outcome = std::result::Result<ThorResult, String>;

/// A bench on clusters named `<prefix>-<pid>-<mode>-<round>`: each bench
/// of this suite has its own prefix, as they run at once and in a
/// seed-shuffled mode order (two with the same prefix would race for one
/// cluster name).
fn bench(prefix: &str, modes: Vec<Mode>, overrides: Vec<String>) -> Outcome {
    let rt = crate::runtime().map_err(|e| format!("{e:#}"))?;
    let opts = ThorBenchOptions {
        overrides,
        ..crate::thor_options("contention.yaml", modes, crate::unique_name(prefix))
    };
    rt.block_on(bench_thor(&opts)).map_err(|e| format!("{e:#}"))
}

fn run() -> &'static Outcome {
    static R: OnceLock<Outcome> = OnceLock::new();
    R.get_or_init(|| {
        bench(
            "t-cont",
            vec![Mode::Baseline, Mode::JobsetGang, Mode::JobsetKueue],
            Vec::new(),
        )
    })
}

fn contention(mode: Mode) -> Result<&'static Contention> {
    of(run(), mode)
}

fn of(r: &'static Outcome, mode: Mode) -> Result<&'static Contention> {
    let r = r.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    r.modes
        .get(mode.name())
        .with_context(|| format!("no {} result", mode.name()))?
        .result
        .contention
        .as_ref()
        .with_context(|| format!("{}: no contention figures", mode.name()))
}

/// Managers first, then their workers: both instances hold part of the
/// room and wait for the rest until HPCC's registration timeout.
fn baseline_deadlocks() -> Result<()> {
    let c = contention(Mode::Baseline)?;
    ensure!(
        c.room_for_instances.is_some_and(|r| r < 2.0),
        "room for {:?} instances: not a contention",
        c.room_for_instances
    );
    let d = c
        .deadlock
        .as_ref()
        .with_context(|| format!("baseline: no deadlock: {c:?}"))?;
    ensure!(
        d.placement.len() == 2 && d.placement.iter().all(|p| p.bound > 0 && p.bound < p.pods),
        "baseline: not every instance partly placed at the deadlock: {:?}",
        d.placement
    );
    ensure!(
        c.instances_failed >= 1
            && c.failures
                .iter()
                .all(|f| f.contains("Timeout waiting for all workers to register")),
        "baseline: the deadlock was not broken by the registration timeout: {:?}",
        c.failures
    );
    ensure!(c.wasted_pod_seconds > 0.0, "baseline: no room held in vain");
    Ok(())
}

/// A cure serializes the instances: both complete, nothing deadlocks.
fn completes(mode: Mode) -> Result<()> {
    let c = contention(mode)?;
    ensure!(
        c.instances_completed == 2 && c.instances_failed == 0 && c.workunits_failed == 0,
        "{}: {} completed, {} failed: {:?}",
        mode.name(),
        c.instances_completed,
        c.instances_failed,
        c.failures
    );
    ensure!(
        c.deadlock.is_none(),
        "{}: deadlock {:?}",
        mode.name(),
        c.deadlock
    );
    Ok(())
}

/// Kueue is what held the second instance: it made requests, and the
/// report carries the contention table.
fn kueue_admits_one_at_a_time() -> Result<()> {
    completes(Mode::JobsetKueue)?;
    let c = contention(Mode::JobsetKueue)?;
    ensure!(c.kueue_requests > 0, "jobset-kueue: Kueue made no requests");
    // One at a time, from the pod timeline: the second instance's first
    // pod was created after the first instance's pods ended (issue 30).
    ensure!(
        c.most_instances_at_once == 1,
        "jobset-kueue: {} instances had pods at once; Kueue should admit one at a time",
        c.most_instances_at_once
    );
    let r = run().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    let md = harness::bench::core::report::markdown::markdown(r);
    ensure!(md.contains("### Contention"), "no contention table:\n{md}");
    Ok(())
}

/// HPCC's waitJob fails an instance whose manager pod stays unscheduled
/// past `schedulingTimeoutSecs` (600 s by default; 5 s here): under gang
/// scheduling the second instance's pods wait in the scheduler, so a queue
/// longer than the timeout fails it — a Kueue-held JobSet has no pods to
/// wait and is never failed so.
fn gang_queueing_trips_hpccs_scheduling_timeout() -> Result<()> {
    static R: OnceLock<Outcome> = OnceLock::new();
    let r = R.get_or_init(|| {
        bench(
            "t-cont-timeout",
            vec![Mode::JobsetGang],
            vec!["thor.schedulingTimeoutSecs=5".into()],
        )
    });
    let c = of(r, Mode::JobsetGang)?;
    ensure!(
        c.instances_completed == 1 && c.instances_failed == 1,
        "jobset-gang with a 5 s scheduling timeout: {} completed, {} failed",
        c.instances_completed,
        c.instances_failed
    );
    ensure!(
        c.failures
            .iter()
            .all(|f| f.contains("pod not scheduled after 5 seconds")),
        "not HPCC's scheduling timeout: {:?}",
        c.failures
    );
    Ok(())
}

/// The contention suite.
pub fn suite(_: &Arguments) -> Suite {
    // Every mode's Thor instances fork HPCC's kubectl; the Kueue mode
    // starts Kueue.
    let t = |name: &str, f: fn() -> anyhow::Result<()>| {
        Test::of(name, f).needs(default_cluster_and(&[
            Component::HpccKubectl,
            Component::Kueue,
        ]))
    };
    Suite::new(
        "contention",
        vec![
            t(
                "contention_baseline_deadlocks_until_the_registration_timeout",
                baseline_deadlocks,
            ),
            t("contention_jobset_gang_completes_both", || {
                completes(Mode::JobsetGang)
            }),
            t(
                "contention_jobset_kueue_admits_one_at_a_time",
                kueue_admits_one_at_a_time,
            ),
            t(
                "contention_gang_queueing_trips_hpccs_scheduling_timeout",
                gang_queueing_trips_hpccs_scheduling_timeout,
            ),
        ],
    )
}
