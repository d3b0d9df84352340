//! The liveness watch covers a whole benchmark run: a control-plane
//! component killed in the middle of a mode's measured run ends the bench
//! at once with an error that names it (lifecycle::while_alive around the
//! driver, the measurement window and its close), the cluster's state and
//! logs are kept for the post-mortem, and `down` removes them.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use harness::bench::thor::{ThorBenchOptions, bench_thor};
use harness::cluster::local::LocalCluster;
use harness::workload::thor::Mode;
use libtest_mimic::Arguments;

use crate::runner::{Suite, Test};

/// Kill `component` of the bench's cluster once its mode has been running
/// for `after` (the cluster is up when its state lists the component's
/// process and kubectl working directories exist: the driver has begun).
fn kill_during_the_run(component: &'static str, after: Duration) -> Result<()> {
    let prefix = crate::unique_name(&format!("t-live-{component}"));
    let name = format!("{prefix}-baseline-0");
    let opts = ThorBenchOptions {
        scenario: crate::repo_root().join("suites/thor/smoke.yaml"),
        modes: Some(vec![Mode::Baseline]),
        repeat: 1,
        seed: None,
        bins: Default::default(),
        cluster_prefix: prefix,
        overrides: Vec::new(),
        out: None,
        scrape: false,
        profiles: None,
        existing: None,
        real_node: false,
        kind: None,
    };
    let bench = std::thread::spawn(move || crate::runtime()?.block_on(bench_thor(&opts)));
    let deadline = Instant::now() + Duration::from_secs(300);
    let pid = loop {
        ensure!(
            Instant::now() < deadline,
            "the bench's cluster never ran its driver"
        );
        ensure!(!bench.is_finished(), "the bench ended before the kill");
        if let Ok(c) = LocalCluster::load(&name) {
            let running = std::fs::read_dir(&c.layout.root)
                .map(|d| {
                    d.flatten()
                        .any(|e| e.file_name().to_string_lossy().starts_with("kubectl-"))
                })
                .unwrap_or(false);
            if let Some(p) = c.state.procs.iter().find(|p| p.name == component)
                && running
            {
                break p.pid;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(after);
    ensure!(!bench.is_finished(), "the bench ended before the kill");
    // SAFETY: kill(2) of the component's pid, read from its state a moment ago.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let killed = Instant::now();
    let r = bench
        .join()
        .map_err(|_| anyhow::anyhow!("the bench thread panicked"))?;
    let noticed = killed.elapsed();
    let kept = LocalCluster::load(&name).is_ok();
    let down = harness::lifecycle::down(&name, false);
    let e = match r {
        Ok(_) => bail!("the bench finished though {component} was killed"),
        Err(e) => format!("{e:#}"),
    };
    eprintln!("{component} killed: the bench ended {noticed:.1?} later: {e}");
    ensure!(
        e.contains(component),
        "the error does not name {component}: {e}"
    );
    ensure!(
        noticed < Duration::from_secs(30),
        "the death was noticed only after {noticed:?}"
    );
    ensure!(kept, "the failed run's cluster state was not kept");
    down.context("down of the failed run's cluster")?;
    Ok(())
}

pub fn suite(_: &Arguments) -> Suite {
    let t = Test::of;
    Suite::new(
        "liveness",
        vec![
            t("liveness_a_scheduler_killed_mid_run_is_named", || {
                kill_during_the_run("kube-scheduler", Duration::from_secs(3))
            }),
            t("liveness_etcd_killed_mid_run_is_named", || {
                kill_during_the_run("etcd", Duration::from_secs(6))
            }),
        ],
    )
}
