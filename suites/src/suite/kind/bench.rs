//! `bench thor --provider kind` for real: baseline and JobSet modes of the
//! Thor smoke, each on a fresh kind cluster of its profile
//! (kind-configs/baseline-<minor>.yaml, jobset-<minor>.yaml), HPCC's pods
//! as real containers on the kind worker, measured by the one window
//! (the audit log on the host, etcd's metrics and each component's CPU
//! and memory read through `docker exec`). A trial of the kind suite (in
//! its first minor's lane, after the shared cluster's trials).

use anyhow::{Context, Result, ensure};
use harness::bench::thor::{ThorBenchOptions, bench_thor};
use harness::cluster::kind::KindImages;
use harness::cluster::{KindChoice, Provider};
use harness::workload::thor::Mode;

pub fn bench_thor_on_fresh_kind_clusters(minor: &'static str) -> Result<()> {
    let prefix = crate::unique_name(&format!("t-kbench{}", minor.replace('.', "")));
    let opts = ThorBenchOptions {
        overrides: vec![format!("cluster.k8sMinor=\"{minor}\"")],
        provider: Provider::Kind(KindChoice {
            profile: "baseline".into(),
            config: None,
            images: KindImages::Auto,
            kwok: false,
            root: Some(crate::repo_root()),
        }),
        ..crate::thor_options(
            "smoke.yaml",
            vec![Mode::Baseline, Mode::Jobset],
            prefix.clone(),
        )
    };
    let r = crate::runtime()?.block_on(bench_thor(&opts));
    let left: Vec<String> = harness::cluster::state::list_clusters()?
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    for n in &left {
        let _ = harness::cluster::kind::abandon(n);
    }
    let r = r?;
    ensure!(left.is_empty(), "clusters left after the bench: {left:?}");
    ensure!(r.provider == "kind", "provider {:?}", r.provider);
    ensure!(
        r.k8s_version.starts_with(minor),
        "the nodes ran {}, not {minor}",
        r.k8s_version
    );
    ensure!(
        r.model.get("kubelet").map(String::as_str) == Some("real"),
        "the Result does not say the kubelets were real: {:?}",
        r.model
    );
    // Client names carry no run's cluster or namespace.
    let worker = "system:node:<kind>-worker";
    crate::suite::thor::real::report(&r, worker);
    for mode in ["baseline", "jobset"] {
        let m = &r
            .modes
            .get(mode)
            .with_context(|| format!("no {mode} mode: {:?}", r.modes.keys()))?
            .result;
        crate::suite::thor::real::check_mode(&format!("{mode} (kind)"), m, worker)?;
        ensure!(
            m.thor_agent_user == "system:serviceaccount:<run>:harness-thor-agent",
            "{mode}: the Thor identity is named {:?}",
            m.thor_agent_user
        );
        let w = &m.run.window;
        ensure!(
            w.etcd_writes_total > 0 && w.not_measured.is_empty(),
            "{mode}: etcd writes {}, not measured: {:?}",
            w.etcd_writes_total,
            w.not_measured
        );
        for comp in ["kube-apiserver", "etcd"] {
            let u = w
                .resources
                .get(comp)
                .with_context(|| format!("{mode}: no {comp} figures: {:?}", w.resources.keys()))?;
            ensure!(
                u.cpu_s > 0.0 && u.rss_peak_mib > 1.0,
                "{mode}: {comp} CPU {} s, RSS {} MiB",
                u.cpu_s,
                u.rss_peak_mib
            );
        }
        ensure!(
            w.apiserver_etcd_cpu_s > 0.0,
            "{mode}: apiserver+etcd CPU {}",
            w.apiserver_etcd_cpu_s
        );
    }
    Ok(())
}
